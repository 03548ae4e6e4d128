// The qa_authoring page (HeQ §3.3, appendix A): the annotator reads a paragraph, writes 3-5
// questions, marks each answer in the paragraph (mouse or keyboard) or marks it unanswerable,
// edits and deletes, then "Done, next paragraph" submits them all.
//
// Offsets: the browser counts UTF-16 code units (an emoji is two), the server stores code
// points of the stored paragraph (docs/text.md "Offsets"). `MashovSpan` keeps UTF-16 offsets inside
// the page and converts once, when a span is sent. The span text is the exact slice of the
// paragraph: never trimmed of anything but surrounding whitespace and sentence punctuation at
// its end, never normalised, and its edges fall between whole characters (grapheme
// clusters): keys move by character, a mouse selection inside one grows to take all of it.
//
// `MashovSpan` is shared with the validation page (validate.js loads this file first).
"use strict";

window.MashovSpan = (function () {
  // A span's edges fall between user-perceived characters (extended grapheme clusters, as
  // the server checks them): a niqqud point stays with its letter, an emoji sequence or a
  // flag stays whole. The browser's own segmenter finds them.
  const segmenter = typeof Intl === "object" && typeof Intl.Segmenter === "function"
    ? new Intl.Segmenter(undefined, { granularity: "grapheme" }) : null;
  // Sorted UTF-16 offsets where a character starts or ends, 0 and text.length included.
  function boundaries(text) {
    const list = [0];
    if (segmenter) {
      for (const part of segmenter.segment(text)) { list.push(part.index + part.segment.length); }
    } else {
      let units = 0;
      for (const point of text) { units += point.length; list.push(units); }
    }
    return list;
  }
  // Code points before UTF-16 offset `units` (which must not split a surrogate pair).
  function codePoints(text, units) { return Array.from(text.slice(0, units)).length; }
  // An offset inside a character moves out of it, to the character's end or start.
  function snap(edges, units, towardsEnd) {
    if (edges.indexOf(units) !== -1) { return units; }
    return towardsEnd ? next(edges, units) : previous(edges, units);
  }
  function next(edges, units) {
    for (const edge of edges) { if (edge > units) { return edge; } }
    return edges[edges.length - 1];
  }
  function previous(edges, units) {
    for (let i = edges.length - 1; i >= 0; i -= 1) { if (edges[i] < units) { return edges[i]; } }
    return 0;
  }
  function isSpace(ch) { return /^\s+$/u.test(ch); }
  // Nothing the reader could see: whitespace and format characters (ZWNJ, LRM/RLM).
  function isBlank(text) { return /^[\s\p{Cf}]*$/u.test(text); }
  function nextWord(text, edges, units) {
    let u = units;
    while (u < text.length && isSpace(text.slice(u, next(edges, u)))) { u = next(edges, u); }
    while (u < text.length && !isSpace(text.slice(u, next(edges, u)))) { u = next(edges, u); }
    return u;
  }
  function previousWord(text, edges, units) {
    let u = units;
    while (u > 0 && isSpace(text.slice(previous(edges, u), u))) { u = previous(edges, u); }
    while (u > 0 && !isSpace(text.slice(previous(edges, u), u))) { u = previous(edges, u); }
    return u;
  }

  // Attach span selection to `element`, which shows `text` as its only child text node.
  // `onChange(span)` receives {start, text, u16Start, u16End} (start in code points) or null.
  function attach(element, text, onChange) {
    // A new paragraph in the same element: drop the listeners of the previous one.
    if (typeof element.mashovDetach === "function") { element.mashovDetach(); }
    element.textContent = text;
    const node = element.firstChild;
    const state = { anchor: null, focus: null, span: null, text: text };
    const edges = boundaries(text);
    const rtl = getComputedStyle(element).direction === "rtl";

    function offsetOf(container, offset) {
      if (container === node) { return offset; }
      if (container === element) { return offset === 0 ? 0 : text.length; }
      return null;
    }

    function compute() {
      // A caret (nothing selected) is no span, even when it sits inside a character.
      if (state.anchor === null || state.focus === null || state.anchor === state.focus) { return null; }
      // A mouse selection that ends inside a character (between a letter and its points)
      // grows to take the whole character: what is highlighted is what is sent.
      let s = snap(edges, Math.min(state.anchor, state.focus), false);
      let e = snap(edges, Math.max(state.anchor, state.focus), true);
      // A double-click or a drag often takes the space after a word: leave surrounding
      // whitespace out (the span stays an exact slice of the paragraph).
      while (s < e && isSpace(text.slice(s, next(edges, s)))) { s = next(edges, s); }
      while (e > s && isSpace(text.slice(previous(edges, e), e))) { e = previous(edges, e); }
      // Nor is a full stop or a comma after the answer part of it (morphology.js), however
      // the selection was made (mouse, keys, a stored span shown again).
      if (window.MashovMorphology && s < e) { e = window.MashovMorphology.trimEnd(text, s, e); }
      if (s >= e || isBlank(text.slice(s, e))) { return null; }
      return { start: codePoints(text, s), text: text.slice(s, e), u16Start: s, u16End: e, variants: variants(s, e) };
    }

    // The same span with and without its Hebrew prefix letters (morphology.js), longest first.
    function variants(s, e) {
      if (!window.MashovMorphology) { return []; }
      return window.MashovMorphology.spanVariants(text, s, e).map(function (v) {
        return { start: codePoints(text, v[0]), text: text.slice(v[0], v[1]), u16Start: v[0], u16End: v[1] };
      });
    }

    // One keypress (P) or a click moves to the next variant; what is selected is what is stored.
    function nextVariant() {
      const span = state.span;
      if (!span || span.variants.length < 2) { return; }
      const i = span.variants.findIndex(function (v) { return v.u16Start === span.u16Start && v.u16End === span.u16End; });
      const v = span.variants[(i + 1) % span.variants.length];
      select(v.u16Start, v.u16End);
    }

    // The character (grapheme, UTF-16 [start, end)) drawn at screen point (x, y), or null.
    // The browser's caret position for a point is the nearest boundary, and where a
    // left-to-right number sits in right-to-left text the boundary at the number's visual edge
    // is ambiguous (it may be the number's logical end): a press on the first digit of "1.2"
    // could start the selection after the number. The character whose box holds the point
    // is what the hand pointed at.
    function charAt(x, y) {
      let caret = null;
      if (document.caretRangeFromPoint) {
        const r = document.caretRangeFromPoint(x, y);
        if (r && r.startContainer === node) { caret = r.startOffset; }
      } else if (document.caretPositionFromPoint) {
        const p = document.caretPositionFromPoint(x, y);
        if (p && p.offsetNode === node) { caret = p.offset; }
      }
      if (caret === null || !node) { return null; }
      const range = document.createRange();
      function holds(u) {
        range.setStart(node, u);
        range.setEnd(node, next(edges, u));
        for (const r of range.getClientRects()) {
          if (x >= r.left - 0.5 && x <= r.right + 0.5 && y >= r.top - 0.5 && y <= r.bottom + 0.5) { return true; }
        }
        return false;
      }
      // Near the caret first (the usual case), then every character.
      const near = edges.filter(function (u) { return u < text.length && Math.abs(u - caret) <= 16; });
      const all = near.concat(edges.filter(function (u) { return u < text.length && Math.abs(u - caret) > 16; }));
      for (const u of all) { if (holds(u)) { return [u, next(edges, u)]; } }
      return null;
    }

    // A mouse selection runs from the character pressed to the character released, both
    // included; its edges then move to word edges (morphology.js), and the browser's
    // selection with them: the highlighted span is the one sent.
    let pressed = null;  // {at: the character pressed or null}, while a drag that began here lasts
    function onMouseUp(event) {
      if (!pressed) { return; }
      const from = pressed.at;
      pressed = null;
      if (!window.MashovMorphology) { return; }
      const to = charAt(event.clientX, event.clientY);
      const selected = state.anchor !== null && state.anchor !== state.focus;
      let s, e, forward;
      if (from && to && from[0] !== to[0]) {
        // From one character to another: the selection the browser made may be empty or
        // elsewhere (the bidi boundary above), the characters are not.
        s = Math.min(from[0], to[0]);
        e = Math.max(from[1], to[1]);
        forward = from[0] < to[0];
      } else if (selected) {
        // Released on the pressed character or outside the text: the browser's selection,
        // with the pressed character in it.
        s = Math.min(state.anchor, state.focus);
        e = Math.max(state.anchor, state.focus);
        if (from) { s = Math.min(s, from[0]); e = Math.max(e, from[1]); }
        forward = state.anchor < state.focus;
      } else {
        return;  // a click: a caret, no answer
      }
      const snapped = window.MashovMorphology.snapSelection(text, s, e);
      if (selected && snapped[0] === Math.min(state.anchor, state.focus) && snapped[1] === Math.max(state.anchor, state.focus)) { return; }
      if (forward) { select(snapped[0], snapped[1]); } else { select(snapped[1], snapped[0]); }
    }
    document.addEventListener("mouseup", onMouseUp);

    // A press inside the selected answer starts a new selection, as anywhere else: left to
    // the browser, it would start dragging the selected text, and the old answer would stay.
    function onMouseDown(event) {
      if (event.button !== 0) { return; }
      pressed = { at: event.shiftKey ? null : charAt(event.clientX, event.clientY) };
      if (event.shiftKey) { return; }
      const selection = document.getSelection();
      if (selection && !selection.isCollapsed && selection.anchorNode === node) { selection.removeAllRanges(); }
    }
    element.addEventListener("mousedown", onMouseDown);

    function highlight(span) {
      if (!window.CSS || !CSS.highlights || typeof window.Highlight !== "function") { return; }
      if (!span || !node) { CSS.highlights.delete("qa-answer"); return; }
      const range = document.createRange();
      range.setStart(node, span.u16Start);
      range.setEnd(node, span.u16End);
      CSS.highlights.set("qa-answer", new window.Highlight(range));
    }

    function update() {
      const span = compute();
      const same = (span === null && state.span === null) ||
        (span && state.span && span.u16Start === state.span.u16Start && span.u16End === state.span.u16End);
      state.span = span;
      if (!same) { highlight(span); onChange(span); }
    }

    function onSelectionChange() {
      const selection = document.getSelection();
      if (!selection || selection.rangeCount === 0 || !node) { return; }
      const anchor = offsetOf(selection.anchorNode, selection.anchorOffset);
      const focus = offsetOf(selection.focusNode, selection.focusOffset);
      // A selection elsewhere (the question box) leaves the chosen span as it was.
      if (anchor === null || focus === null) { return; }
      if (anchor === focus && state.span && document.activeElement !== element) { return; }
      state.anchor = anchor;
      state.focus = focus;
      update();
    }
    document.addEventListener("selectionchange", onSelectionChange);

    function select(anchor, focus) {
      state.anchor = anchor;
      state.focus = focus;
      const selection = document.getSelection();
      if (selection && node) { selection.setBaseAndExtent(node, anchor, node, focus); }
      update();
    }

    function onKeyDown(event) {
      const key = event.key;
      if (key === "Escape") { event.preventDefault(); clear(); return; }
      if (event.code === "KeyP" && !event.ctrlKey && !event.metaKey && !event.altKey && !event.shiftKey) {
        event.preventDefault();
        nextVariant();
        return;
      }
      const arrows = key === "ArrowLeft" || key === "ArrowRight";
      const ends = key === "Home" || key === "End";
      if (!arrows && !ends) { return; }
      event.preventDefault();
      const caret = state.focus === null ? 0 : state.focus;
      let target;
      if (ends) {
        target = key === "Home" ? 0 : text.length;
      } else {
        // In a right-to-left paragraph the left arrow moves on in reading order.
        const forward = (key === "ArrowLeft") === rtl;
        const byWord = event.ctrlKey || event.altKey || event.metaKey;
        // One press moves over one whole character (a pointed letter, an emoji sequence).
        if (forward) { target = byWord ? nextWord(text, edges, caret) : next(edges, caret); }
        else { target = byWord ? previousWord(text, edges, caret) : previous(edges, caret); }
      }
      if (event.shiftKey) { select(state.anchor === null ? caret : state.anchor, target); }
      else { select(target, target); }
    }
    element.addEventListener("keydown", onKeyDown);

    function onFocus() {
      if (state.focus === null) { state.anchor = 0; state.focus = 0; }
    }
    element.addEventListener("focus", onFocus);

    element.mashovDetach = function () {
      document.removeEventListener("selectionchange", onSelectionChange);
      element.removeEventListener("keydown", onKeyDown);
      element.removeEventListener("focus", onFocus);
      document.removeEventListener("mouseup", onMouseUp);
      element.removeEventListener("mousedown", onMouseDown);
      element.mashovDetach = null;
    };

    function clear() {
      state.anchor = null;
      state.focus = null;
      const selection = document.getSelection();
      if (selection && selection.anchorNode === node) { selection.removeAllRanges(); }
      update();
    }

    // Show a stored span (code points) again, e.g. when a question is edited.
    function show(answer) {
      if (!answer) { clear(); return; }
      const points = Array.from(text);
      const u16Start = points.slice(0, answer.start).join("").length;
      const u16End = u16Start + answer.text.length;
      state.anchor = u16Start;
      state.focus = u16End;
      update();
    }

    return { clear: clear, show: show, nextVariant: nextVariant, span: function () { return state.span; } };
  }

  return { attach: attach, codePoints: codePoints };
})();

