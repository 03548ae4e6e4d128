"""A model's figures on slices of its test items (one slice per value of an item attribute:
HeQ Tables 6-7's scores by source, FarsTail's easy/hard items, LCHAIM §5's accuracy by TTR
bin and reasoning type), each with a percentile bootstrap interval over the slice's items
(Efron & Tibshirani 1993, ch. 13), drawn by `scipy.stats.bootstrap` with a fixed seed.

A *statistic* is annotation.metrics.evaluation's: a function from a (B, n) matrix of item
indices to {figure name: B values}. A slice is the positions of its items in the arrays the
statistic reads; each resample draws among those positions only.

>>> from annotation.metrics.evaluation import masked_means_statistic
>>> right = masked_means_statistic({"accuracy": np.array([1.0, 0.0, 1.0, 1.0, 1.0, 0.0])})
>>> slices = slice_figures(right, ["a", "b", "a", "a", "b", "b"], ["accuracy"], n_resamples=200)
>>> slices["a"]["items"], slices["a"]["accuracy"], slices["a"]["ci"]["accuracy"]
(3, 1.0, [1.0, 1.0])
>>> slices["b"]["items"], round(slices["b"]["accuracy"], 4), 0.0 <= slices["b"]["ci"]["accuracy"][0] <= 1 / 3
(3, 0.3333, True)
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from annotation.metrics.evaluation import CHUNK_CELLS, CONFIDENCE, N_RESAMPLES, SEED, Statistic


def _finite(value) -> float | None:
    value = float(value)
    return value if np.isfinite(value) else None


def slice_positions(values: Sequence[str]) -> dict[str, np.ndarray]:
    """{value: the positions holding it}, values in sorted order.

    >>> {k: v.tolist() for k, v in slice_positions(["y", "x", "y"]).items()}
    {'x': [1], 'y': [0, 2]}
    """
    found: dict[str, list[int]] = {}
    for position, value in enumerate(values):
        found.setdefault(value, []).append(position)
    return {value: np.array(found[value], dtype=np.int64) for value in sorted(found)}


def slice_figures(
    statistic: Statistic,
    values: Sequence[str],
    names: Sequence[str],
    *,
    n_resamples: int = N_RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = SEED,
) -> dict[str, dict]:
    """{slice value: {"items": n, <each of `names`>: value, "ci": {name: [low, high]}}} for
    the items whose attribute is `values[i]`. A figure undefined on the slice is None, and
    so is an interval the resamples cannot give (a one-item slice, a figure undefined on
    some resample)."""
    from scipy.stats import bootstrap

    out = {}
    for value, positions in slice_positions(values).items():
        point = statistic(positions[None, :])
        shown = [name for name in names if name in point]
        row: dict = {"items": int(positions.size)}
        row.update({name: _finite(point[name][0]) for name in shown})
        row["ci"] = {name: [None, None] for name in shown}
        if positions.size > 1 and shown:

            def figures(sample, axis=-1, positions=positions, shown=shown):
                taken = positions[np.asarray(sample, dtype=np.int64)]
                flat = taken.reshape(-1, taken.shape[-1])
                got = statistic(flat)
                return np.stack([np.asarray(got[name], dtype=float).reshape(taken.shape[:-1]) for name in shown])

            with warnings.catch_warnings():
                # A slice whose every resample gives the same figure warns (degenerate
                # distribution); its interval is that figure.
                warnings.simplefilter("ignore")
                result = bootstrap(
                    (np.arange(positions.size),),
                    figures,
                    vectorized=True,
                    n_resamples=n_resamples,
                    confidence_level=confidence,
                    method="percentile",
                    batch=max(1, CHUNK_CELLS // int(positions.size)),
                    random_state=np.random.default_rng(seed),
                )
            lows = np.atleast_1d(result.confidence_interval.low)
            highs = np.atleast_1d(result.confidence_interval.high)
            for index, name in enumerate(shown):
                if row[name] is not None:
                    row["ci"][name] = [_finite(lows[index]), _finite(highs[index])]
        out[value] = row
    return out
