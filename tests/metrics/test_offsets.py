"""Tests for annotation.metrics.offsets (docs/text.md "Offsets")."""

import doctest
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from annotation.metrics import offsets
from annotation.metrics.offsets import (
    codepoint_to_utf16,
    span_matches,
    utf16_to_codepoint,
)

PROJECT_ROOT = Path(__file__).resolve().parents[2]

ZWNJ = "\u200c"
LRM = "\u200e"
RLM = "\u200f"
GRIN = "\U0001f600"


def utf16_length(text):
    return len(text.encode("utf-16-le")) // 2


# Hebrew letters, every niqqud/cantillation point in U+05B0-U+05C7, Persian
# letters with ZWNJ, Latin, digits, bidi marks and characters outside the BMP.
characters = st.one_of(
    st.sampled_from("אבגדהוזחטיכלמנסעפצקרשת"),
    st.characters(min_codepoint=0x05B0, max_codepoint=0x05C7),
    st.sampled_from("پچژگیکه" + ZWNJ),
    st.sampled_from("abcXYZ 0123456789"),
    st.sampled_from(LRM + RLM),
    st.sampled_from([GRIN, "\U0001f44d", "\U00020000", "\U0001d11e"]),
)
mixed_texts = st.lists(characters, max_size=40).map("".join)


@pytest.mark.parametrize(
    ("text", "cp", "units"),
    [
        ("", 0, 0),
        ("שלום", 4, 4),
        # Niqqud, ZWNJ and bidi marks are BMP: one unit each.
        ("ב\u05bc\u05b7י\u05b4ת", 6, 6),
        ("می" + ZWNJ + "خواهم", 3, 3),
        (RLM + "abc" + LRM, 5, 5),
        # Each emoji takes two units.
        (GRIN, 1, 2),
        ("a" + GRIN + "b", 2, 3),
        ("a" + GRIN + "b", 3, 4),
        (GRIN + GRIN + "x", 2, 4),
        ("שלום " + GRIN + " 2024", 7, 8),
    ],
)
def test_conversion_table(text, cp, units):
    assert codepoint_to_utf16(text, cp) == units
    assert utf16_to_codepoint(text, units) == cp


def test_inside_a_surrogate_pair_is_refused():
    with pytest.raises(ValueError, match="surrogate pair"):
        utf16_to_codepoint("a" + GRIN + "b", 2)
    with pytest.raises(ValueError, match="surrogate pair"):
        utf16_to_codepoint(GRIN, 1)


@pytest.mark.parametrize("offset", [-1, 5])
def test_utf16_offset_out_of_range(offset):
    with pytest.raises(ValueError):
        utf16_to_codepoint("a" + GRIN + "b", offset)


@pytest.mark.parametrize("offset", [-1, 4])
def test_codepoint_offset_out_of_range(offset):
    with pytest.raises(ValueError):
        codepoint_to_utf16("a" + GRIN + "b", offset)


@pytest.mark.parametrize("offset", [1.0, "1", True, None])
def test_offset_must_be_an_int(offset):
    with pytest.raises(TypeError):
        utf16_to_codepoint("abc", offset)
    with pytest.raises(TypeError):
        codepoint_to_utf16("abc", offset)


@pytest.mark.parametrize(
    ("text", "start", "span_text", "expected"),
    [
        ("אתמול הייתי בבית.", 12, "בבית", True),
        ("אתמול הייתי בבית.", 13, "בית", True),
        ("אתמול הייתי בבית.", 13, "בבית", False),
        # Exact comparison: dropping the ZWNJ is a mismatch.
        ("می" + ZWNJ + "خواهم", 0, "می" + ZWNJ + "خواهم", True),
        ("می" + ZWNJ + "خواهم", 0, "میخواهم", False),
        # A UTF-16 start passed by mistake points one code point too far.
        (GRIN + " בית", 2, "בית", True),
        (GRIN + " בית", 3, "בית", False),
        # Empty spans, negative starts and spans running past the end.
        ("בית", 0, "", False),
        ("בית", -1, "ת", False),
        ("בית", 2, "תת", False),
        ("בית", 3, "", False),
        ("בית", 0, "בית", True),
    ],
)
def test_span_matches(text, start, span_text, expected):
    assert span_matches(text, start, span_text) is expected


