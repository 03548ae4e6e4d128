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

each slot optional, each letter with its niqqud marks. A stripped word must keep at least
MIN_STEM letters. The same rules are in static/qa/morphology.js; the table of cases in
tests/kinds/qa/span_cases.json runs against both.

>>> prefix_lengths("וכשהבית")
[0, 1, 2, 3, 4]
>>> snap_selection("אתמול הייתי בבית.", 14, 15)  # "י" of בבית: the whole word
(12, 16)
>>> snap_selection("אתמול הייתי בבית.", 13, 15)  # "בי" after the prefix ב: on to the word's end
(13, 16)
>>> span_variants("אתמול הייתי בבית.", 12, 16)
[(12, 16), (13, 16)]
"""

from __future__ import annotations

import unicodedata

ZWNJ, ZWJ = "\u200c", "\u200d"
# Letters that may stand inside a word between two letters: geresh, gershayim and their ASCII
# stand-ins (צה"ל, ג'ירפה), and the Hebrew maqaf is not one (it joins two words).
INNER = frozenset("'\"\u05f3\u05f4")
PREFIX_SLOTS = (("ו",), ("ש", "כש"), ("ב", "כ", "ל", "מ"), ("ה",))
MIN_STEM = 3


def is_word_char(ch: str) -> bool:
    """Letters, marks (niqqud), digits and the joiners ZWNJ/ZWJ."""
    return ch in (ZWNJ, ZWJ) or unicodedata.category(ch)[0] in "LMN"


def _in_word(text: str, i: int) -> bool:
    """Whether text[i] belongs to a word (an INNER character only between two word characters)."""
    if not 0 <= i < len(text):
        return False
    if is_word_char(text[i]):
        return True
    return text[i] in INNER and i > 0 and i + 1 < len(text) and is_word_char(text[i - 1]) and is_word_char(text[i + 1])


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


def prefix_lengths(word: str) -> list[int]:
    """Code point lengths of the prefix-letter sequences `word` can be read to begin with
    (0 included), ascending, each leaving at least MIN_STEM letters of the word."""
    letters = _letters(word)
    stem_letters = sum(1 for letter in letters if is_word_char(letter[0]))
    found = {0}

    def walk(slot: int, used_letters: int, used_points: int) -> None:
        for next_slot in range(slot, len(PREFIX_SLOTS)):
            for option in PREFIX_SLOTS[next_slot]:
                chunk = letters[used_letters : used_letters + len(option)]
                if "".join(letter[0] for letter in chunk) == option and len(chunk) == len(option):
                    n_letters = used_letters + len(option)
                    if stem_letters - n_letters >= MIN_STEM:
                        points = used_points + sum(len(letter) for letter in chunk)
                        found.add(points)
                        walk(next_slot + 1, n_letters, points)

    walk(0, 0, 0)
    return sorted(found)


def snap_selection(text: str, start: int, end: int) -> tuple[int, int]:
    """A mouse selection [start, end) (code points) moved to word edges: an edge inside a word
    moves outwards to the word's edge, except a start that leaves out exactly a prefix-letter
    sequence of its word (the annotator left the prefix out on purpose). An empty or
    reversed selection is returned as it is."""
    if start >= end:
        return start, end
    ws = word_start(text, start)
    if ws < start and (start - ws) not in prefix_lengths(text[ws : word_end(text, start)]):
        start = ws
    if end > 0 and _in_word(text, end - 1):
        end = word_end(text, end)
    return start, end


def span_variants(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The spans to offer for [start, end) (code points): the same end, starting at the start
    of its first word and after each prefix-letter sequence of that word, longest first.
    [(start, end)] alone when that word has no prefix letters, when the span ends inside it,
    or when the span does not start at one of these places."""
    ws = word_start(text, start)
    we = word_end(text, ws)
    if we > end:
        return [(start, end)]
    variants = [(ws + n, end) for n in prefix_lengths(text[ws:we])]
    return variants if (start, end) in variants else [(start, end)]
