// The item page's reopen form (templates/console/item.html): POST /api/items/{id}/reopen/
// with the reason, then reload to show the new round; the API's errors are shown in place.
"use strict";

(function () {
  const api = window.MashovApi;
  const form = document.getElementById("item-reopen");
  if (!form) { return; }
  const config = JSON.parse(document.getElementById("reopen-config").textContent);
  const errorBox = form.querySelector(".form-error");
  form.addEventListener("submit", async function (event) {
    event.preventDefault();
    errorBox.hidden = true;
    form.elements.reason.removeAttribute("aria-invalid");
    let result;
    try { result = await api.post(config.reopenUrl, { reason: form.elements.reason.value }); } catch (e) { result = { status: 0, data: null }; }
    if (result.status === 201) {
      window.location.reload();
      return;
    }
    if (result.status === 400) { form.elements.reason.setAttribute("aria-invalid", "true"); }
    errorBox.textContent = result.status === 0 ? config.networkError : api.errorText(result);
    errorBox.hidden = false;
  });
})();
