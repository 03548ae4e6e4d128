// The summary_rating annotator page: an article (scrolls on its own) and its summaries,
// shuffled and without system names; coherence and completeness 1-5 for each summary and
// the project's error tags. Keys (physical keys, so Hebrew and Persian layouts work too):
// 1-5 rate the highlighted criterion, J/K move, Shift+1-9 toggle a tag, Enter submits.
"use strict";

(function () {
  const el = function (id) { return document.getElementById(id); };
  const CRITERIA = ["coherence", "completeness"];
  // Persian (U+06F0) and Arabic-Indic (U+0660) digits, for keyboards that send them as keys.
  const DIGITS = { "۱": 1, "۲": 2, "۳": 3, "۴": 4, "۵": 5, "۶": 6, "۷": 7, "۸": 8, "۹": 9,
                   "١": 1, "٢": 2, "٣": 3, "٤": 4, "٥": 5, "٦": 6, "٧": 7, "٨": 8, "٩": 9 };
  let ratings = [];     // per display index: {coherence, completeness, errors: Set}
  let tags = [];        // [{id, name, hint}]
  let active = 0;       // index into fields()

  function fields() {
    const out = [];
    for (let d = 0; d < ratings.length; d++) {
      CRITERIA.forEach(function (c) { out.push({ d: d, c: c }); });
    }
    return out;
  }

  function fieldset(d, c) {
    return document.querySelector('.summary-card[data-index="' + d + '"] .rating[data-criterion="' + c + '"]');
  }

  function complete() {
    return ratings.length > 0 && ratings.every(function (r) { return r.coherence && r.completeness; });
  }

  function render() {
    const all = fields();
    document.querySelectorAll(".rating.active, .summary-card.active").forEach(function (node) { node.classList.remove("active"); });
    const f = all[active];
    if (f) {
      const box = fieldset(f.d, f.c);
      box.classList.add("active");
      box.closest(".summary-card").classList.add("active");
    }
    const left = all.filter(function (x) { return !ratings[x.d][x.c]; }).length;
    el("submit").disabled = !complete() || page.busy();
    el("remaining").textContent = left ? el("remaining").dataset.template.replace("{n}", String(left)) : "";
  }

  function moveTo(index, scroll) {
    const all = fields();
    if (!all.length) { return; }
    active = (index + all.length) % all.length;
    render();
    if (scroll) {
      const f = all[active];
      // The highlighted criterion itself: a long summary's card can be taller than the screen.
      fieldset(f.d, f.c).scrollIntoView({ block: "nearest" });
    }
  }

  function rate(d, c, score, advance) {
    ratings[d][c] = score;
    const input = fieldset(d, c).querySelector('input[value="' + score + '"]');
    input.checked = true;
    if (advance) {
      // The next field still unrated after this one, else stay.
      const all = fields();
      for (let step = 1; step <= all.length; step++) {
        const i = (active + step) % all.length;
        if (!ratings[all[i].d][all[i].c]) { moveTo(i, true); return; }
      }
    }
    render();
  }

  function toggleTag(d, n) {
    const tag = tags[n];
    if (!tag) { return; }
    const box = document.querySelector('.summary-card[data-index="' + d + '"] input[data-tag-index="' + n + '"]');
    box.checked = !box.checked;
    if (box.checked) { ratings[d].errors.add(tag.id); } else { ratings[d].errors.delete(tag.id); }
  }

  function buildCard(d, summary) {
    const card = el("summary-template").content.firstElementChild.cloneNode(true);
    card.dataset.index = String(d);
    card.querySelector(".summary-number").textContent = String(d + 1);
    // textContent keeps the stored text exactly and never interprets it as markup.
    card.querySelector(".summary-text").textContent = summary.text;
    CRITERIA.forEach(function (c) {
      const box = card.querySelector('.rating[data-criterion="' + c + '"]');
      const scores = box.querySelector(".scores");
      for (let score = 1; score <= 5; score++) {
        const label = document.createElement("label");
        label.className = "score";
        const input = document.createElement("input");
        input.type = "radio";
        input.name = "s" + d + "-" + c;
        input.value = String(score);
        input.addEventListener("change", function () {
          const all = fields();
          active = all.findIndex(function (x) { return x.d === d && x.c === c; });
          rate(d, c, score, false);
        });
        label.appendChild(input);
        label.appendChild(document.createTextNode(" " + score));
        scores.appendChild(label);
      }
      box.addEventListener("click", function () {
        const all = fields();
        active = all.findIndex(function (x) { return x.d === d && x.c === c; });
        render();
      });
    });
    const list = card.querySelector(".tag-list");
    tags.forEach(function (tag, n) {
      const label = document.createElement("label");
      label.className = "tag";
      if (tag.hint) { label.title = tag.hint; }
      const input = document.createElement("input");
      input.type = "checkbox";
      input.value = tag.id;
      input.dataset.tagIndex = String(n);
      input.addEventListener("change", function () {
        if (input.checked) { ratings[d].errors.add(tag.id); } else { ratings[d].errors.delete(tag.id); }
      });
      label.appendChild(input);
      const name = document.createElement("span");
      name.textContent = " " + tag.name;
      label.appendChild(name);
      if (n < 9) {
        const key = document.createElement("kbd");
        key.dir = "ltr";
        key.textContent = "⇧" + (n + 1);
        label.appendChild(document.createTextNode(" "));
        label.appendChild(key);
      }
      list.appendChild(label);
    });
    if (!tags.length) { card.querySelector(".error-tags").hidden = true; }
    return card;
  }

  function show(data) {
    const payload = data.item.payload;
    tags = payload.error_tags || [];
    ratings = payload.summaries.map(function () { return { coherence: 0, completeness: 0, errors: new Set() }; });
    el("article").textContent = payload.article;
    el("article").scrollTop = 0;
    const list = el("summaries");
    list.replaceChildren();
    payload.summaries.forEach(function (summary, d) { list.appendChild(buildCard(d, summary)); });
    // An earlier answer ("previous"): its scores and tags, keyed by display place as sent.
    const earlier = data.previous && data.previous.value ? data.previous.value.ratings || {} : {};
    Object.keys(earlier).forEach(function (key) {
      const d = Number(key), r = earlier[key];
      if (!ratings[d] || !r) { return; }
      ratings[d] = { coherence: r.coherence || 0, completeness: r.completeness || 0, errors: new Set(r.errors || []) };
      ["coherence", "completeness"].forEach(function (c) {
        list.querySelectorAll('input[name="s' + d + "-" + c + '"]').forEach(function (input) {
          input.checked = Number(input.value) === ratings[d][c];
        });
      });
      list.children[d].querySelectorAll(".tag-list input").forEach(function (input) { input.checked = ratings[d].errors.has(input.value); });
    });
    active = 0;
    render();
  }

  function value() {
    const out = {};
    ratings.forEach(function (r, d) {
      // Tags in the project's order, whatever order they were ticked in.
      const errors = tags.map(function (t) { return t.id; }).filter(function (id) { return r.errors.has(id); });
      out[String(d)] = { coherence: r.coherence, completeness: r.completeness, errors: errors };
    });
    return { ratings: out };
  }

  const page = window.MashovAnnotatePage.create({ show: show, onBusy: render, nav: { skip: true, previous: true, keys: true } });

  function submit() {
    if (!complete()) { return; }
    // Flashed as it goes: each summary's two scores and how many error tags.
    const shown = ratings.map(function (r, d) {
      return (d + 1) + ": " + r.coherence + " " + r.completeness + (r.errors.size ? " ⚑" + r.errors.size : "");
    }).join(" · ");
    page.submit(value(), shown);
  }

  function digitOf(event) {
    const physical = window.MashovAnnotatePage.digit(event);
    if (physical !== null) { return physical; }
    if (/^[0-9]$/.test(event.key)) { return Number(event.key); }
    return DIGITS[event.key] || 0;
  }

  el("submit").addEventListener("click", submit);
  document.addEventListener("keydown", function (event) {
    if (!page.current() || event.ctrlKey || event.metaKey || event.altKey) { return; }
    const all = fields();
    const f = all[active];
    const digit = digitOf(event);
    if (event.shiftKey && digit >= 1 && digit <= 9) {
      event.preventDefault();
      if (f) { toggleTag(f.d, digit - 1); }
    } else if (!event.shiftKey && digit >= 1 && digit <= 5) {
      event.preventDefault();
      if (f) { rate(f.d, f.c, digit, true); }
    } else if (event.code === "KeyJ") {
      event.preventDefault();
      moveTo(active + 1, true);
    } else if (event.code === "KeyK") {
      event.preventDefault();
      moveTo(active - 1, true);
    } else if (event.key === "Enter") {
      event.preventDefault();
      submit();
    }
  });
  page.loadNext();
})();
