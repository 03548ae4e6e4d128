// Numbers in the interface language's own digits, on every page and in whatever a script
// writes later: counts, progress, figures, percentages, dates and page numbers. Persian
// writes ۰-۹, a decimal ٫ and a percent ٪; Hebrew and English keep 0-9, and this script then
// does nothing. The language's digits come from the browser (Intl), not from a table here.
//
// Never changed: data. Item texts carry the project's `lang`; names, ids and other people's
// text sit in a plain <bdi> or under [data-user-text]; codes in <code>, <pre> or <samp>.
// Figures isolated for direction sit in <bdi dir="ltr"> and are changed. Form values are
// left alone (the browser shows a number box's value in the page's digits itself).
"use strict";

(function () {
  const root = document.documentElement;
  const lang = root.lang;
  if (!lang || typeof Intl === "undefined") { return; }
  const format = new Intl.NumberFormat(lang, { useGrouping: false });
  const digits = format.format(1234567890).split("");
  // 1234567890 gives the digits 1-9 then 0.
  const table = {};
  "1234567890".split("").forEach(function (ascii, i) { table[ascii] = digits[i]; });
  if (table["0"] === "0") { return; }
  const decimal = (format.formatToParts(1.5).find(function (p) { return p.type === "decimal"; }) || { value: "." }).value;
  const percentParts = new Intl.NumberFormat(lang, { style: "percent" }).formatToParts(0.5);
  const percent = ((percentParts.find(function (p) { return p.type === "percentSign"; }) || { value: "%" }).value).replace(/[\u200e\u200f\u061c]/g, "");

  const LATIN = /[0-9]/;
  function localise(text) {
    if (!LATIN.test(text)) { return text; }
    return text
      .replace(/([0-9])\.(?=[0-9])/g, "$1" + decimal)
      .replace(/([0-9])%/g, "$1" + percent)
      .replace(/[0-9]/g, function (d) { return table[d]; });
  }

  const SKIP_TAGS = { SCRIPT: 1, STYLE: 1, TEMPLATE: 1, NOSCRIPT: 1, TEXTAREA: 1, CODE: 1, PRE: 1, SAMP: 1 };
  // Data, not interface: see the comment at the top.
  function isData(el) {
    for (let node = el; node && node !== root; node = node.parentElement) {
      if (SKIP_TAGS[node.tagName] || node.isContentEditable) { return true; }
      if (node.hasAttribute("lang") || node.hasAttribute("data-user-text")) { return true; }
      if (node.tagName === "BDI" && node.getAttribute("dir") !== "ltr") { return true; }
    }
    return false;
  }

  const ATTRIBUTES = ["title", "placeholder", "aria-label"];
  function localiseElement(el) {
    if (isData(el)) { return; }
    ATTRIBUTES.forEach(function (name) {
      const value = el.getAttribute(name);
      if (value && LATIN.test(value)) { el.setAttribute(name, localise(value)); }
    });
  }

  function localiseTree(start) {
    if (start.nodeType === Node.TEXT_NODE) {
      if (start.parentElement && LATIN.test(start.data) && !isData(start.parentElement)) {
        start.data = localise(start.data);
      }
      return;
    }
    if (start.nodeType !== Node.ELEMENT_NODE) { return; }
    localiseElement(start);
    start.querySelectorAll("[title], [placeholder], [aria-label]").forEach(localiseElement);
    const walker = document.createTreeWalker(start, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (LATIN.test(node.data) && node.parentElement && !isData(node.parentElement)) {
        node.data = localise(node.data);
      }
    }
  }

  localiseTree(document.body);
  // What scripts write later (progress after a submit, fetched figures, messages): a
  // mutation observer's callback runs before the next paint, so Latin digits never show.
  new MutationObserver(function (records) {
    records.forEach(function (record) {
      if (record.type === "characterData") { localiseTree(record.target); return; }
      if (record.type === "attributes") { localiseElement(record.target); return; }
      record.addedNodes.forEach(localiseTree);
    });
  }).observe(document.body, {
    subtree: true,
    childList: true,
    characterData: true,
    attributes: true,
    attributeFilter: ATTRIBUTES,
  });
})();
