r"""Offsets at the browser boundary: UTF-16 code units <-> Python code points.

Source: docs/text.md "Offsets". Answer spans are stored as offsets into the
stored paragraph counted in Unicode code points (Python ``str`` indices).
JavaScript strings, and so the browser's selection API, count UTF-16 code
units instead: a character outside the Basic Multilingual Plane (an emoji
such as U+1F600) is one code point but two code units (a surrogate pair).
Hebrew letters, niqqud (U+05B0-U+05C7), Persian letters, ZWNJ (U+200C) and
LRM/RLM (U+200E/U+200F) are all in the BMP: one code point, one code unit.

Convert once, where an offset enters or leaves the server, and store only
code points.

A span's edges must also fall on user-perceived character boundaries
(Unicode extended grapheme clusters, UAX #29, as the ``regex`` module's
``\X`` finds them): a niqqud point belongs to the letter before it, and a
ZWJ emoji sequence or a flag is one character however many code points it
holds. ``span_edge_problem`` is the one check every stored span goes through.

>>> text = "שלום 😀 עולם"
>>> codepoint_to_utf16(text, 7)  # after the emoji
8
>>> utf16_to_codepoint(text, 8)
7
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Literal

import regex

__all__ = [
    "utf16_to_codepoint",
    "codepoint_to_utf16",
    "span_matches",
    "grapheme_boundaries",
    "SpanProblem",
    "span_edge_problem",
]

_GRAPHEME = regex.compile(r"\X")

_FIRST_ASTRAL = 0x10000


def _units(ch: str) -> int:
    # A lone surrogate held in a Python str is one unit, as it is in JS.
    return 2 if ord(ch) >= _FIRST_ASTRAL else 1


def _check_int(offset: object) -> None:
    # bool is an int subclass; True as an offset is a bug, not 1.
    if not isinstance(offset, int) or isinstance(offset, bool):
        raise TypeError(f"offset must be an int, not {type(offset).__name__}")


def utf16_to_codepoint(text: str, utf16_offset: int) -> int:
    """Return the code-point offset in ``text`` at UTF-16 offset ``utf16_offset``.

    ``utf16_offset`` counts UTF-16 code units from the start of ``text`` and
    may equal the text's length in units (the end). Raises ValueError when it
    is negative, past the end, or between the two halves of a surrogate pair
    (no code-point offset corresponds to it).

    "a😀b" is 3 code points and 4 code units; unit offset 3 (before "b") is
    code point 2, unit offset 2 is inside the emoji:

    >>> utf16_to_codepoint("a😀b", 3)
    2
    >>> utf16_to_codepoint("a😀b", 2)
    Traceback (most recent call last):
    ...
    ValueError: UTF-16 offset 2 falls inside a surrogate pair
    """
    _check_int(utf16_offset)
    if utf16_offset < 0:
        raise ValueError(f"UTF-16 offset {utf16_offset} is negative")
    units = 0
    for index, ch in enumerate(text):
        if units == utf16_offset:
            return index
        units += _units(ch)
        if units > utf16_offset:
            raise ValueError(f"UTF-16 offset {utf16_offset} falls inside a surrogate pair")
    if units == utf16_offset:
        return len(text)
    raise ValueError(f"UTF-16 offset {utf16_offset} is past the end of the text ({units} units)")


def codepoint_to_utf16(text: str, cp_offset: int) -> int:
    """Return the UTF-16 code-unit offset of code-point offset ``cp_offset``.

    ``cp_offset`` is a Python index into ``text``, from 0 to ``len(text)``
    inclusive. Raises ValueError when it is outside that range (negative
    offsets are refused rather than counted from the end).

    >>> codepoint_to_utf16("😀😀x", 2)
    4
    """
    _check_int(cp_offset)
    if not 0 <= cp_offset <= len(text):
        raise ValueError(f"code-point offset {cp_offset} is outside 0..{len(text)}")
    return cp_offset + sum(1 for ch in text[:cp_offset] if ord(ch) >= _FIRST_ASTRAL)


def span_matches(text: str, start: int, span_text: str) -> bool:
    """Say whether ``span_text`` is the slice of ``text`` starting at ``start``.

    ``start`` counts code points. True only when ``span_text`` is non-empty,
    ``0 <= start`` and the span ends within ``text``, and the slice equals
    ``span_text`` exactly: no normalisation, so a missing ZWNJ or niqqud
    mark is a mismatch (docs/text.md "Offsets": the span text must equal the
    paragraph slice).

    >>> span_matches("אתמול הייתי בבית.", 12, "בבית")
    True
    >>> span_matches("אתמול הייתי בבית.", 13, "בבית")
    False
    """
    if not span_text or isinstance(start, bool) or not isinstance(start, int):
        return False
    if start < 0 or start + len(span_text) > len(text):
        return False
    return text[start : start + len(span_text)] == span_text


def grapheme_boundaries(text: str) -> frozenset[int]:
    """The code-point offsets of ``text`` where an extended grapheme cluster
    starts or ends (UAX #29), 0 and ``len(text)`` included.

    A pointed letter (shin, shin dot, qamats) is one cluster of three code
    points; a flag is two regional indicators in one cluster:

    >>> sorted(grapheme_boundaries("\u05e9\u05c1\u05b8\u05dc"))
    [0, 3, 4]
    >>> sorted(grapheme_boundaries("\U0001f1ee\U0001f1f1x"))
    [0, 2, 3]
    """
    return frozenset([0, *(match.end() for match in _GRAPHEME.finditer(text))])


@dataclass(frozen=True)
class SpanProblem:
    """Why a span cannot be stored. ``edge`` says which part is wrong:
    "start" (the first offset), "end" (where the span's text ends) or "text"
    (what it holds); ``position`` is the code point where the fault sits (start or end).
    ``message`` is the English sentence, for logs; the sentence a person reads is built
    where the problem reaches them, in their language (annotation.wording.span_problem_text)."""

    edge: Literal["start", "end", "text"]
    message: str
    position: int = 0


def _invisible(ch: str) -> bool:
    # Whitespace, and format characters (ZWNJ, ZWJ, LRM/RLM) that show nothing by themselves.
    return ch.isspace() or unicodedata.category(ch) == "Cf"


def span_edge_problem(text: str, start: int, span_text: str) -> SpanProblem | None:
    """Say why the span ``span_text`` at code point ``start`` of ``text``
    cannot be an answer, or None when it can.

    Precondition: ``span_matches(text, start, span_text)``. Refused: a span
    that holds nothing visible (only whitespace or format characters such as
    ZWNJ, LRM/RLM), and a span whose start or end falls inside an extended
    grapheme cluster (it would keep a niqqud point without its letter, or
    half an emoji sequence).

    >>> span_edge_problem("\u05e9\u05c1\u05b8\u05dc", 1, "\u05c1\u05b8\u05dc").edge
    'start'
    >>> span_edge_problem("\u05e9\u05c1\u05b8\u05dc", 0, "\u05e9").edge
    'end'
    >>> span_edge_problem("a  b", 1, "  ").edge
    'text'
    >>> span_edge_problem("\u05e9\u05c1\u05b8\u05dc", 0, "\u05e9\u05c1\u05b8") is None
    True
    """
    if all(_invisible(ch) for ch in span_text):
        return SpanProblem("text", "holds only whitespace or invisible characters")
    boundaries = grapheme_boundaries(text)
    if start not in boundaries:
        return SpanProblem(
            "start",
            f"code point {start} falls inside a character (a mark, or part of an emoji "
            "sequence, belongs with the character before it)",
            start,
        )
    end = start + len(span_text)
    if end not in boundaries:
        return SpanProblem(
            "end",
            f"the span ends at code point {end}, inside a character (the marks or emoji parts after it belong to it)",
            end,
        )
    return None
