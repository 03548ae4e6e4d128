"""Model evaluation figures with bootstrap confidence intervals. Pure: numpy and
scikit-learn, no Django.

Every figure is computed from per-item arrays through a *statistic*: a function from a
(B, n) matrix of item indices (B resamples of the n items; the point estimate is the one row
``arange(n)``) to ``{figure name: array of B values}``. The bootstrap draws the index
matrix once per chunk and hands the same rows to every figure (Efron & Tibshirani 1993,
ch. 13: percentile intervals over items resampled with replacement), so the figures of one
resample describe one and the same resampled test set. A paired bootstrap hands the same
rows to two evaluations of the same items (Koehn 2004, "Statistical significance tests for
machine translation evaluation", §4: paired bootstrap resampling) and reads the difference.

Figure names are dotted paths ("per_class.entailment.f1", "subsets.hard(overlap).easy");
a figure undefined on a resample (an empty subset) is NaN there and the interval is read
from the resamples where it is defined.

>>> stat = classification_statistic([0, 1, 1, 0], [0, 1, 0, 0], ("yes", "no"))
>>> point = {name: float(values[0]) for name, values in stat(np.arange(4)[None, :]).items()}
>>> point["accuracy"], round(point["macro_f1"], 4), point["per_class.no.recall"]
(0.75, 0.7333, 0.5)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "CONFIDENCE",
    "N_RESAMPLES",
    "SEED",
    "Difference",
    "Estimate",
    "Statistic",
    "bootstrap",
    "classification_point",
    "classification_statistic",
    "combine",
    "masked_means_statistic",
    "masked_rates_statistic",
    "CellStatistic",
    "paired_bootstrap",
    "resample_chunks",
    "selections_classification_statistic",
    "stratum_codes",
]

N_RESAMPLES = 1000
CONFIDENCE = 0.95
SEED = 20240601
# A combined cell statistic whose grid is larger than this counts only its occupied cells.
COMPACT_ABOVE = 4096
# Indices drawn per chunk (B_chunk × n): bounds memory at ~16 MB of int32 whatever n is.
CHUNK_CELLS = 4_000_000

Statistic = Callable[[np.ndarray], dict[str, np.ndarray]]


@dataclass(frozen=True)
class Estimate:
    """A figure and its percentile bootstrap interval; None where undefined (no items)."""

    value: float | None
    ci_low: float | None
    ci_high: float | None

    def as_dict(self) -> dict:
        return {"value": self.value, "ci_low": self.ci_low, "ci_high": self.ci_high}


@dataclass(frozen=True)
class Difference:
    """A − B of one figure over the same items: the difference on the items themselves, its
    paired percentile interval, and the share of resamples in which A scored higher (ties
    count for neither) among those where both are defined."""

    difference: float | None
    ci_low: float | None
    ci_high: float | None
    share_a_better: float | None

    def as_dict(self) -> dict:
        return {
            "difference": self.difference,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "share_a_better": self.share_a_better,
        }


class CellStatistic:
    """A statistic whose figures depend only on how many items fall in each of `n_cells`
    cells: each item has one cell code (its gold × predicted label, its subset flags …) and
    `from_counts` maps a (B, n_cells) matrix of cell counts to the figures.

    Called with an index matrix it counts the cells of the drawn items, like any statistic.
    The bootstrap draws its counts directly instead: resampling n items with replacement
    puts Multinomial(n, cell shares) items in the cells, so drawing the counts is the same
    resampling distribution at O(B × cells) instead of O(B × n) (and, for two evaluations of
    the same items, the joint cell of each item keeps the pairing)."""

    def __init__(self, codes, n_cells: int, from_counts: Callable[[np.ndarray], dict[str, np.ndarray]]):
        self.codes = np.asarray(codes, dtype=np.int64)
        self.n_cells = int(n_cells)
        self.from_counts = from_counts

    def counts(self, indices: np.ndarray) -> np.ndarray:
        rows = indices.shape[0]
        drawn = self.codes[indices] + (np.arange(rows, dtype=np.int64) * self.n_cells)[:, None]
        return np.bincount(drawn.ravel(), minlength=rows * self.n_cells).reshape(rows, self.n_cells)

    def __call__(self, indices: np.ndarray) -> dict[str, np.ndarray]:
        return self.from_counts(self.counts(indices))

    def shares(self) -> np.ndarray:
        counts = np.bincount(self.codes, minlength=self.n_cells).astype(float)
        return counts / counts.sum()


def _multinomial_chunks(shares: np.ndarray, n: int, n_resamples: int, seed: int) -> Iterator[np.ndarray]:
    """(B_chunk, cells) count matrices: n items resampled, as cell counts."""
    rng = np.random.default_rng(seed)
    per_chunk = max(1, CHUNK_CELLS // max(shares.shape[0], 1))
    done = 0
    while done < n_resamples:
        rows = min(per_chunk, n_resamples - done)
        yield rng.multinomial(n, shares, size=rows)
        done += rows


def resample_chunks(n: int, n_resamples: int = N_RESAMPLES, seed: int = SEED) -> Iterator[np.ndarray]:
    """(B_chunk, n) int32 matrices of item indices drawn with replacement, n_resamples rows in
    all, from numpy's PCG64 seeded with `seed`: the same arguments give the same rows.

    >>> [chunk.shape for chunk in resample_chunks(3, 5, seed=1)]
    [(5, 3)]
    """
    if n <= 0:
        return
    rng = np.random.default_rng(seed)
    per_chunk = max(1, CHUNK_CELLS // n)
    done = 0
    while done < n_resamples:
        rows = min(per_chunk, n_resamples - done)
        yield rng.integers(0, n, size=(rows, n), dtype=np.int32)
        done += rows


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def _interval(samples: np.ndarray, confidence: float) -> tuple[float | None, float | None]:
    samples = samples[np.isfinite(samples)]
    if samples.size == 0:
        return None, None
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(samples, [tail, 100.0 - tail])
    return float(low), float(high)


def bootstrap(
    statistic: Statistic,
    n: int,
    *,
    n_resamples: int = N_RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = SEED,
    progress: Callable[[float], None] | None = None,
) -> dict[str, Estimate]:
    """Every figure of `statistic` on the n items, with its percentile interval over
    `n_resamples` resamples of the items. `progress` is called with the share done.

    >>> est = bootstrap(masked_means_statistic({"x": np.array([1.0, 0.0, 1.0, 1.0])}), 4, n_resamples=200, seed=3)
    >>> est["x"].value, 0.0 <= est["x"].ci_low <= 0.75 <= est["x"].ci_high <= 1.0
    (0.75, True)
    """
    point = statistic(np.arange(n, dtype=np.int32)[None, :]) if n else {}
    samples: dict[str, list[np.ndarray]] = {name: [] for name in point}
    if isinstance(statistic, CellStatistic):
        draws = (
            statistic.from_counts(counts) for counts in _multinomial_chunks(statistic.shares(), n, n_resamples, seed)
        )
    else:
        draws = (statistic(indices) for indices in resample_chunks(n, n_resamples, seed))
    done = 0
    for figures in draws:
        for name, values in figures.items():
            samples[name].append(values)
        done += len(next(iter(figures.values()))) if figures else n_resamples
        if progress is not None:
            progress(min(1.0, done / n_resamples))
    out = {}
    for name, values in point.items():
        value = _finite(values[0])
        low, high = _interval(np.concatenate(samples[name]), confidence) if value is not None else (None, None)
        out[name] = Estimate(value, low, high)
    return out


def paired_bootstrap(
    statistic_a: Statistic,
    statistic_b: Statistic,
    n: int,
    *,
    n_resamples: int = N_RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = SEED,
) -> dict[str, Difference]:
    """A − B for every figure both statistics give, over the same n items (aligned: index i
    is the same item for both), each resample scoring A and B on the same resampled items.

    >>> a = masked_means_statistic({"x": np.ones(50)})
    >>> b = masked_means_statistic({"x": np.zeros(50)})
    >>> paired_bootstrap(a, b, 50, n_resamples=100)["x"]
    Difference(difference=1.0, ci_low=1.0, ci_high=1.0, share_a_better=1.0)
    """
    if n == 0:
        return {}
    whole = np.arange(n, dtype=np.int32)[None, :]
    point_a, point_b = statistic_a(whole), statistic_b(whole)
    names = [name for name in point_a if name in point_b]
    diffs: dict[str, list[np.ndarray]] = {name: [] for name in names}
    if isinstance(statistic_a, CellStatistic) and isinstance(statistic_b, CellStatistic):
        # Each item's joint cell (its cell under A, its cell under B) keeps the pairing.
        width = statistic_b.n_cells
        joint = CellStatistic(
            statistic_a.codes * width + statistic_b.codes, statistic_a.n_cells * width, lambda counts: {}
        )
        pairs = (
            (
                statistic_a.from_counts(counts.reshape(-1, statistic_a.n_cells, width).sum(axis=2)),
                statistic_b.from_counts(counts.reshape(-1, statistic_a.n_cells, width).sum(axis=1)),
            )
            for counts in _multinomial_chunks(joint.shares(), n, n_resamples, seed)
        )
    else:
        pairs = ((statistic_a(indices), statistic_b(indices)) for indices in resample_chunks(n, n_resamples, seed))
    for values_a, values_b in pairs:
        for name in names:
            diffs[name].append(values_a[name] - values_b[name])
    out = {}
    for name in names:
        difference = _finite(point_a[name][0] - point_b[name][0])
        samples = np.concatenate(diffs[name])
        defined = samples[np.isfinite(samples)]
        low, high = _interval(samples, confidence) if difference is not None else (None, None)
        share = float(np.mean(defined > 0)) if difference is not None and defined.size else None
        out[name] = Difference(difference, low, high, share)
    return out


def combine(*statistics: Statistic) -> Statistic:
    """One statistic giving the figures of all of `statistics` (names must not clash); a
    CellStatistic when all of them are (its cells: every combination of theirs)."""
    if len(statistics) == 1:
        return statistics[0]
    cell_parts = [part for part in statistics if isinstance(part, CellStatistic)]
    if len(cell_parts) == len(statistics):
        codes = np.zeros_like(cell_parts[0].codes)
        for part in cell_parts:
            codes = codes * part.n_cells + part.codes
        shape = tuple(part.n_cells for part in cell_parts)

        def from_counts(counts: np.ndarray) -> dict[str, np.ndarray]:
            grid = counts.reshape(counts.shape[0], *shape)
            out: dict[str, np.ndarray] = {}
            for axis, part in enumerate(cell_parts):
                others = tuple(1 + other for other in range(len(shape)) if other != axis)
                out.update(part.from_counts(grid.sum(axis=others)))
            return out

        if int(np.prod(shape)) <= COMPACT_ABOVE:
            return CellStatistic(codes, int(np.prod(shape)), from_counts)
        # A large grid of which the items occupy few cells (parts that refine one another,
        # such as the classification and its selections): the joint cells are the occupied
        # ones, and each part's counts are summed from them, so that drawing counts stays
        # O(occupied cells) and a paired bootstrap's joint grid stays small.
        occupied, compact = np.unique(codes, return_inverse=True)
        to_part = []
        stride = int(np.prod(shape))
        for part in cell_parts:
            stride //= part.n_cells
            one_hot = np.zeros((occupied.size, part.n_cells))
            one_hot[np.arange(occupied.size), (occupied // stride) % part.n_cells] = 1
            to_part.append(one_hot)

        def from_occupied_counts(counts: np.ndarray) -> dict[str, np.ndarray]:
            out: dict[str, np.ndarray] = {}
            for part, one_hot in zip(cell_parts, to_part, strict=True):
                out.update(part.from_counts(np.rint(counts @ one_hot).astype(np.int64)))
            return out

        return CellStatistic(compact.reshape(-1), occupied.size, from_occupied_counts)

    def statistic(indices: np.ndarray) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for part in statistics:
            out.update(part(indices))
        return out

    return statistic


def _ratio(numerator: np.ndarray, denominator: np.ndarray, empty: float) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, numerator / np.maximum(denominator, 1), empty)


# --- classification ------------------------------------------------------------------------


def stratum_codes(flags: Sequence[bool | None]) -> np.ndarray:
    """Per item 0 (easy), 1 (hard) or 2 (unknown: neither subset) from True/False/None."""
    return np.array([2 if flag is None else int(bool(flag)) for flag in flags], dtype=np.int64)


def _confusion_figures(confusion: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray]:
    """From (B, K, K) confusion matrices (rows gold): accuracy, macro and weighted F1 per
    row of B, and the per-class precision, recall and F1 as (B, K) arrays."""
    tp = np.diagonal(confusion, axis1=1, axis2=2).astype(float)
    gold_count = confusion.sum(axis=2).astype(float)
    predicted_count = confusion.sum(axis=1).astype(float)
    total = confusion.sum(axis=(1, 2)).astype(float)
    precision = _ratio(tp, predicted_count, 0.0)
    recall = _ratio(tp, gold_count, 0.0)
    f1 = _ratio(2 * tp, predicted_count + gold_count, 0.0)
    figures = {
        "accuracy": _ratio(tp.sum(axis=1), total, np.nan),
        "macro_f1": np.where(total > 0, f1.mean(axis=1), np.nan),
        "weighted_f1": _ratio((f1 * gold_count).sum(axis=1), total, np.nan),
    }
    return figures, precision, recall, f1


def classification_statistic(
    gold: Sequence[int] | np.ndarray,
    predicted: Sequence[int] | np.ndarray,
    labels: Sequence[str],
    strata: Mapping[str, np.ndarray] | None = None,
) -> Statistic:
    """Accuracy, macro F1, weighted F1, per-class precision / recall / F1
    (`per_class.<label>.<figure>`) and, for each stratum (`stratum_codes`: 0 easy, 1 hard, 2 unknown), the accuracy on its
    easy and hard items (`subsets.<name>.easy|hard`: FarsTail Table 5's shape). `gold` and
    `predicted` are label indices into `labels`.

    All figures come from one confusion matrix per resample and stratum combination: each
    item is one cell code (combination × K² + gold × K + predicted), a CellStatistic. Per class, as scikit-learn's precision_recall_fscore_support
    with zero_division=0: P = TP / predicted, R = TP / gold, F1 = 2·TP / (predicted + gold),
    0 where the denominator is 0; macro F1 is their mean over all K labels, weighted F1 their
    mean weighted by each label's share of the gold (scikit-learn's `average="weighted"`; the
    coherence paper's measure, §5, after Sokolova and Lapalme 2009)."""
    gold = np.asarray(gold, dtype=np.int64)
    predicted = np.asarray(predicted, dtype=np.int64)
    k = len(labels)
    stratum_of: Mapping[str, np.ndarray] = strata or {}
    names = list(stratum_of)
    combination: npt.NDArray[np.int64] = np.zeros(gold.shape[0], dtype=np.int64)
    for name in names:
        combination = combination * 3 + np.asarray(stratum_of[name], dtype=np.int64)
    n_combinations = 3 ** len(names)
    cells = k * k * n_combinations
    codes = combination * (k * k) + gold * k + predicted
    # Which combinations put an item in the easy (0) / hard (1) subset of each stratum.
    membership = {}
    for position, name in enumerate(names):
        digit = (np.arange(n_combinations) // 3 ** (len(names) - 1 - position)) % 3
        membership[name] = digit

    def from_counts(flat: np.ndarray) -> dict[str, np.ndarray]:
        rows = flat.shape[0]
        counts = flat.reshape(rows, n_combinations, k, k)
        confusion = counts.sum(axis=1)
        out, precision, recall, f1 = _confusion_figures(confusion)
        for index, label in enumerate(labels):
            out[f"per_class.{label}.precision"] = precision[:, index]
            out[f"per_class.{label}.recall"] = recall[:, index]
            out[f"per_class.{label}.f1"] = f1[:, index]
        correct = np.diagonal(counts, axis1=2, axis2=3).sum(axis=2).astype(float)  # rows × combinations
        size = counts.sum(axis=(2, 3)).astype(float)
        for name in names:
            for value, subset in ((0, "easy"), (1, "hard")):
                chosen = membership[name] == value
                out[f"subsets.{name}.{subset}"] = _ratio(
                    correct[:, chosen].sum(axis=1), size[:, chosen].sum(axis=1), np.nan
                )
        return out

    return CellStatistic(codes, cells, from_counts)


def classification_point(gold: Sequence[int], predicted: Sequence[int], labels: Sequence[str]) -> dict:
    """The point figures scikit-learn gives: the confusion matrix (rows gold, columns
    predicted, in `labels` order) in counts and normalised over each gold row (the shares
    the coherence paper's appendix A.2 draws; a row with no gold items is all zeros),
    per-class precision / recall / F1 / support with zero_division=0, macro and weighted F1
    and accuracy."""
    from sklearn.metrics import accuracy_score, confusion_matrix, precision_recall_fscore_support

    indices = list(range(len(labels)))
    counts = confusion_matrix(gold, predicted, labels=indices) if len(gold) else np.zeros((len(labels),) * 2, dtype=int)
    precision, recall, f1, support = precision_recall_fscore_support(
        gold, predicted, labels=indices, average=None, zero_division=0
    )
    return {
        "accuracy": float(accuracy_score(gold, predicted)) if len(gold) else None,
        "macro_f1": float(np.mean(f1)) if len(gold) else None,
        "weighted_f1": float(np.average(f1, weights=support)) if len(gold) else None,
        "per_class": {
            label: {
                "precision": float(precision[i]),
                "recall": float(recall[i]),
                "f1": float(f1[i]),
                "support": int(support[i]),
            }
            for i, label in enumerate(labels)
        },
        "confusion": counts.tolist(),
        "confusion_normalized": np.round(_ratio(counts, counts.sum(axis=1, keepdims=True), 0.0), 6).tolist(),
    }


def selections_classification_statistic(
    gold: Sequence[int] | np.ndarray,
    predicted: Sequence[int] | np.ndarray,
    n_labels: int,
    groups: Sequence[int] | np.ndarray,
    n_groups: int,
    selections: Mapping[str, Sequence[int]],
) -> CellStatistic:
    """Accuracy, macro F1 and weighted F1, as classification_statistic gives them, over the
    items of each selection of groups (`<selection>.<figure>`; NaN for an empty selection).
    Each item has a group code in 0..n_groups-1; a selection is a set of groups, and
    selections may overlap: the coherence paper's six evaluation scenarios (§5, Table 3) are
    the positive pairs or all pairs, of the images, the headlines or both sources.

    >>> stat = selections_classification_statistic([0, 1, 1, 0], [0, 1, 0, 0], 2, [0, 0, 1, 1], 2, {"a": [0], "all": [0, 1]})
    >>> {k: float(v[0]) for k, v in stat(np.arange(4)[None, :]).items() if k.endswith("accuracy")}
    {'a.accuracy': 1.0, 'all.accuracy': 0.75}
    """
    k = int(n_labels)
    codes = np.asarray(groups, dtype=np.int64) * (k * k) + np.asarray(gold, dtype=np.int64) * k
    codes = codes + np.asarray(predicted, dtype=np.int64)
    chosen = {name: sorted(set(members)) for name, members in selections.items()}

    def from_counts(flat: np.ndarray) -> dict[str, np.ndarray]:
        counts = flat.reshape(flat.shape[0], n_groups, k, k)
        out: dict[str, np.ndarray] = {}
        for name, members in chosen.items():
            figures, *_ = _confusion_figures(counts[:, members].sum(axis=1))
            out.update({f"{name}.{figure}": values for figure, values in figures.items()})
        return out

    return CellStatistic(codes, n_groups * k * k, from_counts)


# --- means over items (QA spans, coherence indicators) ------------------------------------


def masked_means_statistic(
    values: Mapping[str, np.ndarray], masks: Mapping[str, np.ndarray] | None = None
) -> Statistic:
    """For each per-item value array `v`: its mean over all items (`<v>`) and over the items
    of each boolean mask (`<mask>.<v>`), NaN for an empty selection.

    >>> stat = masked_means_statistic({"em": np.array([1.0, 0.0, 1.0])}, {"odd": np.array([False, True, False])})
    >>> {k: float(v[0]) for k, v in stat(np.arange(3)[None, :]).items()}
    {'em': 0.6666666666666666, 'odd.em': 0.0}
    """
    values = {name: np.asarray(array, dtype=float) for name, array in values.items()}
    masks = {name: np.asarray(array, dtype=bool) for name, array in (masks or {}).items()}

    def statistic(indices: np.ndarray) -> dict[str, np.ndarray]:
        out = {}
        mask_counts = {name: mask[indices].sum(axis=1).astype(float) for name, mask in masks.items()}
        for name, array in values.items():
            drawn = array[indices]
            out[name] = drawn.mean(axis=1)
            for mask_name, mask in masks.items():
                total = np.where(mask[indices], drawn, 0.0).sum(axis=1)
                out[f"{mask_name}.{name}"] = _ratio(total, mask_counts[mask_name], np.nan)
        return out

    return statistic


def masked_rates_statistic(flags: Mapping[str, np.ndarray], mask: np.ndarray) -> CellStatistic:
    """For each per-item boolean array: the share of True among the items of `mask` (NaN
    when there are none), as a CellStatistic (cells: the mask bit and every flag bit).

    >>> stat = masked_rates_statistic({"soft": np.array([1, 0, 1, 1], bool)}, np.array([1, 1, 1, 0], bool))
    >>> {k: float(v[0]) for k, v in stat(np.arange(4)[None, :]).items()}
    {'soft': 0.6666666666666666}
    """
    names = list(flags)
    codes = np.asarray(mask, dtype=np.int64)
    for name in names:
        codes = codes * 2 + np.asarray(flags[name], dtype=np.int64)
    width = 2 ** (len(names) + 1)
    cell_bits = np.arange(width)
    in_mask = (cell_bits >> len(names)) & 1 == 1

    def from_counts(counts: np.ndarray) -> dict[str, np.ndarray]:
        total = counts[:, in_mask].sum(axis=1).astype(float)
        out = {}
        for position, name in enumerate(names):
            hit = in_mask & (((cell_bits >> (len(names) - 1 - position)) & 1) == 1)
            out[name] = _ratio(counts[:, hit].sum(axis=1).astype(float), total, np.nan)
        return out

    return CellStatistic(codes, width, from_counts)
