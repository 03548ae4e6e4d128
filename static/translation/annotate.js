// The translation_rating page: the English source beside each candidate, candidates in the
// item's shuffled order without system names. Every candidate gets accuracy, fluency and
// cultural fit (1-5) and "label still holds" (yes/no); submit stays disabled until all are set.
// Keys (layout-independent, by event.code): 1-5 rate the active criterion and move on,
// Y / N answer label validity, ArrowUp / ArrowDown move, Enter submits.
"use strict";

(function () {
  const el = function (id) { return document.getElementById(id); };
  const SCORES = ["accuracy", "fluency", "cultural_fit"];
  const CRITERIA = SCORES.concat(["label_valid"]);
  const names = {};
  document.querySelectorAll("#names li").forEach(function (li) { names[li.dataset.name] = li.textContent; });
  let ratings = [];     // per display index: {criterion: value}
  let cursor = 0;       // index into the flat list of (candidate, criterion) cells

  function cellCount() { return ratings.length * CRITERIA.length; }

  function missing() {
    let n = 0;
    ratings.forEach(function (r) { CRITERIA.forEach(function (c) { if (r[c] === undefined) { n += 1; } }); });
    return n;
  }

  function render() {
    const left = missing();
    el("submit").disabled = left > 0 || page.busy();
    el("missing").textContent = left > 0 ? names.missing.replace("%(n)s", String(left)) : "";
    document.querySelectorAll(".criterion").forEach(function (row) {
      const d = Number(row.dataset.candidate), c = row.dataset.criterion;
      row.classList.toggle("active", d * CRITERIA.length + CRITERIA.indexOf(c) === cursor);
      row.querySelectorAll("input").forEach(function (input) {
        const value = c === "label_valid" ? input.value === "yes" : Number(input.value);
        input.checked = ratings[d][c] === value;
      });
    });
  }

  // The keyboard moved the highlight: keep that criterion on screen.
  function showActive() {
    const row = document.querySelector(".criterion.active");
    if (row) { row.scrollIntoView({ block: "nearest" }); }
  }

  function setValue(d, c, value) {
    ratings[d][c] = value;
    cursor = Math.min(cellCount() - 1, d * CRITERIA.length + CRITERIA.indexOf(c) + 1);
    render();
  }

  function criterionRow(d, c) {
    const row = document.createElement("fieldset");
    row.className = "criterion";
    row.dataset.candidate = String(d);
    row.dataset.criterion = c;
    const legend = document.createElement("legend");
    legend.textContent = names[c];
    row.appendChild(legend);
    const options = c === "label_valid" ? [["yes", names.yes + " (Y)"], ["no", names.no + " (N)"]] : [1, 2, 3, 4, 5].map(function (v) { return [String(v), String(v)]; });
    options.forEach(function (option) {
      const label = document.createElement("label");
      label.className = "score";
      const input = document.createElement("input");
      input.type = "radio";
      input.name = "c" + d + "-" + c;
      input.value = option[0];
      input.addEventListener("change", function () {
        setValue(d, c, c === "label_valid" ? option[0] === "yes" : Number(option[0]));
      });
      label.appendChild(input);
      label.appendChild(document.createTextNode(" " + option[1]));
      row.appendChild(label);
    });
    row.addEventListener("click", function (event) {
      // A click on a radio is its change's to handle: rendering here first would undo it.
      if (event.target.tagName === "INPUT") { return; }
      cursor = d * CRITERIA.length + CRITERIA.indexOf(c);
      render();
    });
    return row;
  }

  function show(data) {
    const payload = data.item.payload;
    // textContent keeps the stored text exactly and never interprets it as markup.
    el("source-premise").textContent = payload.source.premise;
    el("source-hypothesis").textContent = payload.source.hypothesis;
    el("source-label").textContent = names[payload.source.label] || payload.source.label;
    const box = el("candidates");
    box.replaceChildren();
    // An earlier answer ("previous"): its ratings, keyed by display place as sent.
    const earlier = data.previous && data.previous.value ? data.previous.value.ratings || {} : {};
    ratings = payload.candidates.map(function (_candidate, d) { return Object.assign({}, earlier[String(d)] || {}); });
    cursor = 0;
    payload.candidates.forEach(function (candidate, d) {
      const card = el("candidate-template").content.firstElementChild.cloneNode(true);
      card.id = "candidate-" + d;
      card.querySelector(".candidate-title").textContent = names.candidate.replace("%(n)s", String(d + 1));
      card.querySelector(".candidate-premise").textContent = candidate.premise;
      card.querySelector(".candidate-hypothesis").textContent = candidate.hypothesis;
      const criteria = card.querySelector(".criteria");
      CRITERIA.forEach(function (c) { criteria.appendChild(criterionRow(d, c)); });
      box.appendChild(card);
    });
    render();
  }

  const page = window.MashovAnnotatePage.create({ show: show, onBusy: render, nav: { skip: true, previous: true, keys: true } });

  function submit() {
    if (missing() > 0) { return; }
    const value = { ratings: {} };
    ratings.forEach(function (r, d) { value.ratings[String(d)] = r; });
    // Flashed as it goes: each candidate's three scores and the label verdict.
    const shown = ratings.map(function (r, d) {
      return (d + 1) + ": " + SCORES.map(function (c) { return r[c]; }).join(" ") + " " + (r.label_valid ? "✓" : "✗");
    }).join(" · ");
    page.submit(value, shown);
  }

  el("submit").addEventListener("click", submit);
  document.addEventListener("keydown", function (event) {
    if (!page.current() || event.ctrlKey || event.metaKey || event.altKey) { return; }
    const code = event.code || "";
    const d = Math.floor(cursor / CRITERIA.length), c = CRITERIA[cursor % CRITERIA.length];
    const digit = window.MashovAnnotatePage.digit(event);
    if (digit >= 1 && digit <= 5 && c !== "label_valid") {
      event.preventDefault();
      setValue(d, c, digit);
      showActive();
    } else if ((code === "KeyY" || code === "KeyN") && c === "label_valid") {
      event.preventDefault();
      setValue(d, c, code === "KeyY");
      showActive();
    } else if (code === "ArrowDown" || code === "ArrowUp") {
      event.preventDefault();
      cursor = Math.max(0, Math.min(cellCount() - 1, cursor + (code === "ArrowDown" ? 1 : -1)));
      render();
      showActive();
    } else if (code === "Enter" || code === "NumpadEnter") {
      event.preventDefault();
      submit();
    }
  });
  page.loadNext();
})();
