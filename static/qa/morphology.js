// Morphology-aware answer spans (HeQ §2, §4), the same rules as annotation/metrics/morphology.py
// (read its docstring): a mouse selection's edges move to word edges unless the start leaves
// out exactly a Hebrew prefix-letter sequence; sentence punctuation at its end is left out; the
// page offers the span with and without its prefix letters where that reading is likely (its
// stem elsewhere in the paragraph, or a stem of three letters after a prefix that is not
// mostly root letters: not a final מ, not a lone ש). ZWNJ (Persian) and ZWJ are word
// characters, so joined words stay whole; a decimal separator between digits and a hyphen
// between a Hebrew letter and a digit are inside a word (1.2, ۱۲۷۴٫۱, ה-19).
// Offsets here are UTF-16 units of the paragraph; Hebrew and Persian letters, niqqud and ZWNJ
// are one unit each, so the rules match the server's code points on them. The table
// tests/kinds/qa/span_cases.json runs against both.
"use strict";

window.MashovMorphology = (function () {
  const INNER = "'\"\u05f3\u05f4";
  const PREFIX_SLOTS = [["ו"], ["ש", "כש"], ["ב", "כ", "ל", "מ"], ["ה"]];
  const MIN_STEM = 3;
  const MIN_KEPT_STEM = 2;
  const NUMBER_INNER = ".,\u066b\u066c";
  const PREFIX_HYPHENS = "-\u05be\u2010";
  const TRAILING_PUNCTUATION = ".,;:!?\u2026\u060c\u061b\u061f\u06d4\u05c3";

  function isWordChar(ch) { return ch === "\u200c" || ch === "\u200d" || /^[\p{L}\p{M}\p{N}]$/u.test(ch); }
  function isMark(ch) { return /^\p{M}$/u.test(ch); }
  function isDigit(ch) { return /^\p{Nd}$/u.test(ch); }
  function inWord(text, i) {
    if (i < 0 || i >= text.length) { return false; }
    if (isWordChar(text[i])) { return true; }
    if (!(i > 0 && i + 1 < text.length)) { return false; }
    const before = text[i - 1], after = text[i + 1];
    if (INNER.indexOf(text[i]) !== -1) { return isWordChar(before) && isWordChar(after); }
    if (NUMBER_INNER.indexOf(text[i]) !== -1) { return isDigit(before) && isDigit(after); }
    return PREFIX_HYPHENS.indexOf(text[i]) !== -1 && before >= "\u05d0" && before <= "\u05ea" && isDigit(after);
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

  // Lengths (units) of the prefix-letter sequences `word` can begin with, 0 included, ascending,
  // each leaving at least minStem letters; a hyphen right after the sequence goes with it.
  function prefixLengths(word, minStem) {
    if (minStem === undefined) { minStem = MIN_STEM; }
    const parts = letters(word);
    const stem = parts.filter(function (letter) { return isWordChar(letter[0]); }).length;
    const found = new Set([0]);
    function walk(slot, usedLetters, usedUnits) {
      for (let s = slot; s < PREFIX_SLOTS.length; s += 1) {
        for (const option of PREFIX_SLOTS[s]) {
          const chunk = parts.slice(usedLetters, usedLetters + option.length);
          if (chunk.length === option.length && chunk.map(function (l) { return l[0]; }).join("") === option) {
            const n = usedLetters + option.length;
            if (stem - n >= minStem) {
              const units = usedUnits + chunk.join("").length;
              found.add(units);
              walk(s + 1, n, units);
            }
          }
        }
      }
    }
    walk(0, 0, 0);
    const lengths = new Set();
    found.forEach(function (n) { lengths.add(n && n < word.length && PREFIX_HYPHENS.indexOf(word[n]) !== -1 ? n + 1 : n); });
    return Array.from(lengths).sort(function (a, b) { return a - b; });
  }

  function words(text) {
    const out = [];
    let i = 0;
    while (i < text.length) {
      if (inWord(text, i)) { const end = wordEnd(text, i); out.push([i, end]); i = end; } else { i += 1; }
    }
    return out;
  }

  function bases(word) { return letters(word).map(function (l) { return l[0]; }).join(""); }

  // Prefix lengths of the word text[ws, we) whose readings are offered (morphology.py).
  function offeredPrefixLengths(text, ws, we) {
    const word = text.slice(ws, we);
    const elsewhere = new Set();
    words(text).forEach(function (w) {
      const other = text.slice(w[0], w[1]);
      if (other === word) { return; }
      prefixLengths(other, MIN_KEPT_STEM).forEach(function (n) { elsewhere.add(other.slice(n)); });
    });
    return prefixLengths(word, MIN_KEPT_STEM).filter(function (n) {
      const stem = word.slice(n);
      let prefix = bases(word.slice(0, n));
      while (prefix && PREFIX_HYPHENS.indexOf(prefix[prefix.length - 1]) !== -1) { prefix = prefix.slice(0, -1); }
      if (n === 0 || elsewhere.has(stem)) { return true; }
      return letters(stem).length >= MIN_STEM && prefix[prefix.length - 1] !== "מ" && bases(word.slice(0, n)) !== "ש";
    });
  }

  // Sentence punctuation at the end of [start, end) left out (at least one character stays).
  function trimEnd(text, start, end) {
    while (end > start + 1 && TRAILING_PUNCTUATION.indexOf(text[end - 1]) !== -1 && !inWord(text, end - 1)) { end -= 1; }
    return end;
  }

  function snapSelection(text, start, end) {
    if (start >= end) { return [start, end]; }
    const ws = wordStart(text, start);
    if (ws < start && prefixLengths(text.slice(ws, wordEnd(text, start)), MIN_KEPT_STEM).indexOf(start - ws) === -1) { start = ws; }
    if (end > 0 && inWord(text, end - 1)) { end = wordEnd(text, end); }
    return [start, trimEnd(text, start, end)];
  }

  function spanVariants(text, start, end) {
    const ws = wordStart(text, start);
    const we = wordEnd(text, ws);
    if (we > end) { return [[start, end]]; }
    const lengths = new Set(offeredPrefixLengths(text, ws, we));
    if (prefixLengths(text.slice(ws, we), MIN_KEPT_STEM).indexOf(start - ws) !== -1) { lengths.add(start - ws); }
    const variants = Array.from(lengths).sort(function (a, b) { return a - b; }).map(function (n) { return [ws + n, end]; });
    return variants.some(function (v) { return v[0] === start && v[1] === end; }) ? variants : [[start, end]];
  }

  return { prefixLengths: prefixLengths, snapSelection: snapSelection, spanVariants: spanVariants, trimEnd: trimEnd };
})();
