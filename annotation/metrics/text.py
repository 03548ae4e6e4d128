"""Text checks and the one matching normalisation (DESIGN.md §6). Pure: no Django.

Stored text is never normalised. `fold_for_matching` exists only for comparisons
(agreement, consensus, EM/F1/TLNLS, duplicate search)."""

import math
import unicodedata

# Bidi embedding/override (U+202A-U+202E) and isolate (U+2066-U+2069) controls. LRM/RLM
# (U+200E/U+200F) and ZWNJ (U+200C) are ordinary in Hebrew and Persian and are not here.
BIDI_CONTROLS = frozenset(chr(c) for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)])

_ARABIC_TO_PERSIAN = str.maketrans({"\u064a": "\u06cc", "\u0643": "\u06a9", "\u0649": "\u06cc"})
_DIGITS_TO_ASCII = str.maketrans(
    {**{chr(0x06F0 + d): str(d) for d in range(10)}, **{chr(0x0660 + d): str(d) for d in range(10)}}
)


def forbidden_character(text: str) -> str | None:
    """Why `text` cannot be stored, or None. NUL is refused by PostgreSQL text columns and a
    lone surrogate cannot be encoded as UTF-8, so both are refused at the door.

    >>> forbidden_character("שלום")
    >>> forbidden_character("a\\x00b")
    'contains a NUL character at position 1'
    """
    for index, char in enumerate(text):
        if char == "\x00":
            return f"contains a NUL character at position {index}"
        if "\ud800" <= char <= "\udfff":
            return f"contains a lone surrogate (U+{ord(char):04X}) at position {index}"
    return None


def bidi_control(text: str) -> str | None:
    """The first bidi embedding/override/isolate control in `text`, described, or None.
    Identifiers (usernames, labels, slugs, titles) that carry one are refused."""
    for index, char in enumerate(text):
        if char in BIDI_CONTROLS:
            return f"contains the bidi control U+{ord(char):04X} at position {index}"
    return None


def fold_for_matching(text: str, *, persian_letters: bool = False) -> str:
    """NFC, Persian and Arabic-Indic digits to ASCII, and (when the project asks) Arabic
    yeh/kaf to their Persian forms. For comparisons only; never store the result.

    >>> fold_for_matching("۱۲٣")
    '123'
    >>> fold_for_matching("كتاب", persian_letters=True) == "کتاب"
    True
    """
    folded = unicodedata.normalize("NFC", text).translate(_DIGITS_TO_ASCII)
    if persian_letters:
        folded = folded.translate(_ARABIC_TO_PERSIAN)
    return folded


def first_forbidden_string(value, path: str = "") -> tuple[str, str] | None:
    """The first string (key or value) inside a JSON-like structure that cannot be stored,
    as (field path, reason), or None; likewise a NaN or infinite float, which jsonb refuses.
    A bad key is reported as `<key>` under its parent, since the key itself cannot be
    echoed back.

    >>> first_forbidden_string({"a": ["ok", "x\\x00"]})
    ('a[1]', 'contains a NUL character at position 1')
    >>> first_forbidden_string({"extra": {"score": float("nan")}})
    ('extra.score', 'is not a finite number')
    """
    if isinstance(value, float) and not math.isfinite(value):
        return (path, "is not a finite number")
    if isinstance(value, str):
        reason = forbidden_character(value)
        return (path, reason) if reason else None
    if isinstance(value, dict):
        for key, inner in value.items():
            key_reason = forbidden_character(key) if isinstance(key, str) else None
            if key_reason:
                return (f"{path}.<key>" if path else "<key>", key_reason.replace("position", "key position"))
            found = first_forbidden_string(inner, f"{path}.{key}" if path else str(key))
            if found:
                return found
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found = first_forbidden_string(inner, f"{path}[{index}]")
            if found:
                return found
    return None
