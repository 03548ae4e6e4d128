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

  function number(text, integer) {
    const trimmed = text.trim();
    if (trimmed === "") { return null; }
    if (integer ? /^-?\d+$/.test(trimmed) : !isNaN(Number(trimmed))) { return Number(trimmed); }
    return trimmed;  // the server names the field and says what it must be
  }

  function parseSetting(row) {
    const input = row.querySelector(".setting-input");
    switch (row.dataset.type) {
      case "bool": return input.value === "" ? undefined : input.value === "true";
      case "int": return number(input.value, true);
      case "float": return number(input.value, false);
      case "optional": return number(input.value, row.dataset.number === "int");
      case "list": return Array.from(input.querySelectorAll("input[type=checkbox]:checked")).map(function (box) { return box.value; });
      case "table": {
        const rules = {};
        input.querySelectorAll("tr[data-row]").forEach(function (tr) {
          const cells = {};
          tr.querySelectorAll("input[data-column]").forEach(function (cell) { cells[cell.dataset.column] = number(cell.value, true); });
          rules[tr.dataset.row] = cells;
        });
        return rules;
      }
      case "json": return JSON.parse(input.value);
      default: return input.value;
    }
  }

  // A new project's defaults that depend on its language follow the language chosen.
  function showLanguageDefaults() {
    const select = form.elements.language;
    if (!select) { return; }
    form.querySelectorAll("[data-default-by-language]").forEach(function (node) {
      const texts = JSON.parse(node.dataset.defaultByLanguage);
      if (texts[select.value] !== undefined) { node.textContent = texts[select.value]; }
    });
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

  // The name a person reads for the field an error names: its label on the form.
  function labelOf(input) {
    if (!input) { return ""; }
    const row = input.closest(".setting");
    const label = row ? row.querySelector("label[for='" + input.id + "'], .setting-label") : null;
    return label ? label.textContent.trim() : "";
  }

  // Each error goes beside its field; the box above the button lists them once, by label,
  // so that a person sees which field to correct without reading the API's field codes.
  function markErrors(errors) {
    const lines = [];
    errors.forEach(function (error) {
      const input = inputFor(error.field);
      if (input) {
        input.setAttribute("aria-invalid", "true");
        const note = document.createElement("p");
        note.className = "field-error";
        note.dir = "auto";
        note.textContent = error.message;
        input.insertAdjacentElement("afterend", note);
        const label = labelOf(input);
        lines.push(label ? label + ": " + error.message : error.message);
      } else {
        lines.push(error.message);
      }
    });
    errorBox.textContent = Array.from(new Set(lines)).join(" · ");
    errorBox.hidden = false;
  }

  function collectSettings() {
    const settings = {};
    const errors = [];
    activeFieldset().querySelectorAll(".setting[data-setting]").forEach(function (row) {
      let value;
      try { value = parseSetting(row); } catch (e) {
        errors.push({ field: "settings." + row.dataset.setting, message: config.badJson || e.message });
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
      guard.saved();
      window.location.assign("/p/" + encodeURIComponent(result.data.slug) + "/");
    } else if (!creating && result.status === 200) {
      form.querySelectorAll(".setting[data-setting]").forEach(function (row) {
        const stored = result.data.settings[row.dataset.setting];
        if (stored !== undefined) { row.dataset.initial = JSON.stringify(stored); }
      });
      guard.saved();
      noticeBox.textContent = config.saved;
      noticeBox.hidden = false;
    } else if (result.data && Array.isArray(result.data.errors)) {
      markErrors(result.data.errors);
    } else {
      markErrors([{ field: "", message: result.status === 0 ? (config.networkError || "Network error") : api.errorText(result) }]);
    }
  });

  if (kindSelect) { kindSelect.addEventListener("change", showKind); }
  if (form.elements.language) { form.elements.language.addEventListener("change", showLanguageDefaults); }
  showKind();
  showLanguageDefaults();
  const guard = api.guardForm(form);
})();
