r"""Morphology-aware answer spans (HeQ §2 and §4): where a marked span's edges go, and which
spans the annotator is offered besides the one marked.

HeQ §2: Hebrew attaches prepositions, the article and conjunctions to the word as prefix
letters, so "at the house" is one written word, בבית, and both בבית and בית are valid answers
to "where was I?". The page therefore (1) moves the edges of a mouse selection to word edges,
so that half a word is never marked by a slip of the hand, except that a selection which
leaves out only prefix letters keeps them out (a deliberate choice); and (2) offers, in one
keypress, the same span with and without its prefix letters. Persian writes one word in
parts joined by ZWNJ (U+200C, کتاب‌ها): ZWNJ is part of the word, so such words stay whole.

The stored span is whichever of these the annotator ends with, unchanged: offsets count
code points of the stored paragraph and the text is its exact slice. Nothing is normalized.

The Hebrew prefix sequence, in the order the letters attach (a simplification of the
grammar that covers the sequences HeQ's examples need, e.g. וכשהבית = ו + כש + ה + בית):

    [ו] [ש | כש] [ב | כ | ל | מ] [ה]

each slot optional, each letter with its niqqud marks.

Which readings are offered. Prefix letters are also root letters: מבקרים ("visitors") is
not מ + בקרים, מתקני is not מ + תקני, שלום is not ש + לום, and most two-letter remainders
(לכן → כן, בלי → לי) are readings nobody means. A reading is therefore offered when

- its stem occurs in the paragraph: as a word of its own, or after another prefix-letter
  sequence in another word (הקו ... לקו: קו is offered for both); or else
- its stem keeps at least MIN_STEM letters and its prefix is not one of the sequences that
  are mostly root letters: a sequence ending in מ (the participle and noun-pattern מ:
  מבקר, מתקן, מדינה) or a lone ש (שמר, שנה, שלום).

A selection the annotator made leaving prefix letters out is theirs: snapping keeps it when
at least MIN_KEPT_STEM letters remain (לקו → קו), and the full word is offered beside it.

Numbers are words too: a decimal or thousands separator (. , ٫ ٬) between two digits is
inside the number (1.2, ۱۲۷۴٫۱), and a hyphen or maqaf between a Hebrew letter and a digit
joins a prefix to its number (ה-19, ב-2019), so a selection that starts or ends inside one
takes it whole. Sentence punctuation at the end of a selection (a full stop, a comma, …) is
left out: it is never part of an answer.

The same rules are in static/qa/morphology.js; the table of cases in
tests/kinds/qa/span_cases.json runs against both.

>>> prefix_lengths("וכשהבית")
[0, 1, 2, 3, 4]
>>> snap_selection("אתמול הייתי בבית.", 14, 15)  # "י" of בבית: the whole word
(12, 16)
>>> snap_selection("אתמול הייתי בבית.", 13, 15)  # "בי" after the prefix ב: on to the word's end
(13, 16)
>>> span_variants("אתמול הייתי בבית.", 12, 16)
[(12, 16), (13, 16)]
>>> span_variants("המוזיאון קיבל מבקרים רבים", 14, 20)  # not מ + בקרים
[(14, 20)]
>>> snap_selection("בשנת 1.2 נבנה", 7, 13)  # from inside the number: the whole of it
(5, 13)
>>> snap_selection("אתמול הייתי בבית.", 12, 17)  # the full stop is left out
(12, 16)
"""

from __future__ import annotations

import unicodedata

ZWNJ, ZWJ = "\u200c", "\u200d"
# Letters that may stand inside a word between two letters: geresh, gershayim and their ASCII
# stand-ins (צה"ל, ג'ירפה), and the Hebrew maqaf is not one (it joins two words).
INNER = frozenset("'\"\u05f3\u05f4")
PREFIX_SLOTS = (("ו",), ("ש", "כש"), ("ב", "כ", "ל", "מ"), ("ה",))
MIN_STEM = 3
MIN_KEPT_STEM = 2
# Between two digits: decimal and thousands separators, Latin and Arabic (٫ U+066B, ٬ U+066C).
NUMBER_INNER = frozenset(".,\u066b\u066c")
# Between a Hebrew letter and a digit: hyphen, maqaf, Unicode hyphen.
PREFIX_HYPHENS = frozenset("-\u05be\u2010")
# Left out at a selection's end: sentence punctuation, Latin, Hebrew and Arabic-script.
TRAILING_PUNCTUATION = frozenset(".,;:!?\u2026\u060c\u061b\u061f\u06d4\u05c3")


def is_word_char(ch: str) -> bool:
    """Letters, marks (niqqud), digits and the joiners ZWNJ/ZWJ."""
    return ch in (ZWNJ, ZWJ) or unicodedata.category(ch)[0] in "LMN"


def _in_word(text: str, i: int) -> bool:
    """Whether text[i] belongs to a word (an INNER character only between two word characters)."""
    if not 0 <= i < len(text):
        return False
    if is_word_char(text[i]):
        return True
    if not (0 < i < len(text) - 1):
        return False
    before, after = text[i - 1], text[i + 1]
    if text[i] in INNER:
        return is_word_char(before) and is_word_char(after)
    if text[i] in NUMBER_INNER:
        return before.isdecimal() and after.isdecimal()
    return text[i] in PREFIX_HYPHENS and "\u05d0" <= before <= "\u05ea" and after.isdecimal()


