"""Text checks and the one matching normalisation (docs/text.md "Matching"). Pure: no Django.

Stored text is never normalised. `fold_for_matching` exists only for comparisons
(agreement, consensus, EM/F1/TLNLS, duplicate search)."""

import math
import re
import unicodedata
from dataclasses import dataclass, replace

# Bidi embedding/override (U+202A-U+202E) and isolate (U+2066-U+2069) controls. LRM/RLM
# (U+200E/U+200F) and ZWNJ (U+200C) are ordinary in Hebrew and Persian and are not here.
BIDI_CONTROLS = frozenset(chr(c) for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)])
_BIDI_CONTROL = re.compile("[" + "".join(sorted(BIDI_CONTROLS)) + "]")

# What `forbidden_character` refuses: NUL and lone surrogates.
_FORBIDDEN = re.compile("[\x00\ud800-\udfff]")

_ARABIC_TO_PERSIAN = str.maketrans({"\u064a": "\u06cc", "\u0643": "\u06a9", "\u0649": "\u06cc"})
_DIGITS_TO_ASCII = str.maketrans(
    {**{chr(0x06F0 + d): str(d) for d in range(10)}, **{chr(0x0660 + d): str(d) for d in range(10)}}
)


@dataclass(frozen=True)
class TextFault:
    """Why a text cannot be stored or cannot name anything, as facts and not as words: `what`
    (NUL, SURROGATE, BIDI_CONTROL or NOT_FINITE), the character's code point (`code`, e.g.
    "U+202E"), its `position` in code points from 0, and `in_key` when it sits in an object
    key rather than a value. The metrics stay free of Django, so the sentence a person reads
    is built where the fault reaches them, in their language (annotation.wording.fault_text);
    str() is the English sentence, for logs and the command line.

    >>> str(TextFault(NUL, 3))
    'contains a NUL character at position 3'
    """

    what: str
    position: int = 0
    code: str = ""
    in_key: bool = False

    def __str__(self) -> str:
        where = f"at key position {self.position}" if self.in_key else f"at position {self.position}"
        if self.what == NUL:
            return f"contains a NUL character {where}"
        if self.what == SURROGATE:
            return f"contains a lone surrogate ({self.code}) {where}"
        if self.what == BIDI_CONTROL:
            return f"contains the bidi control {self.code} {where}"
        return "is not a finite number"


NUL, SURROGATE, BIDI_CONTROL, NOT_FINITE = "nul", "surrogate", "bidi_control", "not_finite"


def _code_point(char: str) -> str:
    return f"U+{ord(char):04X}"


def forbidden_character(text: str) -> TextFault | None:
    """Why `text` cannot be stored, or None. NUL is refused by PostgreSQL text columns and a
    lone surrogate cannot be encoded as UTF-8, so both are refused at the door.

    >>> forbidden_character("שלום")
    >>> forbidden_character("a\\x00b")
    TextFault(what='nul', position=1, code='U+0000', in_key=False)
    """
    found = _FORBIDDEN.search(text)  # one C-speed scan: imports check every string
    if found is None:
        return None
    char = found.group()
    return TextFault(NUL if char == "\x00" else SURROGATE, found.start(), _code_point(char))


def may_hold_unstorable_text(data: bytes | str) -> bool:
    """Whether a string parsed from a UTF-8 file's JSON or CSV may hold a NUL or a lone
    surrogate: only through a NUL character or a JSON \\u escape (valid UTF-8 encodes no
    surrogate). When not, checking every parsed string (`first_forbidden_string`) finds
    nothing. Two substring searches over the whole file.

    >>> may_hold_unstorable_text(b'{"a": "\\\\u0000"}'), may_hold_unstorable_text('{"a": "שלום"}')
    (True, False)
    """
    if isinstance(data, str):
        return "\x00" in data or "\\u" in data
    return b"\x00" in data or b"\\u" in data


