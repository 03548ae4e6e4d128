// The nli_authoring page (FarsTail §3.1): from a multiple-choice question the author writes
// the entailment hypothesis, pastes a premise from the web, writes a contradiction and a
// neutral hypothesis. Text is sent exactly as typed. Ctrl+Enter submits.
"use strict";

(function () {
  const config = JSON.parse(document.getElementById("annotate-config").textContent);
  const api = window.MashovApi;
  const el = function (id) { return document.getElementById(id); };
  const FIELDS = ["premise", "entailment", "contradiction", "neutral"];
  let current = null;   // {assignment, item, idempotencyKey?}
  let busy = false;

  function message(id) { return el(id).textContent; }

  function showError(text) {
    el("error").textContent = text;
    el("error").hidden = !text;
  }

  // Length in code points, so that a ZWNJ or an emoji counts as one character.
  function length(text) { return Array.from(text).length; }

  // FarsTail §3.1 step 3: the contradiction hypothesis is "similar to h1 in length, but
  // different in structure and words". Warnings only; the server does not enforce them.
  function contradictionWarnings(entailment, contradiction) {
    const e = entailment.trim();
    const c = contradiction.trim();
    const out = [];
    if (!e || !c) { return out; }
    const ratio = length(c) / length(e);
    if (ratio < 0.5 || ratio > 2) { out.push("length"); }
    if (e === c || e.indexOf(c) !== -1 || c.indexOf(e) !== -1) { out.push("copy"); }
    return out;
  }

  function refreshWarnings() {
    const list = el("warnings");
    const found = contradictionWarnings(el("entailment").value, el("contradiction").value);
    list.replaceChildren();
    found.forEach(function (name) {
      const li = document.createElement("li");
      li.className = "warning";
      li.dataset.warning = name;
      li.textContent = message("msg-" + name);
      list.appendChild(li);
    });
    list.hidden = found.length === 0;
  }

  function clearInvalid() {
    FIELDS.forEach(function (name) { el(name).removeAttribute("aria-invalid"); });
  }

  async function refreshProgress() {
    const result = await api.get(config.progressUrl);
    if (result.status !== 200) { return; }
    // `remaining` leaves out the caller's own open claim: the question on screen.
    const total = result.data.done + result.data.remaining + (current ? 1 : 0);
    el("progress").max = Math.max(1, total);
    el("progress").value = result.data.done;
    el("progress-text").textContent = result.data.done + " / " + total;
  }

  function showQuestion(payload) {
    // textContent keeps the stored text exactly and never interprets it as markup.
    el("question").textContent = payload.question;
    const list = el("choices");
    list.replaceChildren();
    payload.choices.forEach(function (choice, index) {
      const li = document.createElement("li");
      li.className = "choice";
      const text = document.createElement("bdi");
      text.className = "choice-text";
      text.textContent = choice;
      li.appendChild(text);
      if (index === payload.answer_index) {
        li.classList.add("correct");
        const badge = document.createElement("span");
        badge.className = "correct-badge";
        badge.textContent = "✓ " + message("msg-correct");
        li.appendChild(document.createTextNode(" "));
        li.appendChild(badge);
      }
      list.appendChild(li);
    });
  }

  async function loadNext() {
    showError("");
    clearInvalid();
    const result = await api.get(config.nextUrl);
    if (result.status === 204) {
      current = null;
      el("task").hidden = true;
      el("done").hidden = false;
    } else if (result.status === 200) {
      const isNew = !current || current.assignment !== result.data.assignment;
      current = result.data;
      showQuestion(current.item.payload);
      if (isNew) {
        FIELDS.forEach(function (name) { el(name).value = ""; });
      }
      refreshWarnings();
      el("task").hidden = false;
      el("done").hidden = true;
      el("task").dataset.assignment = String(current.assignment);
      el("entailment").focus();
    } else {
      showError(api.errorText(result));
    }
    await refreshProgress();
  }

  async function submit() {
    if (!current || busy) { return; }
    clearInvalid();
    const value = {};
    const empty = [];
    FIELDS.forEach(function (name) {
      value[name] = el(name).value;  // exactly as typed: never trimmed
      if (!value[name].trim()) { empty.push(name); }
    });
    if (empty.length) {
      empty.forEach(function (name) { el(name).setAttribute("aria-invalid", "true"); });
      el(empty[0]).focus();
      showError(message("msg-empty"));
      return;
    }
    busy = true;
    el("submit").disabled = true;
    const url = config.submitUrl.replace("{id}", String(current.assignment));
    const key = current.idempotencyKey || (current.idempotencyKey = api.newKey());
    let result;
    try {
      result = await api.post(url, { value: value }, { "Idempotency-Key": key });
    } catch (e) {
      result = { status: 0, data: null };
    }
    busy = false;
    el("submit").disabled = false;
    const errors = (result.data && Array.isArray(result.data.errors)) ? result.data.errors : [];
    const movedOn = result.status === 409 && errors.some(function (e) { return e.field === "assignment"; });
    if (result.status === 201 || movedOn) {
      // 409 on the assignment: already submitted or taken over; either way move on.
      FIELDS.forEach(function (name) { el(name).value = ""; });
      current = null;
      await loadNext();
      return;
    }
    errors.forEach(function (e) {
      const name = (e.field || "").replace(/^value\./, "");
      if (FIELDS.indexOf(name) !== -1) { el(name).setAttribute("aria-invalid", "true"); }
    });
    showError(result.status === 0 ? "Network error" : api.errorText(result));
  }

  el("entailment").addEventListener("input", refreshWarnings);
  el("contradiction").addEventListener("input", refreshWarnings);
  el("authoring-form").addEventListener("submit", function (event) {
    event.preventDefault();
    submit();
  });
  document.addEventListener("keydown", function (event) {
    if ((event.ctrlKey || event.metaKey) && event.key === "Enter") {
      event.preventDefault();
      submit();
    }
  });
  loadNext();
})();
