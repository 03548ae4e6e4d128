// The console's user forms (templates/console/users.html): create a user (POST /api/users/)
// and reset a password (POST /api/users/{username}/password/), showing the API's errors.
"use strict";

(function () {
  const api = window.MashovApi;
  const config = JSON.parse(document.getElementById("console-config").textContent);

  function wire(form, send, doneText) {
    const errorBox = form.querySelector(".form-error");
    const noticeBox = form.querySelector(".form-notice");
    form.addEventListener("submit", async function (event) {
      event.preventDefault();
      errorBox.hidden = true;
      noticeBox.hidden = true;
      form.querySelectorAll("[aria-invalid]").forEach(function (node) { node.removeAttribute("aria-invalid"); });
      form.querySelectorAll(".field-error").forEach(function (node) { node.remove(); });
      let result;
      try { result = await send(form.elements); } catch (e) { result = { status: 0, data: null }; }
      if (result.status === 201 || result.status === 204) {
        noticeBox.textContent = doneText.replace("%(name)s", form.elements.username.value);
        noticeBox.hidden = false;
        form.elements.password.value = "";
        return;
      }
      const errors = result.data && Array.isArray(result.data.errors) ? result.data.errors : [];
      // Each message beside its field; the box above names the fields by their labels.
      const lines = [];
      errors.forEach(function (error) {
        const input = form.elements[error.field];
        if (!input || !input.id) { lines.push(error.message); return; }
        input.setAttribute("aria-invalid", "true");
        const note = document.createElement("p");
        note.className = "field-error";
        note.dir = "auto";
        note.textContent = error.message;
        input.insertAdjacentElement("afterend", note);
        const label = form.querySelector("label[for='" + input.id + "']");
        lines.push(label ? label.textContent.trim() + ": " + error.message : error.message);
      });
      errorBox.textContent = result.status === 0 ? config.networkError : (result.status === 404 ? config.notFound : (lines.length ? Array.from(new Set(lines)).join(" · ") : api.errorText(result)));
      errorBox.hidden = false;
    });
  }

  wire(document.getElementById("user-create"), function (f) {
    const body = { username: f.username.value, password: f.password.value };
    if (f.email.value) { body.email = f.email.value; }
    return api.post(config.createUrl, body);
  }, config.created);
  wire(document.getElementById("password-reset"), function (f) {
    return api.post(config.passwordUrl.replace("{username}", encodeURIComponent(f.username.value)), { password: f.password.value });
  }, config.reset);
})();
