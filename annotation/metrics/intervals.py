"""Means with confidence intervals, for per-system and per-criterion ratings (LCHAIM Table 1,
HeSum §4): Student's t, and a bootstrap percentile interval that stays on a bounded scale.
Pure: no Django."""

import math

CONFIDENCE = 0.95


def _mean_and_sd(values: list[float]) -> tuple[int, float | None, float | None]:
    """(n, mean, sample SD) of `values`; the mean is None without values, the SD with fewer than 2."""
    n = len(values)
    if n == 0:
        return 0, None, None
    mean = math.fsum(values) / n
    if n < 2:
        return n, mean, None
    return n, mean, math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))


def mean_t_interval(values: list[float], confidence: float = CONFIDENCE) -> dict:
    """Mean, sample SD and the two-sided t interval (scipy.stats.t, n - 1 degrees of freedom)
    of `values`. The interval is None with fewer than 2 values, and collapses to the mean when
    every value is equal (scipy refuses a zero scale).

    >>> r = mean_t_interval([3, 4, 5])
    >>> r["mean"], round(r["ci_low"], 4), round(r["ci_high"], 4)
    (4.0, 1.5159, 6.4841)
    """
    n, mean, sd = _mean_and_sd(values)
    if mean is None or sd is None:
        return {"n": n, "mean": mean, "sd": None, "ci_low": None, "ci_high": None}
    sem = sd / math.sqrt(n)
    if sem == 0:
        low = high = mean
    else:
        # Imported here: scipy.stats costs every process that imports it ~55 MiB, and web
        # and beat processes import this module without ever computing an interval.
        from scipy import stats

        low, high = (float(x) for x in stats.t.interval(confidence, n - 1, loc=mean, scale=sem))
    return {"n": n, "mean": mean, "sd": sd, "ci_low": low, "ci_high": high}


BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0


def mean_bounded_interval(
    values: list[float],
    low: float,
    high: float,
    confidence: float = CONFIDENCE,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
) -> dict:
    """Mean, sample SD and a two-sided bootstrap percentile interval of the mean
    (scipy.stats.bootstrap, fixed seed) for `values` on the closed scale [low, high].

    A t interval is symmetric about the mean, so over few, spread ratings it reaches past
    the scale (three ratings 1, 2, 5 on 1-5 give [-2.5, 8.5]). Every resampled mean lies
    between the smallest and the largest value, so the percentile interval never leaves
    the scale. On a tiny sample the percentiles of a discrete resampling distribution can
    both fall on one side of the mean; the interval is then widened to the mean, so that
    it always contains the estimate. The interval is None with fewer than 2 values and
    collapses to the mean when every value is equal (there is nothing to resample).
    A value outside [low, high] is a ValueError: the scale would not describe the data.

    >>> r = mean_bounded_interval([1, 2, 5], 1, 5)
    >>> 1 <= r["ci_low"] <= r["mean"] <= r["ci_high"] <= 5
    True
    >>> mean_bounded_interval([0, 1], 0, 1)["ci_low"], mean_bounded_interval([0, 1], 0, 1)["ci_high"]
    (0.0, 1.0)
    """
    if any(not low <= v <= high for v in values):
        raise ValueError(f"values must lie within [{low}, {high}]")
    n, mean, sd = _mean_and_sd(values)
    if mean is None or sd is None:
        return {"n": n, "mean": mean, "sd": None, "ci_low": None, "ci_high": None}
    if min(values) == max(values):
        return {"n": n, "mean": mean, "sd": sd, "ci_low": mean, "ci_high": mean}
    import numpy as np
    from scipy import stats

    result = stats.bootstrap(
        (np.asarray(values, dtype=float),),
        np.mean,
        confidence_level=confidence,
        n_resamples=n_resamples,
        method="percentile",
        vectorized=True,
        random_state=np.random.default_rng(BOOTSTRAP_SEED),
    )
    ci_low = float(result.confidence_interval.low)
    ci_high = float(result.confidence_interval.high)
    # Percentiles are interpolated between resampled means, all within [min, max] of the
    # values; the clamp only guards the last float bit.
    ci_low = min(max(ci_low, low), mean)
    ci_high = max(min(ci_high, high), mean)
    return {"n": n, "mean": mean, "sd": sd, "ci_low": ci_low, "ci_high": ci_high}