def bidi_control(text: str) -> TextFault | None:
    """The first bidi embedding/override/isolate control in `text` and where it is, or None.
    Identifiers (usernames, labels, slugs, titles) that carry one are refused.

    >>> str(bidi_control("ab\\u202ec"))
    'contains the bidi control U+202E at position 2'
    """
    found = _BIDI_CONTROL.search(text)  # one C-speed scan: imports check every identifier
    if found is None:
        return None
    return TextFault(BIDI_CONTROL, found.start(), _code_point(found.group()))


def fold_for_matching(text: str, *, persian_letters: bool = False) -> str:
    """NFC, Persian and Arabic-Indic digits to ASCII, and (when the project asks) Arabic
    yeh/kaf to their Persian forms. For comparisons only; never store the result.

    `persian_letters` is the project setting `fold_letter_variants` (on by default for
    Persian projects): FarsTail's text mixes Arabic yeh (U+064A), alef maksura (U+0649)
    and kaf (U+0643) with Persian yeh (U+06CC) and keheh (U+06A9), which look alike and
    read alike, so "كتاب علي" and "کتاب علی" are the same words. Elsewhere the letters
    are different ones and stay apart unless the project asks.

    >>> fold_for_matching("۱۲٣")
    '123'
    >>> fold_for_matching("كتاب", persian_letters=True) == "کتاب"
    True
    """
    folded = unicodedata.normalize("NFC", text).translate(_DIGITS_TO_ASCII)
    if persian_letters:
        folded = folded.translate(_ARABIC_TO_PERSIAN)
    return folded


def first_forbidden_string(value, path: str = "") -> tuple[str, TextFault] | None:
    """The first string (key or value) inside a JSON-like structure that cannot be stored,
    as (field path, fault), or None; likewise a NaN or infinite float, which jsonb refuses.
    A bad key is reported as `<key>` under its parent (`in_key`), since the key itself
    cannot be echoed back.

    >>> path, fault = first_forbidden_string({"a": ["ok", "x\\x00"]})
    >>> path, str(fault)
    ('a[1]', 'contains a NUL character at position 1')
    >>> path, fault = first_forbidden_string({"extra": {"score": float("nan")}})
    >>> path, str(fault)
    ('extra.score', 'is not a finite number')
    """
    if isinstance(value, float) and not math.isfinite(value):
        return (path, TextFault(NOT_FINITE))
    if isinstance(value, str):
        fault = forbidden_character(value)
        return (path, fault) if fault else None
    if isinstance(value, dict):
        for key, inner in value.items():
            key_fault = forbidden_character(key) if isinstance(key, str) else None
            if key_fault:
                return (f"{path}.<key>" if path else "<key>", replace(key_fault, in_key=True))
            found = first_forbidden_string(inner, f"{path}.{key}" if path else str(key))
            if found:
                return found
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found = first_forbidden_string(inner, f"{path}[{index}]")
            if found:
                return found
    return None


# General categories that draw nothing on their own: separators (spaces, line and paragraph
# separators), controls, format characters (ZWNJ, ZWJ, LRM, RLM, ZWSP, BOM, soft hyphen)
# and combining marks. Plus the letters and symbols Unicode defines as blank: the Hangul
# fillers (Default_Ignorable_Code_Point in DerivedCoreProperties.txt) and the braille blank.
_INVISIBLE_CATEGORIES = frozenset({"Zs", "Zl", "Zp", "Cc", "Cf", "Mn", "Me"})
_BLANK_CHARACTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")


def visible_length(text: str) -> int:
    """How many characters of `text` show something on screen; a combining mark counts
    only through the letter it sits on.

    >>> visible_length("\\u200f" * 8), visible_length(" a b "), visible_length("רמז\\u200cעבור")
    (0, 2, 7)
    """
    return sum(
        1 for char in text if char not in _BLANK_CHARACTERS and unicodedata.category(char) not in _INVISIBLE_CATEGORIES
    )


def scripts_of(text: str) -> frozenset[str]:
    """The scripts of `text`'s letters (Unicode Scripts.txt, through confusable_homoglyphs),
    leaving out Common (digits, punctuation) and Inherited (combining marks).

    >>> sorted(scripts_of("dana.כהן1"))
    ['HEBREW', 'LATIN']
    """
    from confusable_homoglyphs.categories import unique_aliases

    return frozenset(unique_aliases(text)) - {"COMMON", "INHERITED"}


