// The adjudication page: each item's form sends the decision to the REST API; a decided
// item leaves the page, a refusal is shown beside the form, and the counts (items waiting,
// items adjudicated, the agreement table) are taken again from the page as the server now
// renders it, without a reload.
"use strict";

(function () {
  const queue = document.getElementById("queue");
  if (!queue) { return; }
  const status = document.getElementById("adjudication-status");

  async function refreshCounts() {
    let html;
    try {
      const response = await fetch(window.location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } });
      if (!response.ok) { return; }
      html = await response.text();
    } catch (e) {
      return;
    }
    const fresh = new DOMParser().parseFromString(html, "text/html");
    ["h-queue", "h-agreement"].forEach(function (id) {
      const now = document.getElementById(id), then = fresh.getElementById(id);
      if (!now || !then) { return; }
      // The heading of the queue; the whole card of the agreement table.
      const target = id === "h-queue" ? now : now.closest("section");
      const source = id === "h-queue" ? then : then.closest("section");
      target.replaceWith(document.importNode(source, true));
    });
  }

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
      refreshCounts();
      return;
    }
    error.textContent = window.MashovApi.errorText(result);
    error.hidden = false;
  });
})();
