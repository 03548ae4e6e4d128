"""Offsets at the browser boundary: UTF-16 code units <-> Python code points.

Source: DESIGN.md section 6. Answer spans are stored as offsets into the
stored paragraph counted in Unicode code points (Python ``str`` indices).
JavaScript strings, and so the browser's selection API, count UTF-16 code
units instead: a character outside the Basic Multilingual Plane (an emoji
such as U+1F600) is one code point but two code units (a surrogate pair).
Hebrew letters, niqqud (U+05B0-U+05C7), Persian letters, ZWNJ (U+200C) and
LRM/RLM (U+200E/U+200F) are all in the BMP: one code point, one code unit.

Convert once, where an offset enters or leaves the server, and store only
code points.

>>> text = "שלום 😀 עולם"
>>> codepoint_to_utf16(text, 7)  # after the emoji
8
>>> utf16_to_codepoint(text, 8)
7
"""

from __future__ import annotations

__all__ = ["utf16_to_codepoint", "codepoint_to_utf16", "span_matches"]

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
            raise ValueError(
                f"UTF-16 offset {utf16_offset} falls inside a surrogate pair"
            )
    if units == utf16_offset:
        return len(text)
    raise ValueError(
        f"UTF-16 offset {utf16_offset} is past the end of the text ({units} units)"
    )


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
        raise ValueError(
            f"code-point offset {cp_offset} is outside 0..{len(text)}"
        )
    return cp_offset + sum(1 for ch in text[:cp_offset] if ord(ch) >= _FIRST_ASTRAL)


def span_matches(text: str, start: int, span_text: str) -> bool:
    """Say whether ``span_text`` is the slice of ``text`` starting at ``start``.

    ``start`` counts code points. True only when ``span_text`` is non-empty,
    ``0 <= start`` and the span ends within ``text``, and the slice equals
    ``span_text`` exactly: no normalisation, so a missing ZWNJ or niqqud
    mark is a mismatch (DESIGN.md section 6: the span text must equal the
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
