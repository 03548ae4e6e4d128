// The nli_authoring page (FarsTail §3.1): from a multiple-choice question the author writes
// the entailment hypothesis, pastes a premise from the web, writes a contradiction and a
// neutral hypothesis. Text is sent exactly as typed. Ctrl+Enter submits.
"use strict";

(function () {
  const el = function (id) { return document.getElementById(id); };
  const FIELDS = ["premise", "entailment", "contradiction", "neutral"];
  // Optional web addresses (FarsTail §3.1 steps 2 and 4): sent only when filled in.
  const SOURCES = ["premise_source", "neutral_source"];
  // "Similar length": LENGTH_RATIO of annotation/kinds/nli_authoring/kind.py, which gives
  // the same warnings in the submit response.
  const LENGTH_RATIO = 2;

  function message(id) { return el(id).textContent; }

  // Length in code points, so that a ZWNJ or an emoji counts as one character.
  function length(text) { return Array.from(text).length; }

  function lengthsDiffer(text, other) {
    if (!text || !other) { return false; }
    const ratio = length(text) / length(other);
    return ratio < 1 / LENGTH_RATIO || ratio > LENGTH_RATIO;
  }

  // The matching folding of annotation/metrics/text.py: NFC, Persian/Arabic-Indic digits
  // as ASCII and, where the project's fold_letter_variants is on (by default in Persian
  // projects), Arabic yeh/kaf as Persian. Only for comparing; the text is sent as typed.
  let foldLetters = document.documentElement.lang === "fa";
  function fold(text) {
    const folded = text.normalize("NFC").replace(/[\u06f0-\u06f9]/g, function (d) { return String(d.charCodeAt(0) - 0x06f0); })
      .replace(/[\u0660-\u0669]/g, function (d) { return String(d.charCodeAt(0) - 0x0660); });
    return foldLetters ? folded.replace(/[\u064a\u0649]/g, "\u06cc").replace(/\u0643/g, "\u06a9") : folded;
  }

  // FarsTail §3.1 step 3: the contradiction hypothesis is "similar to h1 in length, but
  // different in structure and words"; step 4: the neutral one of "a similar length to h1
  // and h2". Warnings only; the server stores the texts all the same.
  function contradictionWarnings(entailment, contradiction) {
    const e = entailment.trim();
    const c = contradiction.trim();
    const out = [];
    if (!e || !c) { return out; }
    if (lengthsDiffer(c, e)) { out.push("length"); }
    const fe = fold(e);
    const fc = fold(c);
    if (fe.indexOf(fc) !== -1 || fc.indexOf(fe) !== -1) { out.push("copy"); }
    return out;
  }

  function neutralWarnings(entailment, contradiction, neutral) {
    const n = neutral.trim();
    return (lengthsDiffer(n, entailment.trim()) || lengthsDiffer(n, contradiction.trim())) ? ["length"] : [];
  }

  function showWarnings(listId, found, prefix) {
    const list = el(listId);
    list.replaceChildren();
    found.forEach(function (name) {
      const li = document.createElement("li");
      li.className = "warning";
      li.dataset.warning = name;
      li.textContent = message(prefix + name);
      list.appendChild(li);
    });
    list.hidden = found.length === 0;
  }

  function refreshWarnings() {
    const e = el("entailment").value, c = el("contradiction").value;
    showWarnings("warnings", contradictionWarnings(e, c), "msg-");
    showWarnings("neutral-warnings", neutralWarnings(e, c, el("neutral").value), "msg-neutral-");
  }

  function clearInvalid() {
    FIELDS.concat(SOURCES).forEach(function (name) { el(name).removeAttribute("aria-invalid"); });
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

  const page = window.MashovAnnotatePage.create({
    show: function (data) {
      clearInvalid();
      showQuestion(data.item.payload);
      FIELDS.concat(SOURCES).forEach(function (name) { el(name).value = ""; });
      refreshWarnings();
      el("entailment").focus();
      drafts.take(data);
    },
    onBusy: function (busy) { el("submit").disabled = busy; },
    nav: { skip: true },
  });

  // The texts as typed, kept as the claim's draft (MashovAnnotatePage.keepDrafts): a reload,
  // a change of interface language or a lost tab gives them back.
  function typed() {
    const value = {};
    FIELDS.concat(SOURCES).forEach(function (name) { if (el(name).value) { value[name] = el(name).value; } });
    return Object.keys(value).length ? value : null;
  }
  const drafts = window.MashovAnnotatePage.keepDrafts(page, typed, function (value) {
    FIELDS.concat(SOURCES).forEach(function (name) { if (typeof value[name] === "string") { el(name).value = value[name]; } });
    refreshWarnings();
    el("authoring-form").dataset.draftRestored = "true";
  });
  FIELDS.concat(SOURCES).forEach(function (name) { el(name).addEventListener("input", drafts.changed); });

  async function submit() {
    if (!page.current() || page.busy()) { return; }
    clearInvalid();
    const value = {};
    const empty = [];
    FIELDS.forEach(function (name) {
      value[name] = el(name).value;  // exactly as typed: never trimmed
      if (!value[name].trim()) { empty.push(name); }
    });
    SOURCES.forEach(function (name) {
      if (el(name).value) { value[name] = el(name).value; }
    });
    if (empty.length) {
      empty.forEach(function (name) { el(name).setAttribute("aria-invalid", "true"); });
      el(empty[0]).focus();
      page.showError(message("msg-empty"));
      return;
    }
    const result = await page.submit(value);
    // The error is shown; mark the texts it names.
    const errors = (result && result.data && Array.isArray(result.data.errors)) ? result.data.errors : [];
    errors.forEach(function (e) {
      const name = (e.field || "").replace(/^value\./, "");
      if (FIELDS.indexOf(name) !== -1 || SOURCES.indexOf(name) !== -1) { el(name).setAttribute("aria-invalid", "true"); }
    });
  }

  el("entailment").addEventListener("input", refreshWarnings);
  el("contradiction").addEventListener("input", refreshWarnings);
  el("neutral").addEventListener("input", refreshWarnings);
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
  (async function start() {
    const project = await window.MashovApi.get("/api/projects/" + encodeURIComponent(page.config.slug) + "/");
    if (project.status === 200 && project.data.settings && typeof project.data.settings.fold_letter_variants === "boolean") {
      foldLetters = project.data.settings.fold_letter_variants;
    }
    await page.loadNext();
  })();
})();