@given(text=mixed_texts)
def test_total_length_agrees_with_utf16_encoding(text):
    units = utf16_length(text)
    assert codepoint_to_utf16(text, len(text)) == units
    assert utf16_to_codepoint(text, units) == len(text)


@given(text=mixed_texts, data=st.data())
def test_codepoint_round_trip(text, data):
    cp = data.draw(st.integers(0, len(text)))
    units = codepoint_to_utf16(text, cp)
    # The prefix's UTF-16 encoding has exactly that many units.
    assert units == utf16_length(text[:cp])
    assert utf16_to_codepoint(text, units) == cp


@given(text=mixed_texts, data=st.data())
def test_utf16_round_trip_or_refusal(text, data):
    units = data.draw(st.integers(0, utf16_length(text)))
    encoded = text.encode("utf-16-le")
    try:
        cp = utf16_to_codepoint(text, units)
    except ValueError:
        # Refused only when the unit before the offset is a high surrogate.
        high = int.from_bytes(encoded[2 * units - 2 : 2 * units], "little")
        assert 0xD800 <= high <= 0xDBFF
    else:
        assert codepoint_to_utf16(text, cp) == units
        assert encoded[: 2 * units].decode("utf-16-le") == text[:cp]


@given(text=mixed_texts, data=st.data())
def test_slices_always_match(text, data):
    assume(text)
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    assert span_matches(text, start, text[start:end])


@given(text=mixed_texts, offset=st.integers(min_value=1))
def test_past_the_end_is_refused(text, offset):
    with pytest.raises(ValueError):
        utf16_to_codepoint(text, utf16_length(text) + offset)
    with pytest.raises(ValueError):
        codepoint_to_utf16(text, len(text) + offset)


@pytest.mark.parametrize(
    "text, start, span_text, edge",
    [
        ("\u05e9\u05c1\u05b8\u05dc", 1, "\u05c1\u05b8\u05dc", "start"),  # a point without its letter
        ("\u05e9\u05c1\u05b8\u05dc", 0, "\u05e9\u05c1", "end"),  # shin without its qamats
        ("\U0001f469\u200d\U0001f4bb!", 0, "\U0001f469", "end"),  # half a ZWJ sequence
        ("\U0001f1ee\U0001f1f1!", 1, "\U0001f1f1!", "start"),  # half a flag
        ("a \t b", 1, " \t ", "text"),
        (f"a {ZWNJ}{RLM} b", 1, f" {ZWNJ}{RLM} ", "text"),
        ("e\u0301x", 0, "e\u0301", None),
        ("\U0001f469\u200d\U0001f4bb!", 0, "\U0001f469\u200d\U0001f4bb", None),
    ],
)
def test_span_edge_problem(text, start, span_text, edge):
    problem = offsets.span_edge_problem(text, start, span_text)
    assert (problem.edge if problem else None) == edge


@given(st.text(characters, min_size=1, max_size=30), st.data())
def test_span_edges_refused_exactly_inside_clusters(text, data):
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    span_text = text[start:end]
    assume(not all(ch.isspace() or ch in (ZWNJ, LRM, RLM) for ch in span_text))
    boundaries = offsets.grapheme_boundaries(text)
    problem = offsets.span_edge_problem(text, start, span_text)
    assert (problem is None) == (start in boundaries and end in boundaries)


def test_docstring_examples():
    failures, _ = doctest.testmod(offsets)
    assert failures == 0


def test_module_does_not_import_django():
    code = (
        "import sys, annotation.metrics.offsets; "
        "assert not any(m == 'django' or m.startswith('django.') for m in sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, check=True)
