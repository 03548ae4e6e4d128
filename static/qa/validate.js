// The validator's page (HeQ §3.3: several correct spans per dev/test question): the paragraph
// and a question written by someone else or taken from the imported file — never its answers. The validator marks their own
// span (mouse or keyboard, through MashovSpan from annotate.js; start sent in code points)
// or says the paragraph cannot answer it.
"use strict";

(function () {
  const el = function (id) { return document.getElementById(id); };
  let span = null;

  function message(id) { return el(id).textContent; }

  function showSpan(s) {
    span = s;
    el("answer-text").textContent = s ? s.text : "";
    el("answer-position").textContent = s ? "(" + message("msg-start") + " " + s.start + ")" : "";
    el("submit-span").disabled = !s || page.busy();
  }

  const page = window.MashovAnnotatePage.create({
    show: function (data) {
      el("title").textContent = data.item.payload.title || "";
      el("question").textContent = data.question_text;
      el("remaining").textContent = data.remaining + " " + message("msg-remaining");
      const root = el("validate-qa");
      root.dataset.annotation = data.annotation === null ? "" : String(data.annotation);
      root.dataset.question = String(data.question);
      root.dataset.questionKey = data.question_key || "";
      window.MashovSpan.attach(el("paragraph"), data.item.payload.context, showSpan);
      showSpan(null);
    },
    onBusy: function () { showSpan(span); },
    configId: "validate-config",
    doneId: "nothing-left",
    assignmentOn: null,
    // 409: this validator answered the question already.
    skipOnConflict: ["question", "question_key"],
  });

  function submit(answerable) {
    const current = page.current();
    if (!current || (answerable && !span)) { return; }
    // An authored question is named by its annotation and index, a question of the
    // imported file by its paragraph and id (`annotation` is null then).
    const body = current.annotation === null
      ? { item: current.item.id, question_key: current.question_key }
      : { annotation: current.annotation, question: current.question };
    body.answerable = answerable;
    body.answer = answerable ? { start: span.start, text: span.text } : null;
    page.send(body);
  }

  el("submit-span").addEventListener("click", function () { submit(true); });
  el("submit-unanswerable").addEventListener("click", function () { submit(false); });
  page.loadNext();
})();