def _look_alike(a: str, b: str, homoglyphs: dict) -> bool:
    """One character each; alike when equal, when one is the other's prototype in Unicode's
    confusables.txt, or when both share a prototype (Cyrillic о and Greek ο are both o)."""
    if a == b:
        return True
    glyphs_a = {a, *(entry["c"] for entry in homoglyphs.get(a, ()))}
    glyphs_b = {b, *(entry["c"] for entry in homoglyphs.get(b, ()))}
    return not glyphs_a.isdisjoint(glyphs_b)


def imitates_across_scripts(candidate: str, existing: str) -> bool:
    """True when `candidate` reads as `existing` letter for letter (ignoring case) but is
    written with other scripts: a mixed-script spoof such as Cyrillic "аdmin" for "admin",
    or a whole-script one such as Cyrillic "соса" for "coca" (Unicode TR39 §4). Look-alikes
    within one script (l and 1, rn and m) are a matter of fonts and are not counted, so
    names in one script, Hebrew or Persian among them, are never refused for each other.
    Compare NFKC-normalised names: fullwidth and other compatibility forms fold there.

    >>> imitates_across_scripts("\\u0430dmin", "admin"), imitates_across_scripts("user1", "userl")
    (True, False)
    >>> imitates_across_scripts("\\u0430dmin", "bdmin"), imitates_across_scripts("דנה", "dana")
    (False, False)
    """
    from confusable_homoglyphs.confusables import confusables_data

    candidate_folded, existing_folded = candidate.casefold(), existing.casefold()
    if candidate_folded == existing_folded or len(candidate_folded) != len(existing_folded):
        return False
    if scripts_of(candidate) == scripts_of(existing):
        return False
    return all(_look_alike(a, b, confusables_data) for a, b in zip(candidate_folded, existing_folded))


# The Unicode blocks of each project language's script, for `script_share`. Hebrew: the
# Hebrew block and the Hebrew presentation forms. Arabic script (Persian, Arabic, Urdu...):
# Arabic, Arabic Supplement, Arabic Extended-A/B and both presentation-form blocks (text
# copied from old PDFs arrives in presentation forms). Latin: Basic Latin, Latin-1, Latin
# Extended-A/B and Additional. Cyrillic for Russian.
_HEBREW = ((0x0590, 0x05FF), (0xFB1D, 0xFB4F))
_ARABIC = ((0x0600, 0x06FF), (0x0750, 0x077F), (0x0870, 0x08FF), (0xFB50, 0xFDFF), (0xFE70, 0xFEFF))
_LATIN = ((0x0041, 0x007A), (0x00C0, 0x024F), (0x1E00, 0x1EFF))
_CYRILLIC = ((0x0400, 0x052F),)
SCRIPT_BLOCKS = {
    "he": _HEBREW,
    "yi": _HEBREW,
    "fa": _ARABIC,
    "ar": _ARABIC,
    "ur": _ARABIC,
    "ps": _ARABIC,
    "ckb": _ARABIC,
    "en": _LATIN,
    "de": _LATIN,
    "fr": _LATIN,
    "es": _LATIN,
    "tr": _LATIN,
    "ru": _CYRILLIC,
}


def script_share(text: str, language: str) -> float | None:
    """The share of `text`'s letters (general category L*) that are written in the script
    of `language` (SCRIPT_BLOCKS), or None when the text has no letters or the language's
    script is not known. Digits, punctuation, spaces and marks are not letters and do not
    count either way, so a Hebrew article full of numbers and English brand names still
    reads as Hebrew.

    >>> script_share("שלום news", "he"), script_share("2025!", "he"), script_share("سلام", "fa")
    (0.5, None, 1.0)
    """
    blocks = SCRIPT_BLOCKS.get(language)
    if blocks is None:
        return None
    letters = in_script = 0
    for char in text:
        if unicodedata.category(char).startswith("L"):
            letters += 1
            point = ord(char)
            in_script += any(low <= point <= high for low, high in blocks)
    return in_script / letters if letters else None
