// The bias page (templates/release/bias.html): reads GET /api/projects/{slug}/bias/ and draws
// Table 2, the PMI bars (inline SVG) and the biased models' confusion matrices (heat-map
// tables); the form starts a new analysis and polls its job. No third-party code, no inline
// style: geometry goes in SVG attributes, colours in static/release/bias.css.
"use strict";

(function () {
  const root = document.getElementById("bias");
  if (!root) { return; }
  const strings = JSON.parse(document.getElementById("bias-strings").textContent);
  const textDir = root.dataset.textDir;
  const textLang = root.dataset.textLang;
  const svgNs = "http://www.w3.org/2000/svg";
  const BAR_WIDTH = 200;
  const BAR_HEIGHT = 18;

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) { node.className = className; }
    if (text !== undefined) { node.textContent = text; }
    return node;
  }

  // Dataset text (words, labels) in the project's language and direction.
  function bdi(text) {
    const node = el("bdi", "", text);
    node.setAttribute("dir", textDir);
    node.setAttribute("lang", textLang);
    return node;
  }

  // A label by its name in the interface language (the codes are the data's).
  function labelNode(label) {
    const names = strings.labelNames || {};
    return names[label] !== undefined ? el("span", "label-name", names[label]) : bdi(label);
  }

  function fixed(value, digits) {
    return value === null || value === undefined ? "—" : Number(value).toFixed(digits);
  }

  function percent(value) {
    return value === null || value === undefined ? strings.undefined : (100 * value).toFixed(1) + "%";
  }

  function show(id, visible) { document.getElementById(id).hidden = !visible; }

  function drawClasses(classes) {
    const body = document.querySelector("#bias-classes tbody");
    body.replaceChildren();
    Object.keys(classes).forEach(function (label) {
      const row = classes[label];
      const tr = el("tr");
      const th = el("th");
      th.scope = "row";
      th.appendChild(labelNode(label));
      tr.appendChild(th);
      [String(row.items), fixed(row.premise_tokens, 2), fixed(row.hypothesis_tokens, 2),
        fixed(row.premise_processed_tokens, 2), fixed(row.hypothesis_processed_tokens, 2),
        fixed(row.overlap, 2), fixed(row.processed_overlap, 2)]
        .forEach(function (text) { tr.appendChild(el("td", "num", text)); });
      body.appendChild(tr);
    });
  }

  // One bar per (word, class), its length the PMI relative to the largest; bars grow from
  // the inline start (the right in RTL), so x is mirrored there.
  function drawPmi(rows) {
    const chart = document.querySelector("#bias-pmi .pmi-chart");
    chart.replaceChildren();
    const rtl = document.documentElement.dir === "rtl";
    const peak = Math.max.apply(null, rows.map(function (r) { return Math.abs(r.pmi); }).concat([1e-9]));
    const labels = Array.from(new Set(rows.map(function (r) { return r.label; }))).sort();
    // The NLI labels keep one colour each (bias.css); any other label takes a spare one.
    const named = ["entailment", "neutral", "contradiction"];
    function colourClass(label) {
      return named.indexOf(label) >= 0 ? "label-" + label : "class-" + labels.indexOf(label) % 6;
    }
    rows.forEach(function (row) {
      const line = el("div", "pmi-row");
      line.setAttribute("role", "listitem");
      const word = el("span", "pmi-word");
      word.appendChild(bdi(row.word));
      const label = el("span", "pmi-label");
      label.appendChild(labelNode(row.label));
      const svg = document.createElementNS(svgNs, "svg");
      svg.setAttribute("class", "pmi-bar");
      svg.setAttribute("viewBox", "0 0 " + BAR_WIDTH + " " + BAR_HEIGHT);
      svg.setAttribute("width", String(BAR_WIDTH));
      svg.setAttribute("height", String(BAR_HEIGHT));
      svg.setAttribute("preserveAspectRatio", "none");  // stretched to the row on a phone
      svg.setAttribute("role", "img");
      svg.setAttribute("aria-label", row.word + " · " + row.label + " · PMI " + row.pmi.toFixed(3));
      const width = Math.max(1, BAR_WIDTH * Math.max(0, row.pmi) / peak);
      const rect = document.createElementNS(svgNs, "rect");
      rect.setAttribute("class", colourClass(row.label));
      rect.setAttribute("x", String(rtl ? BAR_WIDTH - width : 0));
      rect.setAttribute("y", "2");
      rect.setAttribute("width", String(width));
      rect.setAttribute("height", String(BAR_HEIGHT - 4));
      svg.appendChild(rect);
      const value = el("span", "pmi-value");
      value.appendChild(el("bdi", "", row.pmi.toFixed(3)));
      const ratio = el("small", "", row.count + "/" + row.total);
      ratio.setAttribute("dir", "ltr");
      ratio.title = (100 * row.count / row.total).toFixed(0) + "%";
      value.appendChild(ratio);
      line.append(word, label, svg, value);
      chart.appendChild(line);
    });
  }

  function heatTable(confusion) {
    const table = el("table", "heat");
    const peak = Math.max.apply(null, confusion.matrix.flat().concat([0]));
    const head = el("tr");
    const corner = el("th", "corner", strings.gold + " \\ " + strings.predicted);
    corner.scope = "col";
    head.appendChild(corner);
    confusion.labels.forEach(function (label) {
      const th = el("th");
      th.scope = "col";
      th.appendChild(labelNode(label));
      head.appendChild(th);
    });
    const thead = el("thead");
    thead.appendChild(head);
    table.appendChild(thead);
    const body = el("tbody");
    confusion.matrix.forEach(function (counts, i) {
      const tr = el("tr");
      const th = el("th");
      th.scope = "row";
      th.appendChild(labelNode(confusion.labels[i]));
      tr.appendChild(th);
      const total = counts.reduce(function (a, b) { return a + b; }, 0);
      counts.forEach(function (n, j) {
        const level = !n || !peak ? 0 : Math.max(1, Math.round(5 * n / peak));
        const td = el("td", "heat-" + level + (i === j ? " diagonal" : ""));
        td.appendChild(el("span", "n", String(n)));
        td.appendChild(el("small", "", total ? (100 * n / total).toFixed(0) + "%" : "—"));
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
    table.appendChild(body);
    return table;
  }

  function drawBaselines(baselines) {
    const box = document.querySelector("#bias-baselines .matrices");
    box.replaceChildren();
    ["hypothesis_only", "overlap"].forEach(function (model) {
      const baseline = baselines[model];
      if (!baseline) { return; }
      ["dev", "test"].forEach(function (split) {
        const figures = baseline[split];
        if (!figures || !figures.confusion.matrix.length) { return; }  // fitted on it, or no gold items there
        const figure = el("figure", "matrix");
        const caption = el("figcaption");
        caption.appendChild(el("strong", "", strings[model]));
        caption.appendChild(document.createTextNode(" · " + strings[split] + " · " + strings.accuracy + " "));
        caption.appendChild(el("bdi", "accuracy", percent(figures.accuracy)));
        caption.appendChild(document.createTextNode(" · " + strings.trained_on + " " + baseline.train_split));
        figure.appendChild(caption);
        const scroll = el("div", "scroll");
        scroll.appendChild(heatTable(figures.confusion));
        figure.appendChild(scroll);
        box.appendChild(figure);
      });
    });
  }

  function drawFlags(flags) {
    const body = document.querySelector("#bias-flags tbody");
    body.replaceChildren();
    Object.keys(flags).forEach(function (column) {
      const row = flags[column];
      const tr = el("tr");
      const th = el("th", "", column);
      th.scope = "row";
      th.setAttribute("dir", "ltr");
      tr.appendChild(th);
      tr.appendChild(el("td", "num", String(row.hard)));
      tr.appendChild(el("td", "num", String(row.items)));
      tr.appendChild(el("td", "num", percent(row.agreement_with_imported)));
      body.appendChild(tr);
    });
  }

  // §4.3's crosstab: a row for the computed flags and one for the imported columns.
  function drawJoint(joint) {
    const body = document.querySelector("#bias-joint tbody");
    body.replaceChildren();
    ["computed", "imported"].forEach(function (source) {
      const counts = joint && joint[source];
      if (!counts) { return; }
      const tr = el("tr");
      tr.dataset.source = source;
      const th = el("th", "", strings["joint_" + source]);
      th.scope = "row";
      tr.appendChild(th);
      ["both", "hypothesis_only", "overlap_only", "neither"].forEach(function (cell) {
        tr.appendChild(el("td", "num", String(counts[cell])));
      });
      body.appendChild(tr);
    });
    show("bias-joint", body.children.length > 0);
  }

  function draw(result) {
    const params = document.getElementById("bias-params");
    params.textContent = strings.analysed.replace("%(split)s", result.split).replace("%(smoothing)s", String(result.smoothing));
    params.hidden = false;
    drawClasses(result.classes);
    // Analyses stored before the corpus line was computed have none.
    const corpus = document.getElementById("bias-corpus");
    corpus.hidden = !result.corpus;
    if (result.corpus) {
      // The tokenizer's name ("hazm 0.10.0") in <code>: a version, not a number to localise.
      const name = el("code", "", result.tokenizer);
      name.setAttribute("dir", "ltr");
      const parts = strings.corpus.replace("%(tokens)s", String(result.corpus.tokens))
        .replace("%(left_out)s", String(result.corpus.stopwords_or_one_character))
        .split("%(tokenizer)s");
      corpus.replaceChildren(parts[0], name, parts.slice(1).join(""));
    }
    drawPmi(result.pmi);
    drawBaselines(result.baselines);
    drawFlags(result.flags);
    drawJoint(result.joint_hard);
    ["bias-classes", "bias-pmi", "bias-baselines", "bias-flags"].forEach(function (id) { show(id, true); });
    show("bias-empty", false);
  }

  async function load() {
    if (root.dataset.hasResult !== "1") { show("bias-empty", true); return; }
    const result = await window.MashovApi.get(root.dataset.api);
    if (result.status === 200) {
      draw(result.data);
    } else {
      show("bias-empty", true);
    }
  }

  const form = document.getElementById("bias-form");
  const status = document.getElementById("bias-status");

  async function poll(jobId) {
    const url = root.dataset.jobs.replace(/0\/$/, jobId + "/");
    for (;;) {
      const result = await window.MashovApi.get(url);
      const job = result.data || {};
      if (result.status !== 200) { status.textContent = strings.failed + " " + window.MashovApi.errorText(result); return; }
      if (job.status === "done") { status.textContent = strings.done; root.dataset.hasResult = "1"; await load(); return; }
      if (job.status === "failed") {
        const error = job.error || {};
        status.textContent = strings.failed + " " + (error.errors ? error.errors.map(function (e) { return e.message; }).join("; ") : error.message || "");
        return;
      }
      status.textContent = job.status === "queued" ? strings.queued : strings.running + " " + Math.round(100 * (job.progress || 0)) + "%";
      await new Promise(function (resolve) { setTimeout(resolve, 700); });
    }
  }

  if (form) {
    form.addEventListener("submit", async function (event) {
      event.preventDefault();
      const smoothing = Number(form.elements.smoothing.value);
      const body = { split: form.elements.split.value, smoothing: form.elements.smoothing.value === "" ? 100 : smoothing };
      // A model trained elsewhere gives the hypothesis-only flags (its uploaded evaluation).
      if (form.elements.evaluation && form.elements.evaluation.value) { body.evaluation = Number(form.elements.evaluation.value); }
      const button = form.querySelector("button");
      button.disabled = true;
      try {
        const result = await window.MashovApi.post(root.dataset.api, body, { "Idempotency-Key": window.MashovApi.newKey() });
        if (result.status === 202) {
          await poll(result.data.job);
        } else {
          status.textContent = strings.failed + " " + window.MashovApi.errorText(result);
        }
      } finally {
        button.disabled = false;
      }
    });
  }

  load();
})();
