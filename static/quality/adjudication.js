// The adjudication page: each item's form sends the decision to the REST API; a decided
// item leaves the page, a refusal is shown beside the form.
"use strict";

(function () {
  const queue = document.getElementById("queue");
  if (!queue) { return; }
  const status = document.getElementById("adjudication-status");

  queue.addEventListener("submit", async function (event) {
    const form = event.target.closest("form.decide");
    if (!form) { return; }
    event.preventDefault();
    const error = form.querySelector(".error");
    const button = form.querySelector("button[type=submit]");
    const body = { label: form.elements.label.value };
    if (form.elements.comment.value !== "") { body.comment = form.elements.comment.value; }
    button.disabled = true;
    const result = await window.MashovApi.post(form.getAttribute("data-url"), body, { "Idempotency-Key": window.MashovApi.newKey() });
    button.disabled = false;
    if (result.status === 201) {
      const item = form.closest(".queue-item");
      status.textContent = queue.getAttribute("data-decided").replace("%s", item.querySelector("h3 bdi").textContent).replace("%l", result.data.label);
      status.hidden = false;
      item.remove();
      return;
    }
    error.textContent = window.MashovApi.errorText(result);
    error.hidden = false;
  });
})();
