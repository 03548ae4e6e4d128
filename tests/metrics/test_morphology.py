"""Span snapping and prefix variants (annotation/metrics/morphology.py, HeQ §2 and §4) on the
table of cases that tests/kinds/qa/test_span_snapping.py also runs in Chromium against
static/qa/morphology.js."""

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from annotation.metrics.morphology import TRAILING_PUNCTUATION, prefix_lengths, snap_selection, span_variants

CASES = json.loads((Path(__file__).resolve().parents[1] / "kinds" / "qa" / "span_cases.json").read_text("utf-8"))[
    "cases"
]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_table_of_cases(case):
    text = case["text"]
    snapped = snap_selection(text, *case["selection"])
    assert list(snapped) == case["snapped"]
    assert [list(v) for v in span_variants(text, *snapped)] == case["variants"]


def test_hebrew_prefix_sequences():
    assert prefix_lengths("בבית") == [0, 1]  # ב + בית (HeQ §2's example)
    assert prefix_lengths("וכשהבית") == [0, 1, 2, 3, 4]  # ו, ו+כ, ו+כש, ו+כש+ה
    assert prefix_lengths("ומהבית") == [0, 1, 2, 3]  # ו, ו+מ, ו+מ+ה
    assert prefix_lengths("בית") == [0]  # a stem of three letters keeps them
    assert prefix_lengths("הבבית") == [0, 1]  # ה closes the sequence: no ב after it
    assert prefix_lengths("کتاب") == [0]  # Persian has no such prefixes here
    assert prefix_lengths("לקו") == [0] and prefix_lengths("לקו", 2) == [0, 1]  # two-letter stems on request
    assert prefix_lengths("ה-19", 2) == [0, 2]  # the hyphen goes with the prefix


def test_prefix_readings_offered_only_where_they_are_likely():
    from annotation.metrics.morphology import offered_prefix_lengths

    def offered(text, word):
        start = text.index(word)
        return [word[n:] for n in offered_prefix_lengths(text, start, start + len(word))]

    assert offered("גרנו בבית ישן", "בבית") == ["בבית", "בית"]
    assert offered("הגיעו מבקרים", "מבקרים") == ["מבקרים"]  # the participle's מ, not "from"
    assert offered("הגיעו מבקרים, והבקרים היו קרים", "מבקרים") == ["מבקרים", "בקרים"]  # בקרים is in the text
    assert offered("שלום לכולם", "שלום") == ["שלום"]
    assert offered("שחינו בים", "בים") == ["בים"]
    assert offered("ראינו ים כחול ושחינו בים", "בים") == ["בים", "ים"]


TEXT_CHARS = st.sampled_from(list("בהוכלמשתיםאר \u200cکتابی.,\"'😀Ab1\u05b7\u05bc-٫۱"))


@given(st.text(TEXT_CHARS, max_size=30), st.data())
def test_snapping_only_grows_and_variants_are_exact_slices(text, data):
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    s, e = snap_selection(text, start, end)
    if start < end:
        # Snapping grows a selection to word edges; it leaves out only sentence punctuation at the end.
        assert s <= start and (e >= end or set(text[e:end]) <= TRAILING_PUNCTUATION)
        assert snap_selection(text, s, e) == (s, e)  # snapping twice changes nothing
    variants = span_variants(text, s, e)
    assert (s, e) in variants
    assert all(b == e and 0 <= a <= b <= len(text) for a, b in variants)
    assert variants == sorted(variants)
