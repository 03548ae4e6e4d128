"""Jaccard overlap per class and type-token ratio bins (annotation/metrics/lexical.py)."""

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from annotation.metrics.lexical import jaccard, jaccard_by_class, ttr_bin, type_token_ratio

words = st.lists(st.sampled_from(["של", "הוא", "ספר", "a", "b", "کتاب"]), max_size=12)


def test_imports_no_django():
    code = "import sys, annotation.metrics.lexical; print('django' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


@given(words, words)
def test_jaccard_is_symmetric_bounded_and_one_on_the_same_set(a, b):
    assert jaccard(a, b) == jaccard(b, a)
    assert 0.0 <= jaccard(a, b) <= 1.0
    assert jaccard(a, a) == (1.0 if a else 0.0)
    # Against the definition on sets.
    if set(a) | set(b):
        assert jaccard(a, b) == pytest.approx(len(set(a) & set(b)) / len(set(a) | set(b)))


@given(st.lists(st.tuples(words, words, st.sampled_from(["entailment", "contradiction", "neutral"])), max_size=20))
def test_per_class_means_count_every_pair_once(rows):
    result = jaccard_by_class([p for p, _, _ in rows], [h for _, h, _ in rows], [label for _, _, label in rows])
    assert sum(row["items"] for row in result.values()) == len(rows)
    for label, row in result.items():
        mine = [jaccard(p, h) for p, h, lab in rows if lab == label]
        assert row["jaccard"] == pytest.approx(sum(mine) / len(mine))


@given(words)
def test_ttr_is_a_share_and_its_bin_holds_it(tokens):
    value = type_token_ratio(tokens)
    if not tokens:
        assert value is None and ttr_bin(value) == ""
        return
    assert 0.0 < value <= 1.0
    low, high = map(float, ttr_bin(value).split("-"))
    assert low <= value <= high and high - low == pytest.approx(0.1)


@given(st.floats(0.0, 1.0))
def test_every_share_falls_in_one_of_ten_bins(value):
    assert ttr_bin(value) in {f"{i / 10:.1f}-{(i + 1) / 10:.1f}" for i in range(10)}
