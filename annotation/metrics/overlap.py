"""Quality signals of authored questions (HeQ §3.1 and appendix C). Pure: no Django.

- Question-paragraph word overlap: HeQ monitored "the overlap between the questions and the
  text, aiming to minimize it" (§3.1 Difficulty) and plots it in appendix C, figure 2b.
- Answer position: where in the paragraph the answer starts (appendix C, figure 3,
  "Position Bias").
- WH-word of a question and the diversity of WH-words (§3.1 Diversity; the HeQ files carry
  a "WH Question" field with one of the words listed in `HEBREW_WH_WORDS`).

Tokens are whitespace-separated words of the matching folding (`text.fold_for_matching`:
NFC, Persian/Arabic-Indic digits to ASCII, and with `fold_letters` Arabic yeh/kaf as their
Persian forms), lower-cased, with Unicode punctuation removed
(so "?" "," "״" and Persian "؟" never make a token of their own). Niqqud and ZWNJ stay inside
their word. static/qa/annotate.js computes the same overlap live in the page
(`wordOverlap`); keep the two in step.

>>> round(question_overlap("מי כתב את הספר?", "את הספר כתב עגנון."), 2)
0.75
>>> wh_word("באיזו שנה נוסדה העיר?")
'איזו'
>>> position_bucket(50, 100)
5
"""

from __future__ import annotations

import functools
import math
import sys
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from annotation.metrics.text import fold_for_matching

__all__ = [
    "HEBREW_WH_WORDS",
    "PERSIAN_WH_WORDS",
    "words",
    "question_overlap",
    "position_bucket",
    "position_histogram",
    "overlap_histogram",
    "wh_word",
    "wh_diversity",
    "wh_diversity_from_counts",
    "WhDiversity",
]

# Hebrew question words. The first fourteen are the values of HeQ's "WH Question" field;
# the rest are question words HeQ's annotators could also have used: "האם" (whether, yes/no questions), "מאין" (from where). "מהו"/"מהי"/"מיהו"/
# "מיהי" (what is / who is, one word) count as "מה"/"מי", as HeQ's files label them (see
# `_VARIANTS`); prefixed forms ("באיזו", "לכמה", "מאיפה") count as their base through the
# prefix rule in `wh_word`.
HEBREW_WH_WORDS = (
    "מה",  # what
    "מי",  # who
    "כמה",  # how many / how much
    "איזה",  # which (masculine)
    "איזו",  # which (feminine)
    "אילו",  # which (plural)
    "מתי",  # when
    "היכן",  # where
    "איפה",  # where (colloquial)
    "כיצד",  # how
    "איך",  # how (colloquial)
    "למה",  # why
    "מדוע",  # why (formal)
    "לאן",  # where to
    "מאין",  # from where
    "האם",  # whether (yes/no question)
)
# One-word "what is / who is" forms, labelled with their base word in HeQ's files.
_VARIANTS = {"מהו": "מה", "מהי": "מה", "מהם": "מה", "מהן": "מה", "מיהו": "מי", "מיהי": "מי", "מיהם": "מי", "מיהן": "מי"}
# Persian question words, for Persian QA projects.
PERSIAN_WH_WORDS = (
    "چه",  # what
    "چی",  # what (colloquial)
    "چرا",  # why
    "کی",  # who / when
    "چه\u200cکسی",  # who (with ZWNJ)
    "کسی",  # (second half of "چه کسی" when written with a space)
    "کجا",  # where
    "چگونه",  # how
    "چطور",  # how
    "چند",  # how many
    "چقدر",  # how much
    "کدام",  # which
    "آیا",  # whether
)
# One-letter Hebrew prefixes (ו ה ב כ ל מ ש) that attach to a question word: "באיזו" is
# "ב" + "איזו", "ולמה" is "ו" + "למה". At most two are stripped ("ובאיזו").
_HEBREW_PREFIXES = "והבכלמש"
_WH = {**{word: word for word in (*HEBREW_WH_WORDS, *PERSIAN_WH_WORDS)}, **_VARIANTS}


def words(text: str, *, fold_letters: bool = False) -> list[str]:
    """The matching tokens of `text` (see the module docstring).

    >>> words("Tel-Aviv, 1948! “שלום”")
    ['telaviv', '1948', 'שלום']
    """
    return fold_for_matching(text, persian_letters=fold_letters).lower().translate(_punctuation_table()).split()


@functools.cache
def _punctuation_table() -> dict[int, None]:
    """Every code point of a Unicode punctuation category (P*), to delete with str.translate
    (what `words` removes, at C speed: near-duplicate search tokenises 100,000s of texts)."""
    return {code: None for code in range(sys.maxunicode + 1) if unicodedata.category(chr(code)).startswith("P")}


