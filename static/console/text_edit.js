// The item page's text edit (templates/console/item.html): POST /api/items/{id}/text/ with
// the fields that changed and the reason, then reload to show the revision; the API's
// errors are shown in place, on the field they name.
"use strict";

(function () {
  const api = window.MashovApi;
  const form = document.getElementById("item-text-edit");
  if (!form) { return; }
  const config = JSON.parse(document.getElementById("text-edit-config").textContent);
  const errorBox = form.querySelector(".form-error");
  const fields = Array.from(form.querySelectorAll("textarea[data-field]"));
  fields.forEach(function (box) { box.dataset.original = box.value; });
  const guard = api.guardForm(form);
  form.addEventListener("submit", async function (event) {
    event.preventDefault();
    errorBox.hidden = true;
    form.querySelectorAll("[aria-invalid]").forEach(function (el) { el.removeAttribute("aria-invalid"); });
    const changes = {};
    fields.forEach(function (box) { if (box.value !== box.dataset.original) { changes[box.dataset.field] = box.value; } });
    if (Object.keys(changes).length === 0) {
      errorBox.textContent = config.unchanged;
      errorBox.hidden = false;
      return;
    }
    let result;
    try { result = await api.post(config.url, { changes: changes, reason: form.elements.reason.value }); } catch (e) { result = { status: 0, data: null }; }
    if (result.status === 201) {
      guard.saved();
      window.location.reload();
      return;
    }
    if (result.status === 400 && result.data && result.data.errors && result.data.errors[0]) {
      const named = String(result.data.errors[0].field || "").replace(/^changes\./, "");
      const target = named === "reason" ? form.elements.reason : form.querySelector('textarea[data-field="' + named + '"]');
      if (target) { target.setAttribute("aria-invalid", "true"); }
    }
    errorBox.textContent = result.status === 0 ? config.networkError : api.errorText(result);
    errorBox.hidden = false;
  });
})();