def word_start(text: str, i: int) -> int:
    """The start of the word that code point offset `i` lies in or right after."""
    while i > 0 and _in_word(text, i - 1):
        i -= 1
    return i


def word_end(text: str, i: int) -> int:
    """The end of the word that offset `i` lies in or right before."""
    while i < len(text) and _in_word(text, i):
        i += 1
    return i


def _letters(word: str) -> list[str]:
    """The word's letters, each with the marks (niqqud) that follow it."""
    out: list[str] = []
    for ch in word:
        if out and unicodedata.category(ch)[0] == "M":
            out[-1] += ch
        else:
            out.append(ch)
    return out


def prefix_lengths(word: str, min_stem: int = MIN_STEM) -> list[int]:
    """Code point lengths of the prefix-letter sequences `word` can be read to begin with
    (0 included), ascending, each leaving at least `min_stem` letters of the word; a
    hyphen or maqaf right after the sequence (ה-19) is counted with it."""
    letters = _letters(word)
    stem_letters = sum(1 for letter in letters if is_word_char(letter[0]))
    found = {0}

    def walk(slot: int, used_letters: int, used_points: int) -> None:
        for next_slot in range(slot, len(PREFIX_SLOTS)):
            for option in PREFIX_SLOTS[next_slot]:
                chunk = letters[used_letters : used_letters + len(option)]
                if "".join(letter[0] for letter in chunk) == option and len(chunk) == len(option):
                    n_letters = used_letters + len(option)
                    if stem_letters - n_letters >= min_stem:
                        points = used_points + sum(len(letter) for letter in chunk)
                        found.add(points)
                        walk(next_slot + 1, n_letters, points)

    walk(0, 0, 0)
    # A hyphen after the prefix belongs to it: ה-19 reads ה- + 19.
    found = {n + 1 if n and n < len(word) and word[n] in PREFIX_HYPHENS else n for n in found}
    return sorted(found)


def _words(text: str) -> list[tuple[int, int]]:
    """[start, end) of every word of `text`."""
    out, i = [], 0
    while i < len(text):
        if _in_word(text, i):
            end = word_end(text, i)
            out.append((i, end))
            i = end
        else:
            i += 1
    return out


def _bases(letters: list[str]) -> str:
    return "".join(letter[0] for letter in letters)


def offered_prefix_lengths(text: str, ws: int, we: int) -> list[int]:
    """The prefix lengths (code points, 0 included) of the word text[ws:we] whose readings
    are offered, by the rules of the module docstring."""
    word = text[ws:we]
    elsewhere: set[str] = set()
    for a, b in _words(text):
        other = text[a:b]
        if other != word:
            elsewhere.update(other[n:] for n in prefix_lengths(other, MIN_KEPT_STEM))
    offered = []
    for n in prefix_lengths(word, MIN_KEPT_STEM):
        stem, prefix = word[n:], _bases(_letters(word[:n]))
        if n == 0 or stem in elsewhere:
            offered.append(n)
        elif (
            len(_letters(stem)) >= MIN_STEM
            and not prefix.rstrip("".join(PREFIX_HYPHENS)).endswith("מ")
            and prefix != "ש"
        ):
            offered.append(n)
    return offered


def snap_selection(text: str, start: int, end: int) -> tuple[int, int]:
    """A mouse selection [start, end) (code points) moved to word edges: an edge inside a word
    moves outwards to the word's edge, except a start that leaves out exactly a prefix-letter
    sequence of its word, with at least MIN_KEPT_STEM letters after it (the annotator left
    the prefix out on purpose); then sentence punctuation at the end is left out. An empty
    or reversed selection is returned as it is."""
    if start >= end:
        return start, end
    ws = word_start(text, start)
    if ws < start and (start - ws) not in prefix_lengths(text[ws : word_end(text, start)], MIN_KEPT_STEM):
        start = ws
    if end > 0 and _in_word(text, end - 1):
        end = word_end(text, end)
    return start, trim_end(text, start, end)


def trim_end(text: str, start: int, end: int) -> int:
    """The end of [start, end) (code points) with sentence punctuation at its end left out,
    at least one character kept: a full stop or a comma after an answer is not part of it,
    whoever sends the span (the page's selection, or an API client). A separator inside a
    word stays ("1.2", "ה-19").

    >>> text = "בירושלים. 1.2"
    >>> text[0:trim_end(text, 0, 9)], text[10:trim_end(text, 10, 13)]
    ('בירושלים', '1.2')
    """
    while end > start + 1 and text[end - 1] in TRAILING_PUNCTUATION and not _in_word(text, end - 1):
        end -= 1
    return end


def span_variants(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The spans to offer for [start, end) (code points): the same end, starting at the start
    of its first word and after each offered prefix-letter sequence of that word
    (`offered_prefix_lengths`), and at `start` itself when it leaves out a prefix-letter
    sequence, in order. [(start, end)] alone when that word has no such readings, when the
    span ends inside it, or when the span does not start at one of these places."""
    ws = word_start(text, start)
    we = word_end(text, ws)
    if we > end:
        return [(start, end)]
    lengths = set(offered_prefix_lengths(text, ws, we))
    if start - ws in prefix_lengths(text[ws:we], MIN_KEPT_STEM):
        lengths.add(start - ws)
    variants = [(ws + n, end) for n in sorted(lengths)]
    return variants if (start, end) in variants else [(start, end)]
