"""The built-in model's math (annotation/metrics/baseline.py) and what active order sorts by
(annotation/metrics/uncertainty.py): no Django, a learnable cue learnt, every label's column
present, the same data giving the same model."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from annotation.metrics.baseline import fit, predict_proba
from annotation.metrics.uncertainty import agreement_share, margin_of

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CUES = ("בהחלט כן", "אולי", "ממש לא")


def cued(n: int) -> tuple[list[tuple[str, str]], list[int]]:
    texts = [(f"המשפט מספר {i} על העיר", f"{CUES[i % 3]} {i}") for i in range(n)]
    return texts, [i % 3 for i in range(n)]


def test_the_modules_import_no_django():
    code = "import sys, annotation.metrics.baseline, annotation.metrics.uncertainty; print(any(m.startswith('django') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["False"], out.stderr


def test_a_cue_in_the_hypothesis_is_learnt_from_character_ngrams():
    texts, labels = cued(30)
    model = fit(texts, labels, n_labels=3)
    held_out, truth = cued(45)
    predicted = predict_proba(model, held_out[30:]).argmax(axis=1)
    assert (predicted == np.array(truth[30:])).mean() >= 0.9


def test_a_label_missing_from_training_gets_probability_zero_and_rows_sum_to_one():
    texts, labels = cued(20)
    keep = [i for i, label in enumerate(labels) if label != 1]
    model = fit([texts[i] for i in keep], [labels[i] for i in keep], n_labels=3)
    probabilities = predict_proba(model, texts[:5])
    assert probabilities.shape == (5, 3)
    assert np.all(probabilities[:, 1] == 0) and np.allclose(probabilities.sum(axis=1), 1)


def test_the_same_data_gives_the_same_probabilities():
    texts, labels = cued(24)
    first = predict_proba(fit(texts, labels, n_labels=3), texts)
    assert np.array_equal(first, predict_proba(fit(texts, labels, n_labels=3), texts))


@pytest.mark.parametrize(
    ("probabilities", "margin"), [([0.5, 0.5], 0.0), ([0.1, 0.7, 0.2], 0.5), ([1.0, 0.0, 0.0], 1.0), ([0.9], 0.9)]
)
def test_margin(probabilities, margin):
    assert margin_of(probabilities) == pytest.approx(margin)


def test_agreement_share_ignores_votes_without_a_label():
    assert agreement_share(["a", None, "b", "b"]) == pytest.approx(2 / 3)
    assert agreement_share([None, "a"]) == 1.0
