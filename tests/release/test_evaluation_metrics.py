"""annotation/metrics/evaluation.py: the vectorized figures against scikit-learn and hand
counts, the bootstrap's determinism and intervals, the paired bootstrap. No database."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, confusion_matrix, f1_score, precision_recall_fscore_support

from annotation.metrics.evaluation import (
    CellStatistic,
    bootstrap,
    classification_point,
    classification_statistic,
    combine,
    masked_means_statistic,
    masked_rates_statistic,
    paired_bootstrap,
    resample_chunks,
    selections_classification_statistic,
    stratum_codes,
)

ROOT = Path(__file__).resolve().parents[2]
LABELS = ("entailment", "neutral", "contradiction")


def point(statistic, n):
    return {name: float(values[0]) for name, values in statistic(np.arange(n)[None, :]).items()}


# --- hand-checked examples ------------------------------------------------------------------


def test_a_hand_counted_confusion_gives_the_figures():
    # gold e e e n n c ; predicted e e n n c c
    gold = [0, 0, 0, 1, 1, 2]
    predicted = [0, 0, 1, 1, 2, 2]
    figures = point(classification_statistic(gold, predicted, LABELS), 6)
    assert figures["accuracy"] == pytest.approx(4 / 6)
    # entailment: TP 2, predicted 2, gold 3 → P 1, R 2/3, F1 0.8
    assert figures["per_class.entailment.precision"] == 1.0
    assert figures["per_class.entailment.recall"] == pytest.approx(2 / 3)
    assert figures["per_class.entailment.f1"] == pytest.approx(0.8)
    # neutral: TP 1, predicted 2, gold 2 → 0.5 each; contradiction: TP 1, predicted 2, gold 1 → F1 2/3
    assert figures["per_class.neutral.f1"] == pytest.approx(0.5)
    assert figures["per_class.contradiction.f1"] == pytest.approx(2 / 3)
    assert figures["macro_f1"] == pytest.approx((0.8 + 0.5 + 2 / 3) / 3)
    # Weighted by gold support 3, 2, 1 (the coherence paper's measure).
    assert figures["weighted_f1"] == pytest.approx((3 * 0.8 + 2 * 0.5 + 1 * 2 / 3) / 6)
    sk = classification_point(gold, predicted, LABELS)
    assert sk["confusion"] == [[2, 1, 0], [0, 1, 1], [0, 0, 1]]
    assert sk["confusion_normalized"] == [[pytest.approx(2 / 3), pytest.approx(1 / 3), 0.0], [0.0, 0.5, 0.5], [0, 0, 1]]
    assert sk["weighted_f1"] == pytest.approx(figures["weighted_f1"])
    assert sk["per_class"]["entailment"]["support"] == 3


def test_a_label_nobody_has_as_gold_leaves_its_normalised_row_empty():
    sk = classification_point([0, 0, 1], [0, 2, 1], LABELS)
    assert sk["confusion"][2] == [0, 0, 0]
    assert sk["confusion_normalized"] == [[0.5, 0.0, 0.5], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]]


def test_selections_score_overlapping_sets_of_groups():
    """The six PhrasIS scenarios in small: groups 0..3 = images+, images-, headlines+,
    headlines-; "positives.images" is group 0, "all.all" every group."""
    gold = [0, 1, 2, 2, 0, 1, 2, 2]
    predicted = [0, 1, 2, 0, 1, 1, 2, 2]
    groups = [0, 0, 1, 1, 2, 2, 3, 3]
    selections = {"positives.images": [0], "all.images": [0, 1], "positives.all": [0, 2], "all.all": [0, 1, 2, 3]}
    figures = point(selections_classification_statistic(gold, predicted, 3, groups, 4, selections), 8)
    assert figures["positives.images.accuracy"] == 1.0
    assert figures["all.images.accuracy"] == pytest.approx(3 / 4)
    assert figures["positives.all.accuracy"] == pytest.approx(3 / 4)
    for name, members in selections.items():
        chosen = [i for i, group in enumerate(groups) if group in members]
        g, p = [gold[i] for i in chosen], [predicted[i] for i in chosen]
        assert figures[f"{name}.weighted_f1"] == pytest.approx(
            f1_score(g, p, labels=[0, 1, 2], average="weighted", zero_division=0)
        )
        assert figures[f"{name}.macro_f1"] == pytest.approx(
            f1_score(g, p, labels=[0, 1, 2], average="macro", zero_division=0)
        )
    empty = point(selections_classification_statistic(gold, predicted, 3, groups, 5, {"none": [4]}), 8)
    assert all(np.isnan(value) for value in empty.values())


def test_table_5_subsets_count_only_items_with_a_known_flag():
    # correct: T T F F T F ; overlap flags: hard hard easy easy unknown hard
    gold = [0, 1, 2, 0, 1, 2]
    predicted = [0, 1, 0, 1, 1, 0]
    overlap = stratum_codes([True, True, False, False, None, True])
    hypothesis = stratum_codes([False] * 6)
    figures = point(
        classification_statistic(gold, predicted, LABELS, {"hard(overlap)": overlap, "hard(hypothesis)": hypothesis}), 6
    )
    assert figures["subsets.hard(overlap).hard"] == pytest.approx(2 / 3)
    assert figures["subsets.hard(overlap).easy"] == 0.0
    assert figures["subsets.hard(hypothesis).easy"] == pytest.approx(3 / 6)
    assert np.isnan(figures["subsets.hard(hypothesis).hard"])  # no hard item: undefined


def test_masked_means_split_answerable_from_unanswerable():
    em = np.array([1.0, 0.0, 1.0, 1.0])
    answerable = np.array([True, True, False, False])
    figures = point(masked_means_statistic({"em": em}, {"answerable": answerable, "unanswerable": ~answerable}), 4)
    assert figures == {"em": 0.75, "answerable.em": 0.5, "unanswerable.em": 1.0}


# --- properties -----------------------------------------------------------------------------

labelled = st.integers(min_value=1, max_value=60).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 2), min_size=n, max_size=n),
        st.lists(st.integers(0, 2), min_size=n, max_size=n),
        st.lists(st.sampled_from([True, False, None]), min_size=n, max_size=n),
    )
)


@settings(max_examples=150, deadline=None)
@given(labelled)
def test_vectorized_figures_equal_scikit_learn(case):
    gold, predicted, flags = case
    n = len(gold)
    figures = point(classification_statistic(gold, predicted, LABELS, {"f": stratum_codes(flags)}), n)
    precision, recall, f1, _support = precision_recall_fscore_support(
        gold, predicted, labels=[0, 1, 2], zero_division=0
    )
    assert figures["accuracy"] == pytest.approx(accuracy_score(gold, predicted))
    assert figures["macro_f1"] == pytest.approx(float(np.mean(f1)))
    weighted = f1_score(gold, predicted, labels=[0, 1, 2], average="weighted", zero_division=0)
    assert figures["weighted_f1"] == pytest.approx(weighted)
    for i, label in enumerate(LABELS):
        assert figures[f"per_class.{label}.precision"] == pytest.approx(precision[i])
        assert figures[f"per_class.{label}.recall"] == pytest.approx(recall[i])
        assert figures[f"per_class.{label}.f1"] == pytest.approx(f1[i])
    sk = classification_point(gold, predicted, LABELS)
    assert sk["confusion"] == confusion_matrix(gold, predicted, labels=[0, 1, 2]).tolist()
    assert sk["macro_f1"] == pytest.approx(figures["macro_f1"])
    for value, subset in ((False, "easy"), (True, "hard")):
        chosen = [g == p for g, p, f in zip(gold, predicted, flags) if f is value]
        expected = sum(chosen) / len(chosen) if chosen else None
        got = figures[f"subsets.f.{subset}"]
        assert (np.isnan(got) and expected is None) or got == pytest.approx(expected)


@settings(max_examples=60, deadline=None)
@given(labelled, st.integers(0, 2**32 - 1))
def test_every_resample_row_is_scored_as_the_items_it_draws(case, seed):
    """Row by row, the vectorized figures of a resample equal scikit-learn on the drawn items."""
    gold, predicted, _flags = case
    gold, predicted = np.array(gold), np.array(predicted)
    indices = next(resample_chunks(len(gold), 5, seed))
    figures = classification_statistic(gold, predicted, LABELS)(indices)
    for row, drawn in enumerate(indices):
        _p, _r, f1, _s = precision_recall_fscore_support(
            gold[drawn], predicted[drawn], labels=[0, 1, 2], zero_division=0
        )
        assert figures["macro_f1"][row] == pytest.approx(float(np.mean(f1)))
        assert figures["accuracy"][row] == pytest.approx(accuracy_score(gold[drawn], predicted[drawn]))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=80), st.integers(0, 2**32 - 1))
def test_the_bootstrap_is_seeded_and_its_interval_holds_the_mean(values, seed):
    statistic = masked_means_statistic({"x": np.array(values)})
    first = bootstrap(statistic, len(values), n_resamples=200, seed=seed)
    again = bootstrap(statistic, len(values), n_resamples=200, seed=seed)
    assert first == again
    estimate = first["x"]
    assert estimate.value == pytest.approx(float(np.mean(values)))
    assert min(values) - 1e-12 <= estimate.ci_low <= estimate.ci_high <= max(values) + 1e-12


@settings(max_examples=40, deadline=None)
@given(st.lists(st.booleans(), min_size=2, max_size=60), st.lists(st.booleans(), min_size=2, max_size=60))
def test_the_paired_difference_is_a_minus_b_and_its_share_counts_resamples(a, b):
    n = min(len(a), len(b))
    a, b = np.array(a[:n], dtype=float), np.array(b[:n], dtype=float)
    stat_a, stat_b = masked_means_statistic({"acc": a}), masked_means_statistic({"acc": b})
    result = paired_bootstrap(stat_a, stat_b, n, n_resamples=300, seed=5)["acc"]
    assert result.difference == pytest.approx(a.mean() - b.mean())
    assert result.ci_low <= result.ci_high
    # Recount with the same resamples.
    diffs = np.concatenate([a[i].mean(axis=1) - b[i].mean(axis=1) for i in resample_chunks(n, 300, 5)])
    assert result.share_a_better == pytest.approx(float(np.mean(diffs > 0)))
    assert result.ci_low == pytest.approx(float(np.percentile(diffs, 2.5)))
    assert result.ci_high == pytest.approx(float(np.percentile(diffs, 97.5)))


def test_a_model_against_itself_differs_by_nothing():
    values = np.array([1.0, 0.0, 1.0, 0.0, 1.0])
    stat = masked_means_statistic({"acc": values})
    result = paired_bootstrap(stat, stat, 5, n_resamples=100)["acc"]
    assert (result.difference, result.ci_low, result.ci_high, result.share_a_better) == (0.0, 0.0, 0.0, 0.0)


def test_a_clearly_better_model_wins_on_the_same_items():
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 3, 400)
    good = np.where(rng.random(400) < 0.9, truth, (truth + 1) % 3)
    bad = np.where(rng.random(400) < 0.6, truth, (truth + 1) % 3)
    result = paired_bootstrap(
        classification_statistic(truth, good, LABELS), classification_statistic(truth, bad, LABELS), 400
    )
    assert result["accuracy"].ci_low > 0 and result["accuracy"].share_a_better == 1.0
    assert result["macro_f1"].ci_low > 0


def test_resamples_do_not_depend_on_the_chunking(monkeypatch):
    import annotation.metrics.evaluation as module

    whole = np.concatenate(list(resample_chunks(50, 30, 9)))
    monkeypatch.setattr(module, "CHUNK_CELLS", 50 * 7)
    chunked = list(module.resample_chunks(50, 30, 9))
    assert [c.shape[0] for c in chunked] == [7, 7, 7, 7, 2]
    # Chunk sizes change the draw order of one generator, not its stream: same indices.
    assert np.array_equal(np.concatenate(chunked), whole)


def test_drawing_cell_counts_resamples_as_drawing_items_does():
    """The multinomial draw of cell counts and the draw of item indices give the same
    bootstrap distribution: their intervals agree to sampling error."""
    rng = np.random.default_rng(4)
    n = 3000
    gold = rng.integers(0, 3, n)
    predicted = np.where(rng.random(n) < 0.7, gold, rng.integers(0, 3, n))
    flags = stratum_codes(rng.choice(np.array([True, False, None], dtype=object), n))
    cells = classification_statistic(gold, predicted, LABELS, {"f": flags})
    assert isinstance(cells, CellStatistic)
    by_items = lambda indices: cells(indices)  # noqa: E731  (a plain statistic: the index path)
    fast = bootstrap(cells, n, n_resamples=2000, seed=1)
    slow = bootstrap(by_items, n, n_resamples=2000, seed=2)
    for name in ("accuracy", "macro_f1", "per_class.neutral.f1", "subsets.f.hard", "subsets.f.easy"):
        assert fast[name].value == slow[name].value
        assert fast[name].ci_low == pytest.approx(slow[name].ci_low, abs=0.006)
        assert fast[name].ci_high == pytest.approx(slow[name].ci_high, abs=0.006)


def test_masked_rates_and_combined_cell_statistics_keep_each_figure():
    rng = np.random.default_rng(8)
    gold, predicted = rng.integers(0, 3, 40), rng.integers(0, 3, 40)
    soft, hard, mask = rng.random(40) < 0.6, rng.random(40) < 0.3, rng.random(40) < 0.5
    rates = masked_rates_statistic({"soft": soft, "hard": hard}, mask)
    both = combine(classification_statistic(gold, predicted, LABELS), rates)
    assert isinstance(both, CellStatistic)
    indices = next(resample_chunks(40, 20, 3))
    separate = {**classification_statistic(gold, predicted, LABELS)(indices), **rates(indices)}
    combined = both(indices)
    assert combined.keys() == separate.keys()
    for name in separate:
        assert np.allclose(combined[name], separate[name], equal_nan=True)
    assert point(rates, 40)["soft"] == pytest.approx(soft[mask].mean())
    assert point(rates, 40)["hard"] == pytest.approx(hard[mask].mean())
    drawn = bootstrap(both, 40, n_resamples=50)
    assert drawn["soft"].ci_low <= drawn["soft"].value <= drawn["soft"].ci_high


def test_paired_cell_counts_keep_the_pairing():
    """Over the joint cells, a model against itself differs by exactly nothing in every
    resample, and a model against one that is right on a subset of its right items is never
    better."""
    rng = np.random.default_rng(5)
    gold = rng.integers(0, 3, 500)
    predicted = np.where(rng.random(500) < 0.8, gold, (gold + 1) % 3)
    worse = np.where(rng.random(500) < 0.5, predicted, (gold + 2) % 3)  # right only where predicted is, at most
    same = paired_bootstrap(
        classification_statistic(gold, predicted, LABELS), classification_statistic(gold, predicted, LABELS), 500
    )
    assert (same["accuracy"].ci_low, same["accuracy"].ci_high, same["accuracy"].share_a_better) == (0.0, 0.0, 0.0)
    better = paired_bootstrap(
        classification_statistic(gold, predicted, LABELS), classification_statistic(gold, worse, LABELS), 500
    )
    samples_positive = better["accuracy"].share_a_better
    assert better["accuracy"].ci_low > 0 and samples_positive == 1.0


def test_metrics_do_not_import_django():
    code = (
        "import sys\nimport annotation.metrics.evaluation\n"
        "assert not any(m == 'django' or m.startswith('django.') for m in sys.modules)\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0, completed.stderr


@settings(max_examples=30, deadline=None)
@given(labelled, st.integers(0, 2**32 - 1))
def test_a_large_combined_grid_counts_only_its_occupied_cells(case, seed):
    """Classification × coherence rates × six selections is a grid of 115,248 cells: the
    combination keeps only the occupied ones and still scores every resample as each part
    does on the drawn items."""
    gold, predicted, flags = case
    n = len(gold)
    gold, predicted = np.array(gold), np.array(predicted)
    groups = np.arange(n) % 6
    labels = tuple("abcdefg")
    parts = (
        classification_statistic(gold, predicted, labels),
        masked_rates_statistic({"x": np.array([f is True for f in flags])}, np.array([f is not None for f in flags])),
        selections_classification_statistic(gold, predicted, 7, groups, 6, {"p": [0, 2, 4], "all": range(6)}),
    )
    combined = combine(*parts)
    assert isinstance(combined, CellStatistic) and combined.n_cells <= n
    indices = next(resample_chunks(n, 4, seed))
    expected = {}
    for part in parts:
        expected.update(part(indices))
    got = combined(indices)
    assert set(got) == set(expected)
    for name, values in expected.items():
        np.testing.assert_allclose(got[name], values, equal_nan=True)