def question_overlap(question: str, paragraph: str, *, fold_letters: bool = False) -> float:
    """Share of the question's tokens (counted with repeats) that occur in the paragraph,
    in [0, 1]; 0 for a question without tokens. 1 means every word was copied.
    `fold_letters` counts Arabic and Persian yeh/kaf as one letter.

    >>> question_overlap("", "anything")
    0.0
    >>> question_overlap("كتاب علي", "کتاب علی"), question_overlap("كتاب علي", "کتاب علی", fold_letters=True)
    (0.0, 1.0)
    """
    question_tokens = words(question, fold_letters=fold_letters)
    if not question_tokens:
        return 0.0
    vocabulary = set(words(paragraph, fold_letters=fold_letters))
    return sum(1 for token in question_tokens if token in vocabulary) / len(question_tokens)


def position_bucket(start: int, length: int, bins: int = 10) -> int:
    """The bin (0 .. bins-1) of an answer starting at code point `start` of a paragraph of
    `length` code points: relative start `start / length` cut into `bins` equal parts.

    >>> position_bucket(0, 700), position_bucket(699, 700)
    (0, 9)
    """
    if bins < 1:
        raise ValueError("bins must be at least 1")
    if length <= 0 or not 0 <= start < length:
        raise ValueError(f"start {start} is outside a paragraph of {length} code points")
    return min(bins - 1, start * bins // length)


def position_histogram(answers: Iterable[tuple[int, int]], bins: int = 10) -> list[int]:
    """Counts per bin of (start, paragraph length) pairs (HeQ appendix C, figure 3)."""
    counts = [0] * bins
    for start, length in answers:
        counts[position_bucket(start, length, bins)] += 1
    return counts


def overlap_histogram(values: Iterable[float], bins: int = 10) -> list[int]:
    """Counts of overlap values in [0, 1] per bin of width 1/bins (1.0 is in the last)."""
    counts = [0] * bins
    for value in values:
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"overlap {value} is outside [0, 1]")
        counts[min(bins - 1, int(value * bins))] += 1
    return counts


def wh_word(question: str) -> str | None:
    """The first question word of `question`, in its base form (HeQ's "WH Question"), or None.

    A Hebrew word with one or two attached prefix letters counts as its base ("באיזו" →
    "איזו", "ולמה" → "למה"); an exact match is tried first, so "למה" stays "למה" and is not
    read as "ל" + "מה".

    >>> wh_word("כמה תושבים יש בעיר?"), wh_word("ולמה?"), wh_word("מיהו?"), wh_word("Who?")
    ('כמה', 'למה', 'מי', None)
    >>> wh_word("پایتخت ایران کدام شهر است؟")
    'کدام'
    """
    for token in words(question):
        found = _base_wh(token)
        if found:
            return found
    return None


def _base_wh(token: str) -> str | None:
    if token in _WH:
        return _WH[token]
    for strip in (1, 2):
        prefix, rest = token[:strip], token[strip:]
        if len(rest) >= 2 and all(ch in _HEBREW_PREFIXES for ch in prefix) and rest in _WH:
            return _WH[rest]
    return None


@dataclass(frozen=True)
class WhDiversity:
    """Counts per WH-word (None = no WH-word found), how many distinct words were used, and
    the normalised Shannon entropy of their distribution in [0, 1] (1 = every used word
    equally often; 0 = one word only or no questions)."""

    counts: dict
    distinct: int
    entropy: float
    without_wh: int


def wh_diversity(questions: Iterable[str]) -> WhDiversity:
    """WH-word diversity of a set of questions (HeQ §3.1 "Diversity").

    >>> d = wh_diversity(["מי?", "מה?", "מתי?", "מי עוד?"])
    >>> d.counts, d.distinct, round(d.entropy, 3)
    ({'מי': 2, 'מה': 1, 'מתי': 1}, 3, 0.946)
    """
    counter: Counter = Counter()
    without = 0
    for question in questions:
        word = wh_word(question)
        if word is None:
            without += 1
        else:
            counter[word] += 1
    return wh_diversity_from_counts(counter, without)


def wh_diversity_from_counts(counter: dict[str, int], without: int) -> WhDiversity:
    """`wh_diversity` from the questions per WH-word (`counter`, read in its order: words
    tied in count keep it) and the number without one.

    >>> wh_diversity_from_counts({"מי": 2, "מה": 1}, 1).without_wh
    1
    """
    counter = Counter(counter)
    total = sum(counter.values())
    distinct = len(counter)
    entropy = 0.0
    if distinct > 1:
        entropy = -sum((n / total) * math.log(n / total) for n in counter.values()) / math.log(distinct)
    return WhDiversity(counts=dict(counter.most_common()), distinct=distinct, entropy=entropy, without_wh=without)
