// The validator's page (HeQ §3.3: several correct spans per dev/test question): the paragraph
// and a question written by someone else or taken from the imported file — never its answers. The validator marks their own
// span (mouse or keyboard, through MashovSpan from annotate_qa.js; start sent in code points)
// or says the paragraph cannot answer it.
"use strict";

(function () {
  const config = JSON.parse(document.getElementById("validate-config").textContent);
  const api = window.MashovApi;
  const el = function (id) { return document.getElementById(id); };
  let current = null;
  let span = null;
  let busy = false;

  function message(id) { return el(id).textContent; }
  function showError(text) { el("error").textContent = text; el("error").hidden = !text; }

  function showSpan(s) {
    span = s;
    el("answer-text").textContent = s ? s.text : "";
    el("answer-position").textContent = s ? "(" + message("msg-start") + " " + s.start + ")" : "";
    el("submit-span").disabled = !s || busy;
  }

  async function loadNext() {
    showError("");
    const result = await api.get(config.nextUrl);
    if (result.status === 204) {
      current = null;
      el("task").hidden = true;
      el("nothing-left").hidden = false;
      return;
    }
    if (result.status !== 200) { showError(api.errorText(result)); return; }
    current = result.data;
    el("task").hidden = false;
    el("nothing-left").hidden = true;
    el("title").textContent = current.item.payload.title || "";
    el("question").textContent = current.question_text;
    el("remaining").textContent = current.remaining + " " + message("msg-remaining");
    const root = document.getElementById("validate-qa");
    root.dataset.annotation = current.annotation === null ? "" : String(current.annotation);
    root.dataset.question = String(current.question);
    root.dataset.questionKey = current.question_key || "";
    window.MashovSpan.attach(el("paragraph"), current.item.payload.context, showSpan);
    showSpan(null);
  }

  async function submit(answerable) {
    if (!current || busy || (answerable && !span)) { return; }
    busy = true;
    // An authored question is named by its annotation and index, a question of the
    // imported file by its paragraph and id (`annotation` is null then).
    const body = current.annotation === null
      ? { item: current.item.id, question_key: current.question_key }
      : { annotation: current.annotation, question: current.question };
    body.answerable = answerable;
    body.answer = answerable ? { start: span.start, text: span.text } : null;
    const key = current.idempotencyKey || (current.idempotencyKey = api.newKey());
    const result = await api.post(config.submitUrl, body, { "Idempotency-Key": key });
    busy = false;
    if (result.status === 201 || result.status === 409) {
      await loadNext();
      return;
    }
    showSpan(span);
    showError(api.errorText(result));
  }

  el("submit-span").addEventListener("click", function () { submit(true); });
  el("submit-unanswerable").addEventListener("click", function () { submit(false); });
  loadNext();
})();
