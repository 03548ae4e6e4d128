"""Tests for annotation.metrics.coherence (fine-grained NLI coherence, section 3)."""

import doctest
import subprocess
import sys
from pathlib import Path

import pytest

from annotation.metrics import coherence
from annotation.metrics.coherence import (
    LABELS,
    CoherenceResult,
    hard_coherence,
    reverse_label,
    soft_coherence,
)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SYMMETRIC = ("EQUIVALENT", "OPPOSITION", "SIMILAR", "RELATED", "UNRELATED")


def test_labels_are_the_seven_phrasis_labels():
    assert LABELS == (
        "EQUIVALENT",
        "FORWARD",
        "BACKWARD",
        "OPPOSITION",
        "SIMILAR",
        "RELATED",
        "UNRELATED",
    )


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("FORWARD", "BACKWARD"),
        ("BACKWARD", "FORWARD"),
        *((label, label) for label in SYMMETRIC),
    ],
)
def test_reverse_label(label, expected):
    assert reverse_label(label) == expected
    # Rev is an involution.
    assert reverse_label(reverse_label(label)) == label


@pytest.mark.parametrize("label", ["forward", "ENTAILMENT", "", "SIMILARITY", None])
def test_reverse_label_refuses_unknown_labels(label):
    with pytest.raises(ValueError):
        reverse_label(label)


@pytest.mark.parametrize(
    ("original", "reversed_", "coherent"),
    [
        ("FORWARD", "BACKWARD", True),
        ("BACKWARD", "FORWARD", True),
        ("FORWARD", "FORWARD", False),
        ("BACKWARD", "BACKWARD", False),
        ("EQUIVALENT", "EQUIVALENT", True),
        ("OPPOSITION", "OPPOSITION", True),
        ("SIMILAR", "SIMILAR", True),
        ("RELATED", "RELATED", True),
        ("UNRELATED", "UNRELATED", True),
        # Section 5.2: SIMILAR where the reverse gave entailment.
        ("SIMILAR", "BACKWARD", False),
        ("EQUIVALENT", "FORWARD", False),
        ("RELATED", "UNRELATED", False),
    ],
)
def test_soft_coherence_single_pair(original, reversed_, coherent):
    expected = CoherenceResult(score=float(coherent), coherent=int(coherent), total=1)
    assert soft_coherence([(original, reversed_)]) == expected


def test_soft_coherence_ignores_correctness():
    # "Everyone is hungry" / "Someone is hungry" is FORWARD (appendix A.1);
    # a judge saying BACKWARD then FORWARD is wrong both ways but coherent.
    assert soft_coherence([("BACKWARD", "FORWARD")]).score == 1.0


def test_soft_coherence_mixed():
    result = soft_coherence(
        [
            ("FORWARD", "BACKWARD"),
            ("EQUIVALENT", "EQUIVALENT"),
            ("FORWARD", "FORWARD"),
            ("SIMILAR", "EQUIVALENT"),
        ]
    )
    assert result == CoherenceResult(score=0.5, coherent=2, total=4)


def test_empty_input_has_no_score():
    assert soft_coherence([]) == CoherenceResult(score=None, coherent=0, total=0)
    assert hard_coherence([]) == CoherenceResult(score=None, coherent=0, total=0)


@pytest.mark.parametrize(
    ("item", "hard"),
    [
        # Coherent and correct.
        (("FORWARD", "BACKWARD", "FORWARD"), True),
        (("BACKWARD", "FORWARD", "BACKWARD"), True),
        (("EQUIVALENT", "EQUIVALENT", "EQUIVALENT"), True),
        # Coherent but wrong: soft yes, hard no.
        (("BACKWARD", "FORWARD", "FORWARD"), False),
        (("SIMILAR", "SIMILAR", "EQUIVALENT"), False),
        # Correct on the original only.
        (("FORWARD", "FORWARD", "FORWARD"), False),
        # Correct on the reversed pair only.
        (("SIMILAR", "BACKWARD", "FORWARD"), False),
        # Explicit gold_reversed, as in the paper's (x, x_rev, y, y_rev).
        (("FORWARD", "BACKWARD", "FORWARD", "BACKWARD"), True),
        (("EQUIVALENT", "EQUIVALENT", "EQUIVALENT", "EQUIVALENT"), True),
        (("BACKWARD", "FORWARD", "FORWARD", "BACKWARD"), False),
        # An inconsistent gold pair can never be met coherently.
        (("FORWARD", "BACKWARD", "FORWARD", "FORWARD"), False),
        (("FORWARD", "FORWARD", "FORWARD", "FORWARD"), False),
    ],
)
def test_hard_coherence_single_item(item, hard):
    assert hard_coherence([item]) == CoherenceResult(score=float(hard), coherent=int(hard), total=1)


def test_hard_never_exceeds_soft():
    items = [
        ("FORWARD", "BACKWARD", "FORWARD"),
        ("BACKWARD", "FORWARD", "FORWARD"),
        ("FORWARD", "FORWARD", "FORWARD"),
        ("EQUIVALENT", "EQUIVALENT", "SIMILAR"),
        ("RELATED", "RELATED", "RELATED"),
    ]
    hard = hard_coherence(items)
    soft = soft_coherence([item[:2] for item in items])
    assert hard == CoherenceResult(score=0.4, coherent=2, total=5)
    assert soft == CoherenceResult(score=0.8, coherent=4, total=5)


def test_every_label_combination():
    # Exhaustive: hard-coherent exactly when f(x) = y and f(x_rev) = Rev(y).
    for original in LABELS:
        for reversed_ in LABELS:
            soft = soft_coherence([(original, reversed_)]).coherent
            assert soft == (original == reverse_label(reversed_))
            for gold in LABELS:
                hard = hard_coherence([(original, reversed_, gold)]).coherent
                assert hard == (original == gold and reversed_ == reverse_label(gold))
                assert hard <= soft


@pytest.mark.parametrize(
    "bad",
    [
        [("FORWARD", "forward")],
        [("ENTAILMENT", "FORWARD")],
    ],
)
def test_soft_refuses_unknown_labels(bad):
    with pytest.raises(ValueError):
        soft_coherence(bad)


@pytest.mark.parametrize(
    "bad",
    [
        [("FORWARD", "BACKWARD", "ENTAILMENT")],
        [("FORWARD", "BACKWARD", "FORWARD", "backward")],
        [("FORWARD", "BACKWARD")],
        [("FORWARD", "BACKWARD", "FORWARD", "BACKWARD", "FORWARD")],
    ],
)
def test_hard_refuses_malformed_items(bad):
    with pytest.raises(ValueError):
        hard_coherence(bad)


def test_result_is_frozen():
    result = soft_coherence([("FORWARD", "BACKWARD")])
    with pytest.raises(AttributeError):
        result.score = 0.0


def test_docstring_examples():
    failures, _ = doctest.testmod(coherence)
    assert failures == 0


def test_module_does_not_import_django():
    code = (
        "import sys, annotation.metrics.coherence; "
        "assert not any(m == 'django' or m.startswith('django.') for m in sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, check=True)
