// Morphology-aware answer spans (HeQ §2, §4), the same rules as annotation/metrics/morphology.py
// (read its docstring): a mouse selection's edges move to word edges unless the start leaves
// out exactly a Hebrew prefix-letter sequence; the page offers the span with and without its
// prefix letters. ZWNJ (Persian) and ZWJ are word characters, so joined words stay whole.
// Offsets here are UTF-16 units of the paragraph; Hebrew and Persian letters, niqqud and ZWNJ
// are one unit each, so the rules match the server's code points on them. The table
// tests/kinds/qa/span_cases.json runs against both.
"use strict";

window.MashovMorphology = (function () {
  const INNER = "'\"\u05f3\u05f4";
  const PREFIX_SLOTS = [["ו"], ["ש", "כש"], ["ב", "כ", "ל", "מ"], ["ה"]];
  const MIN_STEM = 3;

  function isWordChar(ch) { return ch === "\u200c" || ch === "\u200d" || /^[\p{L}\p{M}\p{N}]$/u.test(ch); }
  function isMark(ch) { return /^\p{M}$/u.test(ch); }
  function inWord(text, i) {
    if (i < 0 || i >= text.length) { return false; }
    if (isWordChar(text[i])) { return true; }
    return INNER.indexOf(text[i]) !== -1 && i > 0 && i + 1 < text.length && isWordChar(text[i - 1]) && isWordChar(text[i + 1]);
  }
  function wordStart(text, i) { while (i > 0 && inWord(text, i - 1)) { i -= 1; } return i; }
  function wordEnd(text, i) { while (i < text.length && inWord(text, i)) { i += 1; } return i; }

  function letters(word) {
    const out = [];
    for (const ch of word) {
      if (out.length && isMark(ch)) { out[out.length - 1] += ch; } else { out.push(ch); }
    }
    return out;
  }

  // Lengths (units) of the prefix-letter sequences `word` can begin with, 0 included, ascending.
  function prefixLengths(word) {
    const parts = letters(word);
    const stem = parts.filter(function (letter) { return isWordChar(letter[0]); }).length;
    const found = new Set([0]);
    function walk(slot, usedLetters, usedUnits) {
      for (let s = slot; s < PREFIX_SLOTS.length; s += 1) {
        for (const option of PREFIX_SLOTS[s]) {
          const chunk = parts.slice(usedLetters, usedLetters + option.length);
          if (chunk.length === option.length && chunk.map(function (l) { return l[0]; }).join("") === option) {
            const n = usedLetters + option.length;
            if (stem - n >= MIN_STEM) {
              const units = usedUnits + chunk.join("").length;
              found.add(units);
              walk(s + 1, n, units);
            }
          }
        }
      }
    }
    walk(0, 0, 0);
    return Array.from(found).sort(function (a, b) { return a - b; });
  }

  function snapSelection(text, start, end) {
    if (start >= end) { return [start, end]; }
    const ws = wordStart(text, start);
    if (ws < start && prefixLengths(text.slice(ws, wordEnd(text, start))).indexOf(start - ws) === -1) { start = ws; }
    if (end > 0 && inWord(text, end - 1)) { end = wordEnd(text, end); }
    return [start, end];
  }

  function spanVariants(text, start, end) {
    const ws = wordStart(text, start);
    const we = wordEnd(text, ws);
    if (we > end) { return [[start, end]]; }
    const variants = prefixLengths(text.slice(ws, we)).map(function (n) { return [ws + n, end]; });
    return variants.some(function (v) { return v[0] === start && v[1] === end; }) ? variants : [[start, end]];
  }

  return { prefixLengths: prefixLengths, snapSelection: snapSelection, spanVariants: spanVariants };
})();
