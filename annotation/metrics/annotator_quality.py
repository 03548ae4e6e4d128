"""Per-annotator quality figures over plain data: how often an annotator's
labels equal a reference (the consensus, or gold), Cohen's kappa against it, and the median
time an item took. No Django here.

Cohen's kappa (Cohen 1960) is scikit-learn's `cohen_kappa_score`: the annotator is one rater,
the reference labels the other, over the items both have:

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
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


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
    `labels` is the kind's label set (kappa's label order; labels outside it are kept by
    scikit-learn only if listed, so pass every label that may occur)."""
    if not pairs:
        return ReferenceAgreement(items=0, agree=0, share=None, kappa=None)
    mine = [a for a, _ in pairs]
    reference = [b for _, b in pairs]
    agree = sum(a == b for a, b in pairs)
    present = [label for label in labels if label in set(mine) | set(reference)]
    kappa = None
    if len(present) >= 2:
        # Imported here: scikit-learn costs every web process tens of MiB at start
        # (tests/test_startup_memory.py), and only this figure needs it.
        from sklearn.metrics import cohen_kappa_score

        # one label throughout: p_e = 1, kappa undefined
        with warnings.catch_warnings():
            # Any other p_e = 1 case makes scikit-learn warn and return NaN: undefined too.
            warnings.simplefilter("ignore", RuntimeWarning)
            value = float(cohen_kappa_score(mine, reference, labels=present))
        kappa = None if math.isnan(value) else value
    return ReferenceAgreement(items=len(pairs), agree=agree, share=agree / len(pairs), kappa=kappa)


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
