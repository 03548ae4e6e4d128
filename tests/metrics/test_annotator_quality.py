"""annotation.metrics.annotator_quality: agreement with a reference and Cohen's kappa (against
scikit-learn and by the formula), plurality and medians, on plain data."""

import statistics
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from annotation.metrics.annotator_quality import compare_with_reference, median_seconds, plurality

LABELS = ("entailment", "neutral", "contradiction")
pairs_of = st.lists(st.tuples(st.sampled_from(LABELS), st.sampled_from(LABELS)), max_size=40)


def test_no_django_import():
    code = "import sys, annotation.metrics.annotator_quality; print('django' in sys.modules)"
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
        == "False"
    )


def test_hand_computed_kappa():
    # p_o = 2/3; p_e = (1/3)(1/3) + (2/3)(1/3) = 1/3; kappa = (2/3 - 1/3) / (2/3) = 0.5
    result = compare_with_reference(
        [("entailment", "entailment"), ("contradiction", "neutral"), ("contradiction", "contradiction")], labels=LABELS
    )
    assert (result.items, result.agree) == (3, 2)
    assert result.kappa == 0.5


def test_undefined_cases():
    assert compare_with_reference([], labels=LABELS).kappa is None
    assert compare_with_reference([], labels=LABELS).share is None
    one_label = compare_with_reference([("neutral", "neutral")] * 3, labels=LABELS)
    assert (one_label.share, one_label.kappa) == (1.0, None)


@settings(deadline=None)  # scikit-learn's first call is slow
@given(pairs_of)
def test_kappa_is_scikit_learns_and_share_counts_equal_pairs(pairs):
    result = compare_with_reference(pairs, labels=LABELS)
    assert result.items == len(pairs)
    assert result.agree == sum(a == b for a, b in pairs)
    if not pairs:
        return
    assert result.share == result.agree / len(pairs)
    observed = result.agree / len(pairs)
    mine = [a for a, _ in pairs]
    reference = [b for _, b in pairs]
    expected = sum(mine.count(label) * reference.count(label) for label in LABELS) / len(pairs) ** 2
    if expected == 1:
        assert result.kappa is None
    else:
        assert result.kappa == pytest.approx(cohen_kappa_score(mine, reference), rel=1e-9, abs=1e-12)
        assert result.kappa == pytest.approx((observed - expected) / (1 - expected), rel=1e-6, abs=1e-9)
        assert -1 <= result.kappa <= 1


@given(st.lists(st.sampled_from(LABELS), max_size=12))
def test_plurality_is_the_unique_most_common_label(labels):
    top = plurality(labels)
    if top is None:
        counts = sorted((labels.count(label) for label in set(labels)), reverse=True)
        assert not labels or (len(counts) > 1 and counts[0] == counts[1])
    else:
        assert all(labels.count(top) > labels.count(other) for other in set(labels) - {top})


@given(st.lists(st.floats(min_value=0, max_value=1e6), max_size=30))
def test_median_is_the_statistics_median(values):
    assert median_seconds(values) == (statistics.median(values) if values else None)
    assert median_seconds([10.0, 20.0, 30.0, 40.0]) == 25.0


@given(st.lists(st.integers(min_value=0, max_value=5000), max_size=40))
def test_median_of_counts_is_the_median_of_the_durations_counted(keys):
    from collections import Counter

    from annotation.metrics.annotator_quality import SECONDS_RESOLUTION, median_of_counts

    if not keys:
        assert median_of_counts(Counter(keys)) is None
        return
    expected = statistics.median([key * SECONDS_RESOLUTION for key in keys])
    assert median_of_counts(Counter(keys)) == pytest.approx(expected, abs=1e-12)


@given(st.dictionaries(st.tuples(st.sampled_from(LABELS), st.sampled_from(LABELS)), st.integers(1, 20)))
def test_agreement_from_counts_is_compare_with_reference_on_the_pairs(counts):
    from annotation.metrics.annotator_quality import agreement_from_counts

    pairs = [pair for pair, n in counts.items() for _ in range(n)]
    assert agreement_from_counts(counts, labels=LABELS) == compare_with_reference(pairs, labels=LABELS)
