// The reviewer's page (HeQ §3.3): each pending paragraph with its questions and answers; a
// grade (rejected / verified / good / gold) and an optional comment per question, posted to
// POST /api/annotations/{id}/review/ with the question index. Bidi controls inside the
// annotator's text are shown as visible marks (DESIGN.md §6: kept, but made visible to
// reviewers).
"use strict";

(function () {
  const config = JSON.parse(document.getElementById("review-config").textContent);
  const api = window.MashovApi;
  const el = function (id) { return document.getElementById(id); };
  const BIDI = /[\u202a-\u202e\u2066-\u2069]/u;

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

  function questionBlock(entry, index, question) {
    const block = document.createElement("div");
    block.className = "review-question";
    block.dataset.annotation = String(entry.annotation);
    block.dataset.question = String(index);
    const head = document.createElement("p");
    head.appendChild(document.createTextNode((index + 1) + ". "));
    head.appendChild(bdi("q-text", question.question, itemLanguage));
    block.appendChild(head);
    const answer = document.createElement("p");
    answer.appendChild(document.createTextNode(message("msg-answer") + " "));
    if (question.answerable && question.answer) {
      answer.appendChild(bdi("q-answer", question.answer.text, itemLanguage));
      const where = document.createElement("span");
      where.className = "hint";
      where.dir = "ltr";
      where.textContent = " @" + question.answer.start;
      answer.appendChild(where);
    } else {
      answer.appendChild(bdi("q-answer unanswerable", message("msg-unanswerable")));
    }
    block.appendChild(answer);
    const comment = document.createElement("textarea");
    comment.rows = 2;
    comment.dir = "auto";
    comment.className = "review-comment";
    comment.setAttribute("aria-label", message("msg-comment"));
    comment.placeholder = message("msg-comment");
    const previous = entry.graded[String(index)];
    if (previous) { comment.value = previous.comment; block.classList.add("done"); }
    const grades = document.createElement("div");
    grades.className = "grades";
    grades.setAttribute("role", "group");
    const status = document.createElement("span");
    status.className = "hint review-status";
    status.setAttribute("aria-live", "polite");
    config.grades.forEach(function (grade) {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "grade-button grade-" + grade;
      button.dataset.grade = grade;
      button.textContent = message("msg-grade-" + grade);
      button.setAttribute("aria-pressed", previous && previous.grade === grade ? "true" : "false");
      button.addEventListener("click", async function () {
        showError("");
        const url = config.reviewUrl.replace("{id}", String(entry.annotation));
        // Sent exactly as typed: the comment is free text.
        const result = await api.post(url, { grade: grade, comment: comment.value, question: index });
        if (result.status === 201 || result.status === 200) {
          grades.querySelectorAll("button").forEach(function (b) { b.setAttribute("aria-pressed", b === button ? "true" : "false"); });
          block.classList.add("done");
          status.textContent = message("msg-saved");
        } else {
          showError(api.errorText(result));
        }
      });
      grades.appendChild(button);
    });
    grades.appendChild(status);
    block.appendChild(comment);
    block.appendChild(grades);
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
    appendVisible(paragraph, entry.item.payload.context || "");
    section.appendChild(paragraph);
    const questions = (entry.value && entry.value.questions) || [];
    questions.forEach(function (question, index) { section.appendChild(questionBlock(entry, index, question)); });
    return section;
  }

  async function load() {
    const result = await api.get(config.pendingUrl + "?page_size=50");
    if (result.status !== 200) { showError(api.errorText(result)); return; }
    const list = el("reviews");
    list.replaceChildren();
    result.data.results.forEach(function (entry) { list.appendChild(card(entry)); });
    el("pending-count").textContent = result.data.count + " " + message("msg-pending");
    el("empty").hidden = result.data.count !== 0;
  }

  load();
})();
