// The reviewer's page (HeQ §3.3): each pending paragraph with its questions and answers; a
// grade (rejected / verified / good / gold) and an optional comment per question, posted to
// POST /api/annotations/{id}/review/ with the question index. Bidi controls inside the
// annotator's text are shown as visible marks (docs/text.md "Identifiers and bidi controls": kept, but made visible to
// reviewers).
//
// Twenty paragraphs a page. Keys (physical, so they work on Hebrew and Persian layouts):
// 1-4 grade the active question (rejected, verified, good, gold) and move on, J / K move to
// the next / previous question, C writes its comment. The active question's answer is
// marked in its paragraph: offsets are code points of the stored paragraph, sliced as such
// (Array.from), so the mark is exact with emoji, niqqud and bidi marks around it.
//
// A comment typed after the grade is saved a moment later (and when the box is left or the
// page is hidden) with the same grade; until then it is marked unsaved and kept in this
// browser's localStorage, so a reload brings it back, still marked.
"use strict";

(function () {
  const config = JSON.parse(document.getElementById("review-config").textContent);
  const api = window.MashovApi;
  const el = function (id) { return document.getElementById(id); };
  const BIDI = /[\u202a-\u202e\u2066-\u2069]/u;
  const PAGE_SIZE = 20;
  const SAVE_DELAY_MS = 800;
  let pageNumber = 1;
  let active = null;  // the active .review-question block

  function message(id) { return el(id).textContent; }
  function showError(text) { el("error").textContent = text; el("error").hidden = !text; }

  // Text into `parent`, each bidi embedding/override/isolate control replaced by a visible
  // mark such as ⟨U+202E⟩ (the control itself is left out of the display only).
  function appendVisible(parent, text) {
    let buffer = "";
    Array.from(text).forEach(function (ch) {
      if (BIDI.test(ch)) {
        if (buffer) { parent.appendChild(document.createTextNode(buffer)); buffer = ""; }
        const mark = document.createElement("span");
        mark.className = "bidi-control";
        mark.textContent = "U+" + ch.codePointAt(0).toString(16).toUpperCase().padStart(4, "0");
        parent.appendChild(mark);
      } else {
        buffer += ch;
      }
    });
    if (buffer) { parent.appendChild(document.createTextNode(buffer)); }
  }

  const itemLanguage = el("reviews").dataset.lang || "";

  // Isolated text; `lang` for the item's own texts (question, answer, title: the project's language).
  function bdi(className, text, lang) {
    const node = document.createElement("bdi");
    node.className = className;
    if (lang) { node.lang = lang; }
    appendVisible(node, text);
    return node;
  }

  // The paragraph with `answer` ({start, text}, start in code points) marked, or plain.
  function renderParagraph(paragraph, context, answer) {
    paragraph.replaceChildren();
    const points = Array.from(context);
    const length = answer ? Array.from(answer.text).length : 0;
    if (!answer || answer.start < 0 || answer.start + length > points.length) {
      appendVisible(paragraph, context);
      return;
    }
    appendVisible(paragraph, points.slice(0, answer.start).join(""));
    const mark = document.createElement("mark");
    mark.className = "answer-span";
    appendVisible(mark, points.slice(answer.start, answer.start + length).join(""));
    paragraph.appendChild(mark);
    appendVisible(paragraph, points.slice(answer.start + length).join(""));
  }

  function draftKey(annotation, index) { return "mashov-review:" + annotation + ":" + index; }
  function readDraft(key) { try { return window.localStorage.getItem(key); } catch (e) { return null; } }
  function writeDraft(key, text) {
    try {
      if (text === null) { window.localStorage.removeItem(key); } else { window.localStorage.setItem(key, text); }
    } catch (e) { /* storage full or disabled: the mark still shows the text is unsaved */ }
  }

  function setActive(block) {
    if (!block || block === active) { return; }
    if (active) { active.classList.remove("active"); }
    active = block;
    block.classList.add("active");
    block.highlight();
  }

  function questionBlock(entry, index, question, paragraph) {
    const block = document.createElement("div");
    block.className = "review-question";
    block.dataset.annotation = String(entry.annotation);
    block.dataset.question = String(index);
    const head = document.createElement("p");
    head.appendChild(document.createTextNode((index + 1) + ". "));
    head.appendChild(bdi("q-text", question.question, itemLanguage));
    block.appendChild(head);
    const answerLine = document.createElement("p");
    answerLine.appendChild(document.createTextNode(message("msg-answer") + " "));
    const answer = question.answerable && question.answer ? question.answer : null;
    if (answer) {
      answerLine.appendChild(bdi("q-answer", answer.text, itemLanguage));
      const where = document.createElement("span");
      where.className = "hint";
      // Where the answer starts, in words and the interface's digits (not "@15").
      where.textContent = " (" + message("msg-at").replace("%(n)s", (answer.start + 1).toLocaleString(document.documentElement.lang)) + ")";
      answerLine.appendChild(where);
    } else {
      answerLine.appendChild(bdi("q-answer unanswerable", message("msg-unanswerable")));
    }
    block.appendChild(answerLine);
    block.highlight = function () { renderParagraph(paragraph, entry.item.payload.context || "", answer); };

    const comment = document.createElement("textarea");
    comment.rows = 2;
    comment.dir = "auto";
    comment.className = "review-comment";
    comment.setAttribute("aria-label", message("msg-comment"));
    comment.placeholder = message("msg-comment");
    const previous = entry.graded[String(index)];
    const savedComment = previous ? previous.comment : "";
    let grade = previous ? previous.grade : null;
    let saved = savedComment;   // the comment the server holds with `grade`
    let timer = null;
    comment.value = savedComment;
    if (previous) { block.classList.add("done"); block.dataset.grade = grade; }

    const grades = document.createElement("div");
    grades.className = "grades";
    grades.setAttribute("role", "group");
    const status = document.createElement("span");
    status.className = "hint review-status";
    status.setAttribute("aria-live", "polite");
    const unsavedMark = document.createElement("span");
    unsavedMark.className = "unsaved-mark";
    unsavedMark.hidden = true;

    function markUnsaved() {
      const dirty = comment.value !== saved || grade === null && comment.value !== "";
      comment.classList.toggle("unsaved", dirty);
      unsavedMark.hidden = !dirty;
      unsavedMark.textContent = grade === null ? message("msg-unsaved-grade") : message("msg-unsaved");
      block.dataset.unsaved = dirty ? "true" : "false";
      writeDraft(draftKey(entry.annotation, index), dirty ? comment.value : null);
      return dirty;
    }

    // Grade (and the comment as it is now); `keepalive` when the page is going away.
    async function send(newGrade, keepalive) {
      clearTimeout(timer);
      showError("");
      const text = comment.value;  // sent exactly as typed: the comment is free text
      const url = config.reviewUrl.replace("{id}", String(entry.annotation));
      let result;
      try {
        result = await api.post(url, { grade: newGrade, comment: text, question: index }, undefined, { keepalive: keepalive });
      } catch (e) {
        result = { status: 0, data: null };
      }
      if (result.status === 201 || result.status === 200) {
        grade = newGrade;
        saved = text;
        block.dataset.grade = grade;
        grades.querySelectorAll("button").forEach(function (b) { b.setAttribute("aria-pressed", b.dataset.grade === grade ? "true" : "false"); });
        block.classList.add("done");
        status.textContent = message("msg-saved");
        markUnsaved();
        return true;
      }
      showError(result.status === 0 ? message("msg-network") : api.errorText(result));
      markUnsaved();
      return false;
    }
    block.grade = function (newGrade) { return send(newGrade, false); };
    block.flush = function (keepalive) {
      if (grade !== null && comment.value !== saved) { send(grade, keepalive); }
    };
    block.comment = comment;

    config.grades.forEach(function (value) {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "grade-button grade-" + value;
      button.dataset.grade = value;
      button.textContent = message("msg-grade-" + value);
      button.setAttribute("aria-pressed", grade === value ? "true" : "false");
      button.addEventListener("click", function () { setActive(block); send(value, false); });
      grades.appendChild(button);
    });
    grades.appendChild(status);
    grades.appendChild(unsavedMark);

    comment.addEventListener("input", function () {
      status.textContent = "";
      if (markUnsaved() && grade !== null) {
        clearTimeout(timer);
        timer = setTimeout(function () { block.flush(false); }, SAVE_DELAY_MS);
      }
    });
    comment.addEventListener("blur", function () { block.flush(false); });
    block.addEventListener("focusin", function () { setActive(block); });
    block.addEventListener("mouseenter", function () { setActive(block); });

    // A comment typed earlier in this browser and not saved comes back, still marked.
    const kept = readDraft(draftKey(entry.annotation, index));
    if (kept !== null && kept !== savedComment) { comment.value = kept; }
    block.appendChild(comment);
    block.appendChild(grades);
    markUnsaved();
    return block;
  }

  function card(entry) {
    const section = document.createElement("article");
    section.className = "card review-card";
    section.dataset.annotation = String(entry.annotation);
    const title = document.createElement("h2");
    title.appendChild(bdi("title", entry.item.payload.title || entry.item.external_id, itemLanguage));
    const by = document.createElement("small");
    by.appendChild(document.createTextNode(" · " + message("msg-by") + " "));
    by.appendChild(bdi("annotator", entry.annotator));
    title.appendChild(by);
    section.appendChild(title);
    const paragraph = document.createElement("p");
    paragraph.className = "text";
    paragraph.dir = document.documentElement.dir;
    section.appendChild(paragraph);
    const questions = (entry.value && entry.value.questions) || [];
    const blocks = questions.map(function (question, index) { return questionBlock(entry, index, question, paragraph); });
    blocks.forEach(function (block) { section.appendChild(block); });
    // Until a question is chosen, the paragraph shows the first answer.
    const first = blocks.find(function (block, i) { return questions[i].answerable && questions[i].answer; });
    if (first) { first.highlight(); } else { renderParagraph(paragraph, entry.item.payload.context || "", null); }
    return section;
  }

  function blocks() { return Array.from(document.querySelectorAll(".review-question")); }

  function move(step) {
    const all = blocks();
    if (!all.length) { return; }
    const at = all.indexOf(active);
    const target = all[Math.max(0, Math.min(all.length - 1, at === -1 ? 0 : at + step))];
    setActive(target);
    target.scrollIntoView({ block: "nearest" });
  }

  async function load(number) {
    blocks().forEach(function (block) { block.flush(false); });
    const result = await api.get(config.pendingUrl + "?page_size=" + PAGE_SIZE + "&page=" + number);
    if (result.status === 404 && number > 1) { return load(number - 1); }  // the last page emptied
    if (result.status !== 200) { showError(api.errorText(result)); return; }
    pageNumber = number;
    active = null;
    const list = el("reviews");
    list.replaceChildren();
    result.data.results.forEach(function (entry) { list.appendChild(card(entry)); });
    const pages = Math.max(1, Math.ceil(result.data.count / PAGE_SIZE));
    el("pending-count").textContent = result.data.count + " " + message("msg-pending");
    el("empty").hidden = result.data.count !== 0;
    el("pager").hidden = pages < 2;
    el("page-text").textContent = pageNumber + " / " + pages;
    el("page-previous").disabled = !result.data.previous;
    el("page-next").disabled = !result.data.next;
    const firstOpen = blocks().find(function (block) { return !block.classList.contains("done"); }) || blocks()[0];
    if (firstOpen) { setActive(firstOpen); }
  }

  el("page-previous").addEventListener("click", function () { load(pageNumber - 1); window.scrollTo(0, 0); });
  el("page-next").addEventListener("click", function () { load(pageNumber + 1); window.scrollTo(0, 0); });

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) { return; }
    const target = event.target;
    if (target && (target.tagName === "TEXTAREA" || target.tagName === "INPUT" || target.tagName === "SELECT")) { return; }
    const match = /^(?:Digit|Numpad)([1-9])$/.exec(event.code || "");
    if (match && active && Number(match[1]) <= config.grades.length) {
      event.preventDefault();
      const block = active;
      block.grade(config.grades[Number(match[1]) - 1]).then(function (ok) {
        if (!ok || active !== block) { return; }
        const next = blocks().slice(blocks().indexOf(block) + 1).find(function (b) { return !b.classList.contains("done"); });
        if (next) { setActive(next); next.scrollIntoView({ block: "nearest" }); }
      });
    } else if (event.code === "KeyJ" || event.code === "KeyK") {
      event.preventDefault();
      move(event.code === "KeyJ" ? 1 : -1);
    } else if (event.code === "KeyC" && active) {
      event.preventDefault();
      active.comment.focus();
    }
  });

  // Leaving the page: what was typed after a grade goes with it.
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "hidden") { blocks().forEach(function (block) { block.flush(true); }); }
  });

  load(1);
})();
