"""The reports' percentile bootstrap of a mean written out with numpy alone, for the API
tests that check a report's intervals: 2,000 resamples from seed 0, drawn as multinomial
counts of the distinct values where they are few (16 k <= n), else as positions in the
sorted values, as annotation.metrics.intervals draws them."""

import numpy as np


def bootstrap_mean_interval(values, resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """(low, high) of the 95% percentile interval of the mean of `values`, not yet widened
    to the mean; the mean itself twice when every value is equal."""
    values = np.asarray(values, dtype=float)
    n = len(values)
    if values.min() == values.max():
        return float(values.mean()), float(values.mean())
    distinct, counts = np.unique(values, return_counts=True)
    rng = np.random.default_rng(seed)
    if 16 * len(distinct) <= n:
        means = rng.multinomial(n, counts / n, size=resamples) @ distinct / n
    else:
        means = np.sort(values)[rng.integers(0, n, size=(resamples, n))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)
