"""Figures per slice of the items with seeded scipy bootstrap intervals
(annotation/metrics/slices.py)."""

import subprocess
import sys

import numpy as np
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.metrics.evaluation import classification_statistic, masked_means_statistic
from annotation.metrics.slices import slice_figures

LABELS = ("entailment", "neutral", "contradiction")
items = st.lists(st.tuples(st.sampled_from("abc"), st.booleans()), min_size=1, max_size=40)


def test_imports_no_django():
    code = "import sys, annotation.metrics.slices; print('django' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


@settings(max_examples=40, deadline=None)
@given(items)
def test_slices_partition_the_items_and_each_figure_is_the_slices_own(rows):
    values = [value for value, _ in rows]
    right = np.array([float(ok) for _, ok in rows])
    slices = slice_figures(masked_means_statistic({"accuracy": right}), values, ["accuracy"], n_resamples=50)
    assert list(slices) == sorted(set(values))
    assert sum(row["items"] for row in slices.values()) == len(rows)
    for value, row in slices.items():
        mine = [ok for v, ok in rows if v == value]
        assert row["accuracy"] == sum(mine) / len(mine)
        low, high = row["ci"]["accuracy"]
        if len(mine) == 1:
            assert low is None and high is None
        else:
            assert 0.0 <= low <= high <= 1.0


@settings(max_examples=25, deadline=None)
@given(items, st.integers(0, 2**31))
def test_the_interval_is_scipys_percentile_bootstrap_with_the_same_seed(rows, seed):
    values = [value for value, _ in rows]
    right = np.array([float(ok) for _, ok in rows])
    slices = slice_figures(masked_means_statistic({"accuracy": right}), values, ["accuracy"], n_resamples=99, seed=seed)
    for value, row in slices.items():
        mine = right[[i for i, v in enumerate(values) if v == value]]
        if mine.size < 2:
            continue
        reference = scipy.stats.bootstrap(
            (mine,),
            np.mean,
            n_resamples=99,
            method="percentile",
            random_state=np.random.default_rng(seed),
        ).confidence_interval
        assert np.allclose(row["ci"]["accuracy"], [reference.low, reference.high], equal_nan=True)


def test_the_same_seed_gives_the_same_slices_and_classification_figures_slice_too():
    rng = np.random.default_rng(0)
    gold = rng.integers(0, 3, 300)
    predicted = np.where(rng.random(300) < 0.7, gold, rng.integers(0, 3, 300))
    values = rng.choice(["wikipedia", "geektime"], 300).tolist()
    statistic = classification_statistic(gold, predicted, LABELS)
    first = slice_figures(statistic, values, ["accuracy", "macro_f1"])
    assert first == slice_figures(statistic, values, ["accuracy", "macro_f1"])
    for value, row in first.items():
        mask = np.array(values) == value
        assert row["accuracy"] == np.mean(gold[mask] == predicted[mask])
        assert row["ci"]["macro_f1"][0] <= row["macro_f1"] <= row["ci"]["macro_f1"][1]
