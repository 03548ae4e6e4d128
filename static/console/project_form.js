// The console's project forms (templates/console/project_new.html, project_settings.html):
// collect the fields, POST a new project to /api/projects/ or PATCH an existing one, and
// mark every field the API's 400 names. Settings are sent only when changed from their
// starting value, so omitted ones keep the kind's defaults (or their stored value).
"use strict";

(function () {
  const api = window.MashovApi;
  const form = document.getElementById("project-form");
  if (!form) { return; }
  const creating = form.dataset.mode === "create";
  const configNode = document.getElementById("console-config");
  const config = configNode ? JSON.parse(configNode.textContent) : {};
  const errorBox = document.getElementById("form-error");
  const noticeBox = document.getElementById("form-notice");
  const kindSelect = document.getElementById("kind");

  function activeFieldset() {
    const kind = kindSelect ? kindSelect.value : null;
    return form.querySelector(kind ? '.kind-settings[data-kind="' + kind + '"]' : ".kind-settings");
  }

  function showKind() {
    form.querySelectorAll(".kind-settings").forEach(function (fieldset) {
      const active = fieldset === activeFieldset();
      fieldset.hidden = !active;
      fieldset.disabled = !active;
    });
  }

  function parseSetting(row) {
    const input = row.querySelector(".setting-input");
    const value = input.value;
    switch (row.dataset.type) {
      case "bool": return value === "" ? undefined : value === "true";
      case "int": return /^\s*-?\d+\s*$/.test(value) ? Number(value) : value;
      case "float": return value.trim() !== "" && !isNaN(Number(value)) ? Number(value) : value;
      case "json": return JSON.parse(value);
      default: return value;
    }
  }

  function clearMarks() {
    form.querySelectorAll("[aria-invalid]").forEach(function (node) { node.removeAttribute("aria-invalid"); });
    form.querySelectorAll(".field-error").forEach(function (node) { node.remove(); });
    errorBox.hidden = true;
    if (noticeBox) { noticeBox.hidden = true; }
  }

  function inputFor(field) {
    const parts = String(field || "").split(".");
    if (parts[0] === "settings" && parts[1]) {
      const row = activeFieldset().querySelector('[data-setting="' + parts[1].replace(/\[.*$/, "") + '"]');
      return row ? row.querySelector(".setting-input") : null;
    }
    if (parts[0] === "label_guide" && parts[2]) {
      return document.getElementById("g-" + parts[1] + "-" + parts[2]);
    }
    return document.getElementById(parts[0]);
  }

  function markErrors(errors) {
    const lines = [];
    errors.forEach(function (error) {
      lines.push((error.field ? error.field + ": " : "") + error.message);
      const input = inputFor(error.field);
      if (input) {
        input.setAttribute("aria-invalid", "true");
        const note = document.createElement("p");
        note.className = "field-error";
        note.dir = "auto";
        note.textContent = error.message;
        input.insertAdjacentElement("afterend", note);
      }
    });
    errorBox.textContent = lines.join("; ");
    errorBox.hidden = false;
  }

  function collectSettings() {
    const settings = {};
    const errors = [];
    activeFieldset().querySelectorAll(".setting[data-setting]").forEach(function (row) {
      let value;
      try { value = parseSetting(row); } catch (e) {
        errors.push({ field: "settings." + row.dataset.setting, message: "JSON: " + e.message });
        return;
      }
      if (value === undefined) { return; }
      if (JSON.stringify(value) !== JSON.stringify(JSON.parse(row.dataset.initial))) { settings[row.dataset.setting] = value; }
    });
    return { settings: settings, errors: errors };
  }

  function collectGuide() {
    const guide = {};
    form.querySelectorAll(".guide-overrides").forEach(function (fieldset) {
      fieldset.querySelectorAll(".guide-input").forEach(function (input) {
        if (input.value.trim() === "") { return; }
        (guide[fieldset.dataset.section] = guide[fieldset.dataset.section] || {})[input.dataset.entry] = input.value;
      });
    });
    return guide;
  }

  form.addEventListener("submit", async function (event) {
    event.preventDefault();
    clearMarks();
    const collected = collectSettings();
    if (collected.errors.length) { markErrors(collected.errors); return; }
    const body = { name: form.elements.name.value, guidelines: form.elements.guidelines.value, settings: collected.settings };
    let result;
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    try {
      if (creating) {
        body.slug = form.elements.slug.value;
        body.kind = kindSelect.value;
        body.language = form.elements.language.value;
        result = await api.post(form.dataset.url, body);
      } else {
        body.label_guide = collectGuide();
        result = await api.patch(config.url, body);
      }
    } catch (e) {
      result = { status: 0, data: null };
    }
    button.disabled = false;
    if (creating && result.status === 201) {
      window.location.assign("/p/" + encodeURIComponent(result.data.slug) + "/");
    } else if (!creating && result.status === 200) {
      form.querySelectorAll(".setting[data-setting]").forEach(function (row) {
        const stored = result.data.settings[row.dataset.setting];
        if (stored !== undefined) { row.dataset.initial = JSON.stringify(stored); }
      });
      noticeBox.textContent = config.saved;
      noticeBox.hidden = false;
    } else if (result.data && Array.isArray(result.data.errors)) {
      markErrors(result.data.errors);
    } else {
      markErrors([{ field: "", message: result.status === 0 ? (config.networkError || "Network error") : api.errorText(result) }]);
    }
  });

  if (kindSelect) { kindSelect.addEventListener("change", showKind); }
  showKind();
})();
