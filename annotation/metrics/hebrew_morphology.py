r"""HeSum Table 1's morphology columns from hspell's analyses: lemma vocabulary, words with a
pronominal suffix (the paper's "anaphors") and construct-state words (smixut).

The paper read them off DictaBERT, which picks one analysis per word in its context. Mashov
reads them off hspell 1.4's morphological analyser (`hspell -l`, annotation/hspell.py runs
it), which lists every analysis a word can have, out of context and unranked. So every
figure states its rule for a word with several readings:

- lemmas: every lemma of every reading counts (ספרו, "his book" or "they told", adds both
  ספר and סיפר), so the vocabulary is that of all the texts' possible readings, an upper
  bound of a count in context. A word hspell does not know (a name, a foreign word, a
  misspelling) counts as its own lemma, prefix letters and all.
- anaphors and construct state are counted twice: words whose every reading has the
  feature (`*_mean`, a lower bound) and words with at least one such reading
  (`*_possible_mean`, an upper bound). Most masculine singular nouns read as construct or
  absolute (בית), so the two bounds of construct state lie far apart.

How hspell 1.4 prints an analysis (checked by running it; tests/metrics/test_hebrew_morphology.py
keeps the real output): input ISO-8859-8, one word a line; for each known word one block per
way to split off prefix letters, a header ``מילה חוקית: WORD`` (no prefix) or
``צירוף חוקי: PREFIX+REST``, then one tab-indented line per reading,
``LEMMA(features)``. Features are comma-separated: part of speech ע/פ/ת (noun, verb,
adjective), gender, person, number, tense, ``סמיכות`` (construct state) and
``כינוי/<gender>,<person>,<number>`` (pronominal suffix). Words outside the inflected
lexicon have the feature ``x``; then the lemma ``שונות`` ("miscellaneous") stands for no
lemma (the word itself is used), and any other lemma is a preposition or quantifier the
word inflects with a pronoun (עליו → על(x), כולם → כול(x)): such a reading is anaphoric.
Proper names hspell knows only as names print as ``שונות(ע,פרטי)``. Unknown words are listed
after the line ``שגיאות כתיב שנמצאו:`` and have no block.

A Hebrew word here is a run of two or more Hebrew letters, with a geresh or gershayim
between two letters (צה"ל), after niqqud and cantillation marks are dropped: hspell reads
ISO-8859-8, which has neither.

>>> parsed = parse_hspell("צירוף חוקי: ה+בית\n\tבית(ע,ז,יחיד)\n")
>>> parsed["הבית"]
[Reading(segment='בית', lemma='בית', features=('ע', 'ז', 'יחיד'))]
>>> hebrew_words("בְּבֵית הספר, ב-2019 צה״ל")
['בבית', 'הספר', 'צה"ל']
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = [
    "Reading",
    "WordReadings",
    "MorphologyProfile",
    "FIGURES",
    "hebrew_words",
    "parse_hspell",
    "word_readings",
    "words_of",
]

# Header of a block: a word without prefix letters, or one with them split off by "+".
_HEADER = re.compile(r"^(?:מילה חוקית|צירוף חוקי): (?P<word>\S*)$")
_READING = re.compile(r"^\t(?P<lemma>[^(]+)\((?P<features>[^)]*)\)\s*$")
# Opens the list of words hspell does not know; nothing after it is an analysis.
_UNKNOWN_LIST = "שגיאות כתיב שנמצאו:"
MISC_LEMMA = "שונות"
CONSTRUCT = "סמיכות"
SUFFIX = "כינוי"
PROPER_NAME = "פרטי"
NO_INFORMATION = "x"

_WORD = re.compile(r"[\u05d0-\u05ea](?:['\"]?[\u05d0-\u05ea])+")
# Geresh and gershayim as ISO-8859-8 can write them.
_PUNCTUATION_MAP = str.maketrans({"\u05f3": "'", "\u05f4": '"'})

# The figures a profile gives, in the report's order (None for all without an analyser).
FIGURES = (
    "lemmas",
    "anaphors_mean",
    "anaphors_possible_mean",
    "construct_mean",
    "construct_possible_mean",
    "known_words",
)


@dataclass(frozen=True)
class Reading:
    """One analysis hspell gives a word: `segment` is the word without the prefix letters
    this reading splits off."""

    segment: str
    lemma: str
    features: tuple[str, ...]

    @property
    def construct(self) -> bool:
        return CONSTRUCT in self.features

    @property
    def anaphoric(self) -> bool:
        """A pronominal suffix: marked (כינוי/...) on nouns and verbs, or an inflected
        preposition, which hspell prints as its base with no features (עליו → על(x))."""
        if any(feature.startswith(SUFFIX) for feature in self.features):
            return True
        return self.features == (NO_INFORMATION,) and self.lemma not in (self.segment, MISC_LEMMA)

    @property
    def base(self) -> str:
        """The lemma, or the segment itself where hspell has none (שונות: function words,
        names it knows only as names)."""
        if self.lemma == MISC_LEMMA and (self.features == (NO_INFORMATION,) or PROPER_NAME in self.features):
            return self.segment
        return self.lemma


@dataclass(frozen=True)
class WordReadings:
    """What counts for one written word: whether hspell knows it, its lemmas, and whether
    all / some of its readings are anaphoric or in construct state."""

    known: bool
    lemmas: frozenset[str]
    anaphoric_all: bool
    anaphoric_some: bool
    construct_all: bool
    construct_some: bool


def hebrew_words(text: str) -> list[str]:
    """The Hebrew words of `text` as hspell is given them (see the module's docstring)."""
    decomposed = unicodedata.normalize("NFD", text)
    bare = "".join(ch for ch in decomposed if not ("\u0591" <= ch <= "\u05c7" and unicodedata.category(ch) == "Mn"))
    return _WORD.findall(unicodedata.normalize("NFC", bare).translate(_PUNCTUATION_MAP))


def parse_hspell(output: str) -> dict[str, list[Reading]]:
    """Every reading `hspell -l` printed, per word (the header's word with "+" removed), in
    its order, each once. Words it did not know are absent."""
    readings: dict[str, list[Reading]] = {}
    word = segment = None
    for line in output.splitlines():
        if line.strip() == _UNKNOWN_LIST:
            break
        header = _HEADER.match(line)
        if header:
            prefix, _plus, rest = header["word"].rpartition("+")
            word, segment = prefix + rest, rest
            continue
        reading = _READING.match(line)
        if reading and word is not None and segment:
            found = Reading(segment, reading["lemma"], tuple(reading["features"].split(",")))
            listed = readings.setdefault(word, [])
            if found not in listed:
                listed.append(found)
    return readings


def word_readings(word: str, readings: list[Reading]) -> WordReadings:
    """The figures of one word from its readings; a word without readings is unknown and
    its own lemma."""
    if not readings:
        return WordReadings(False, frozenset((word,)), False, False, False, False)
    anaphoric = [reading.anaphoric for reading in readings]
    construct = [reading.construct for reading in readings]
    return WordReadings(
        known=True,
        lemmas=frozenset(reading.base for reading in readings),
        anaphoric_all=all(anaphoric),
        anaphoric_some=any(anaphoric),
        construct_all=all(construct),
        construct_some=any(construct),
    )


class MorphologyProfile:
    """Running morphology figures of a collection of texts (HeSum Table 1): the lemma
    vocabulary, the mean number of anaphoric and construct-state words per text (all
    readings / some reading) and the share of Hebrew words hspell knows. `add` takes the
    text and the analyses of (at least) its words.

    >>> unknown = word_readings("אבג", [])
    >>> profile = MorphologyProfile()
    >>> profile.add("אבג אבג", {"אבג": unknown})
    >>> profile.figures()["lemmas"], profile.figures()["known_words"]
    (1, 0.0)
    """

    def __init__(self) -> None:
        self.texts = 0
        self.words = 0
        self.known = 0
        self.anaphors = 0
        self.anaphors_possible = 0
        self.construct = 0
        self.construct_possible = 0
        self.lemmas: set[str] = set()

    def add(self, text: str, analyses: Mapping[str, WordReadings]) -> None:
        self.texts += 1
        for word in hebrew_words(text):
            figures = analyses[word]
            self.words += 1
            self.known += figures.known
            self.anaphors += figures.anaphoric_all
            self.anaphors_possible += figures.anaphoric_some
            self.construct += figures.construct_all
            self.construct_possible += figures.construct_some
            self.lemmas.update(figures.lemmas)

    def figures(self) -> dict:
        """FIGURES: the means are None without texts, `known_words` without Hebrew words."""
        per_text = (lambda count: count / self.texts) if self.texts else (lambda count: None)
        return {
            "lemmas": len(self.lemmas),
            "anaphors_mean": per_text(self.anaphors),
            "anaphors_possible_mean": per_text(self.anaphors_possible),
            "construct_mean": per_text(self.construct),
            "construct_possible_mean": per_text(self.construct_possible),
            "known_words": self.known / self.words if self.words else None,
        }


def words_of(texts: Iterable[str]) -> set[str]:
    """The distinct Hebrew words of `texts`, to analyse in one batch."""
    return {word for text in texts for word in hebrew_words(text)}