// Word overlap of a question with the paragraph, as annotation/metrics/overlap.py computes
// it: NFC, Persian/Arabic-Indic digits to ASCII, with foldLetters Arabic yeh/kaf as Persian,
// lower case, whitespace tokens with Unicode punctuation removed; the share of question
// tokens found in the paragraph.
window.MashovOverlap = (function () {
  function fold(text, foldLetters) {
    const folded = text.normalize("NFC").replace(/[\u06f0-\u06f9]/g, function (d) { return String(d.charCodeAt(0) - 0x06f0); })
      .replace(/[\u0660-\u0669]/g, function (d) { return String(d.charCodeAt(0) - 0x0660); }).toLowerCase();
    return foldLetters ? folded.replace(/[\u064a\u0649]/g, "\u06cc").replace(/\u0643/g, "\u06a9") : folded;
  }
  function words(text, foldLetters) {
    return fold(text, foldLetters).split(/\s+/u).map(function (t) { return t.replace(/\p{P}/gu, ""); }).filter(Boolean);
  }
  function overlap(question, paragraph, foldLetters) {
    const tokens = words(question, foldLetters);
    if (!tokens.length) { return { share: 0, shared: [] }; }
    const vocabulary = new Set(words(paragraph, foldLetters));
    const shared = tokens.filter(function (t) { return vocabulary.has(t); });
    return { share: shared.length / tokens.length, shared: shared };
  }
  return { words: words, overlap: overlap };
})();

