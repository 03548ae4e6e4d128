"""Per-annotator quality figures over plain data: how often an annotator's
labels equal a reference (the consensus, or gold), Cohen's kappa against it, and the median
time an item took. No Django here.

Cohen's kappa (Cohen 1960), computed as scikit-learn's `cohen_kappa_score` computes it but
from the counts of label pairs (so the worker can keep them per annotator up to date): the
annotator is one rater, the reference labels the other, over the items both have:

    kappa = (p_o - p_e) / (1 - p_e)

with p_o the observed share of equal labels and p_e the share expected by chance from the two
label distributions. It is undefined (None here) with no items, and when p_e = 1 (both
"raters" used one and the same label throughout), where scikit-learn returns NaN.

>>> r = compare_with_reference([("a", "a"), ("b", "b"), ("a", "b"), ("b", "b")], labels=("a", "b"))
>>> (r.items, r.agree, r.share, round(r.kappa, 4))
(4, 3, 0.75, 0.5)
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ReferenceAgreement:
    """`items` compared, `agree` of them with the same label, `share` = agree / items
    (None for no items), `kappa` (None when undefined)."""

    items: int
    agree: int
    share: float | None
    kappa: float | None


def compare_with_reference(pairs: Sequence[tuple[str, str]], *, labels: Sequence[str]) -> ReferenceAgreement:
    """(annotator's label, reference label) per item → agreement share and Cohen's kappa.
    `labels` is the kind's label set (kappa's label order; pairs with a label outside it
    count in `items` and `agree` but not in kappa)."""
    return agreement_from_counts(Counter(pairs), labels=labels)


def agreement_from_counts(counts: Mapping[tuple[str, str], int], *, labels: Sequence[str]) -> ReferenceAgreement:
    """`compare_with_reference` from the number of items per (annotator's label, reference
    label): counts can be kept up to date item by item and the figures computed from them."""
    items = sum(counts.values())
    if not items:
        return ReferenceAgreement(items=0, agree=0, share=None, kappa=None)
    agree = sum(n for (mine, reference), n in counts.items() if mine == reference)
    seen = {label for pair in counts for label in pair}
    present = [label for label in labels if label in seen]
    kappa = None
    if len(present) >= 2:
        # one label throughout: p_e = 1, kappa undefined
        index = {label: n for n, label in enumerate(present)}
        confusion = np.zeros((len(present), len(present)), dtype=np.int64)
        for (mine, reference), n in counts.items():
            if mine in index and reference in index:
                confusion[index[mine], index[reference]] += n
        kappa = kappa_from_confusion(confusion)
    return ReferenceAgreement(items=items, agree=agree, share=agree / items, kappa=kappa)


def kappa_from_confusion(confusion: np.ndarray) -> float | None:
    """Cohen's kappa from a confusion matrix (rows: the annotator, columns: the
    reference), computed as scikit-learn's `cohen_kappa_score` does from the labels:
    1 - sum(w o) / sum(w e), w = 1 off the diagonal, e the outer product of the marginals
    over n. None where it is undefined (p_e = 1: NaN in scikit-learn).

    >>> round(kappa_from_confusion(np.array([[1, 1], [0, 2]])), 4)
    0.5
    """
    n_classes = confusion.shape[0]
    sum0 = np.sum(confusion, axis=0)
    sum1 = np.sum(confusion, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = np.outer(sum0, sum1) / np.sum(sum0)
        weights = np.ones([n_classes, n_classes], dtype=int)
        weights.flat[:: n_classes + 1] = 0
        value = float(1 - np.sum(weights * confusion) / np.sum(weights * expected))
    return None if math.isnan(value) else value


def plurality(labels: Iterable[str]) -> str | None:
    """The label cast most often, or None when there is no vote or the top is tied.

    >>> plurality(["a", "b", "a"]), plurality(["a", "b"]), plurality([])
    ('a', None, None)
    """
    counts = Counter(labels).most_common(2)
    if not counts or (len(counts) == 2 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


def median_seconds(durations: Iterable[float]) -> float | None:
    """The median of durations in seconds (the mean of the two middle ones for an even
    count), None for none.

    >>> median_seconds([30.0, 10.0, 20.0, 40.0]), median_seconds([])
    (25.0, None)
    """
    values = list(durations)
    return float(statistics.median(values)) if values else None


# Durations are counted at this resolution (seconds): the median of a large project is then
# computed from a count per value kept up to date item by item, identical to the median of
# the durations themselves rounded the same way.
SECONDS_RESOLUTION = 0.1


def duration_key(seconds: float) -> int:
    """A duration in whole tenths of a second (its key in `median_of_counts`)."""
    return round(seconds / SECONDS_RESOLUTION)


def median_of_counts(counts: Mapping[int, int]) -> float | None:
    """`median_seconds` of the durations counted by `duration_key` (key → how many).

    >>> median_of_counts({100: 1, 200: 2, 400: 1}), median_of_counts({})
    (20.0, None)
    """
    total = sum(n for n in counts.values() if n > 0)
    if not total:
        return None
    middle = [(total - 1) // 2, total // 2]
    found, seen = [], 0
    for key in sorted(k for k, n in counts.items() if n > 0):
        seen += counts[key]
        while middle and middle[0] < seen:
            middle.pop(0)
            found.append(key * SECONDS_RESOLUTION)
    return (found[0] + found[1]) / 2


def suggestion_figures(rows: Iterable[tuple[str, str, str]]) -> dict:
    """How an annotator used a model's suggestions, from (their label, the suggested label,
    the item's consensus or "" when it has none) per annotation shown a suggestion:
    `shown`, `taken` and `acceptance_rate` (share of shown suggestions they submitted), and,
    over the items whose consensus differs from the suggestion, `suggestion_wrong` and
    `agreement_when_wrong` (share of those where they gave the consensus, not the
    suggestion: low values with a high acceptance rate are anchoring). A rate is None
    without the items it is over.

    >>> f = suggestion_figures([("a", "a", "a"), ("a", "a", "b"), ("b", "a", "b"), ("b", "b", "")])
    >>> (f["shown"], f["taken"], f["acceptance_rate"], f["suggestion_wrong"], f["agreement_when_wrong"])
    (4, 3, 0.75, 2, 0.5)
    """
    shown = taken = wrong = agree_when_wrong = 0
    for label, suggested, consensus in rows:
        shown += 1
        taken += label == suggested
        if consensus and consensus != suggested:
            wrong += 1
            agree_when_wrong += label == consensus
    return {
        "shown": shown,
        "taken": taken,
        "acceptance_rate": taken / shown if shown else None,
        "suggestion_wrong": wrong,
        "agreement_when_wrong": agree_when_wrong / wrong if wrong else None,
    }