(function () {
  const root = document.getElementById("qa-authoring");
  if (!root) { return; }  // the validation page loads this file for MashovSpan only
  const api = window.MashovApi;
  const el = function (id) { return document.getElementById(id); };
  let settings = { min_questions: 3, max_questions: 5, overlap_warning: 0.5 };
  let selector = null;     // MashovSpan handle for the current paragraph
  let span = null;         // the span currently marked
  let questions = [];      // [{question, answerable, answer}]
  let editing = null;      // index being edited
  let quiet = false;       // the page itself is filling the form: not a change to save

  function message(id) { return el(id).textContent; }

  // The offer of the span with or without its prefix letters: the variant P would select.
  function showVariant(s) {
    const offer = el("prefix-offer");
    if (!offer) { return; }
    const many = s && s.variants && s.variants.length > 1;
    offer.hidden = !many;
    if (!many) { return; }
    const i = s.variants.findIndex(function (v) { return v.u16Start === s.u16Start && v.u16End === s.u16End; });
    el("prefix-variant").textContent = s.variants[(i + 1) % s.variants.length].text;
  }

  function showSpan(s) {
    span = s;
    el("answer-text").textContent = s ? s.text : "";
    el("answer-position").textContent = s ? "(" + message("msg-start") + " " + s.start + ")" : "";
    el("clear-answer").hidden = !s;
    showVariant(s);
    if (s) { el("answerable-yes").checked = true; }
    formChanged();
  }

  function refreshOverlap() {
    if (!page.current()) { return; }
    const result = window.MashovOverlap.overlap(el("question-input").value, page.current().item.payload.context,
      settings.fold_letter_variants);
    el("overlap-value").textContent = Math.round(result.share * 100) + "%";
    el("overlap-words").textContent = result.shared.length ? "(" + result.shared.join(" ") + ")" : "";
    el("overlap-warning").hidden = !(result.share > settings.overlap_warning);
    root.dataset.overlap = String(result.share);
  }

  function renderQuestions() {
    const list = el("questions");
    list.replaceChildren();
    questions.forEach(function (q, index) {
      const li = document.createElement("li");
      li.className = "qa-question" + (editing === index ? " editing" : "");
      li.dataset.index = String(index);
      const text = document.createElement("bdi");
      text.className = "q-text";
      text.textContent = q.question;
      li.appendChild(text);
      li.appendChild(document.createTextNode(" — "));
      const answer = document.createElement("bdi");
      answer.className = q.answerable ? "q-answer" : "q-answer unanswerable";
      answer.textContent = q.answerable ? q.answer.text : message("msg-unanswerable");
      li.appendChild(answer);
      const edit = document.createElement("button");
      edit.type = "button";
      edit.className = "link q-edit";
      edit.textContent = message("msg-edit");
      edit.addEventListener("click", function () { startEdit(index); });
      const remove = document.createElement("button");
      remove.type = "button";
      remove.className = "link q-delete";
      remove.textContent = message("msg-delete");
      remove.addEventListener("click", function () { removeQuestion(index); });
      li.appendChild(document.createTextNode(" "));
      li.appendChild(edit);
      li.appendChild(document.createTextNode(" "));
      li.appendChild(remove);
      list.appendChild(li);
    });
    el("count-text").textContent = questions.length + " / " + settings.min_questions + "–" + settings.max_questions;
    el("done-paragraph").disabled = page.busy() || questions.length < settings.min_questions || questions.length > settings.max_questions;
    el("add-question").textContent = editing === null ? message("msg-add") : message("msg-save");
    el("cancel-edit").hidden = editing === null;
  }

  function resetForm() {
    quiet = true;
    editing = null;
    el("question-input").value = "";
    el("question-input").removeAttribute("aria-invalid");
    el("answerable-yes").checked = true;
    if (selector) { selector.clear(); }
    showSpan(null);
    refreshOverlap();
    renderQuestions();
    quiet = false;
  }

  function startEdit(index) {
    const q = questions[index];
    quiet = true;
    editing = index;
    el("question-input").value = q.question;
    el(q.answerable ? "answerable-yes" : "answerable-no").checked = true;
    selector.show(q.answer);
    if (!q.answerable) { showSpan(null); el("answerable-no").checked = true; }
    refreshOverlap();
    renderQuestions();
    quiet = false;
    el("question-input").focus();
  }

  function removeQuestion(index) {
    questions.splice(index, 1);
    draftChanged();
    if (editing === index) { resetForm(); return; }
    if (editing !== null && editing > index) { editing -= 1; }
    renderQuestions();
  }

  // Drafts (MashovAnnotatePage.keepDrafts): the questions added to the claimed paragraph, and
  // the question being written (its text, answer and "answerable" as they stand, not yet
  // added), are kept on the server while the claim is open and come back on a reload, after
  // a change of interface language or on another device.

  // The question form as it stands, or null when nothing is in it.
  function pendingQuestion() {
    const text = el("question-input").value;
    if (!text && !span) { return null; }
    const answerable = el("answerable-yes").checked;
    return { question: text, answerable: answerable, answer: answerable && span ? { start: span.start, text: span.text } : null, editing: editing };
  }

  function draftValue() {
    const pending = pendingQuestion();
    return questions.length || pending ? { questions: questions, pending: pending } : null;
  }

  function formChanged() {
    if (!quiet) { draftChanged(); }
  }

  function draftChanged() { drafts.changed(); }

  // A stored question is taken back only if it still fits the paragraph: its answer the
  // exact slice at its code-point start (what the server will check at submit).
  function validQuestion(q, context) {
    if (!q || typeof q.question !== "string" || typeof q.answerable !== "boolean") { return false; }
    if (!q.answerable) { return q.answer === null; }
    const a = q.answer;
    if (!a || !Number.isInteger(a.start) || typeof a.text !== "string" || !a.text) { return false; }
    return Array.from(context).slice(a.start, a.start + Array.from(a.text).length).join("") === a.text;
  }

  function restoreDraft(value, claim) {
    const stored = Array.isArray(value.questions) ? value.questions : [];
    questions = stored.filter(function (q) { return validQuestion(q, claim.item.payload.context); })
      .slice(0, settings.max_questions)
      .map(function (q) { return { question: q.question, answerable: q.answerable, answer: q.answerable ? { start: q.answer.start, text: q.answer.text } : null }; });
    root.dataset.draftRestored = String(questions.length);
    renderQuestions();
    restorePending(value.pending, claim.item.payload.context);
  }

  // The question that was being written goes back into the form, its answer marked again.
  function restorePending(pending, context) {
    if (!pending || typeof pending.question !== "string") { return; }
    const answer = pending.answer && validQuestion({ question: "", answerable: true, answer: pending.answer }, context) ? pending.answer : null;
    quiet = true;
    if (Number.isInteger(pending.editing) && pending.editing >= 0 && pending.editing < questions.length) { editing = pending.editing; }
    el("question-input").value = pending.question;
    el(pending.answerable === false ? "answerable-no" : "answerable-yes").checked = true;
    if (answer) { selector.show(answer); }
    refreshOverlap();
    renderQuestions();
    quiet = false;
    root.dataset.pendingRestored = "true";
  }

  function addQuestion() {
    page.showError("");
    const text = el("question-input").value;  // exactly as typed
    const answerable = el("answerable-yes").checked;
    if (!text.trim()) {
      el("question-input").setAttribute("aria-invalid", "true");
      el("question-input").focus();
      page.showError(message("msg-empty-question"));
      return;
    }
    if (answerable && !span) { page.showError(message("msg-need-answer")); el("paragraph").focus(); return; }
    if (editing === null && questions.length >= settings.max_questions) { page.showError(message("msg-too-many")); return; }
    const entry = { question: text, answerable: answerable, answer: answerable ? { start: span.start, text: span.text } : null };
    if (editing === null) { questions.push(entry); } else { questions[editing] = entry; }
    draftChanged();
    resetForm();
    el("question-input").focus();
  }

  async function refreshUnread() {
    const result = await api.get("/api/me/feedback/?page_size=1");
    if (result.status !== 200) { return; }
    const badge = el("unread-badge");
    badge.textContent = result.data.unread + " " + message("msg-unread");
    badge.hidden = result.data.unread === 0;
  }

  const page = window.MashovAnnotatePage.create({
    show: function (data) {
      questions = [];
      el("title").textContent = data.item.payload.title || "";
      selector = window.MashovSpan.attach(el("paragraph"), data.item.payload.context, showSpan);
      el("paragraph").closest(".paragraph-card").scrollTop = 0;
      updateScrollCue();
      resetForm();
      drafts.take(data);
    },
    onBusy: renderQuestions,
    doneId: "nothing-left",
    assignmentOn: "qa-authoring",
    // A button only: S and Backspace are for writing here.
    nav: { skip: true },
  });
  const drafts = window.MashovAnnotatePage.keepDrafts(page, draftValue, restoreDraft);

  // The paragraph's box holds at most 45 % of the screen: while its end is out of view, a cue
  // at the box's foot says that there is more to read.
  function updateScrollCue() {
    const card = el("paragraph").closest(".paragraph-card");
    const cue = el("paragraph-more");
    if (!card || !cue) { return; }
    cue.hidden = card.scrollHeight - card.clientHeight - card.scrollTop <= 2;
  }
  el("paragraph").closest(".paragraph-card").addEventListener("scroll", updateScrollCue, { passive: true });
  window.addEventListener("resize", updateScrollCue);

  el("question-form").addEventListener("submit", function (event) { event.preventDefault(); addQuestion(); });
  el("question-input").addEventListener("input", function () { refreshOverlap(); formChanged(); });
  el("question-input").addEventListener("keydown", function (event) {
    if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); addQuestion(); }
  });
  el("answerable-no").addEventListener("change", function () { if (selector) { selector.clear(); } showSpan(null); formChanged(); });
  el("answerable-yes").addEventListener("change", formChanged);
  el("clear-answer").addEventListener("click", function () { if (selector) { selector.clear(); } });
  el("prefix-toggle").addEventListener("click", function () { if (selector) { selector.nextVariant(); } });
  el("cancel-edit").addEventListener("click", resetForm);
  // The submit ends the claim and its draft: no save follows it while it is on its way.
  el("done-paragraph").addEventListener("click", function () { page.submit({ questions: questions }); });

  (async function start() {
    const project = await api.get("/api/projects/" + encodeURIComponent(page.config.slug) + "/");
    if (project.status === 200 && project.data.settings) {
      ["min_questions", "max_questions", "overlap_warning"].forEach(function (name) {
        if (typeof project.data.settings[name] === "number") { settings[name] = project.data.settings[name]; }
      });
      // Settings stored before fold_letter_variants existed: the default by language.
      const fold = project.data.settings.fold_letter_variants;
      settings.fold_letter_variants = typeof fold === "boolean" ? fold : project.data.language === "fa";
    }
    refreshUnread();
    await page.loadNext();
  })();
})();
