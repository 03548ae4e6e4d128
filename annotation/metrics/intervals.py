"""Means with confidence intervals, for per-system and per-criterion ratings (LCHAIM Table 1,
HeSum §4): Student's t, and a bootstrap percentile interval that stays on a bounded scale.
Pure: no Django."""

import math
from collections import Counter
from collections.abc import Mapping
from numbers import Integral

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


def _counted_fsum(held: list[tuple[float, int]]) -> float:
    """math.fsum of each value repeated its count of times, without the repeats: a float
    is an integer over a power of two, so the exact sum is one integer over the largest
    of those powers, and Python's int division rounds it correctly, as fsum does."""
    ratios = [(value.as_integer_ratio(), count) for value, count in held]
    denominator = max(den for (_num, den), _count in ratios)
    return sum(num * (denominator // den) * count for (num, den), count in ratios) / denominator


BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0
# numpy draws one binomial in about the time of 16 uniform positions (measured at n =
# 10,000): resampling counts of k distinct values pays off while 16 k <= n.
DRAWS_PER_BINOMIAL = 16


def mean_bounded_interval(
    values: list[float],
    low: float,
    high: float,
    confidence: float = CONFIDENCE,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
) -> dict:
    """`counted_mean_bounded_interval` of a plain list of values: the same result as of
    their multiset (how many times each value occurs), whatever their order.

    >>> r = mean_bounded_interval([1, 2, 5], 1, 5)
    >>> 1 <= r["ci_low"] <= r["mean"] <= r["ci_high"] <= 5
    True
    >>> mean_bounded_interval([0, 1], 0, 1)["ci_low"], mean_bounded_interval([0, 1], 0, 1)["ci_high"]
    (0.0, 1.0)
    """
    return counted_mean_bounded_interval(Counter(values), low, high, confidence, n_resamples)


def counted_mean_bounded_interval(
    counts: Mapping[float, int],
    low: float,
    high: float,
    confidence: float = CONFIDENCE,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
) -> dict:
    """Mean, sample SD and a two-sided bootstrap percentile interval of the mean (fixed
    seed) of the values on the closed scale [low, high] that `counts` holds as a multiset:
    {value: how many times it occurs}.

    A t interval is symmetric about the mean, so over few, spread ratings it reaches past
    the scale (three ratings 1, 2, 5 on 1-5 give [-2.5, 8.5]). Every resampled mean lies
    between the smallest and the largest value, so the percentile interval never leaves
    the scale. On a tiny sample the percentiles of a discrete resampling distribution can
    both fall on one side of the mean; the interval is then widened to the mean, so that
    it always contains the estimate. The interval is None with fewer than 2 values and
    collapses to the mean when every value is equal (there is nothing to resample).
    A value outside [low, high], or a count that is not a whole number of at least 0, is a
    ValueError.

    Drawing n values with replacement from n values of which c_i equal v_i draws how many
    of each there are, multinomial(n, c / n): resampling from the k distinct values is
    the same distribution as resampling the n values (scipy.stats.bootstrap's percentile
    method), at a cost that follows k, not n. Each of the `n_resamples` rows of counts
    (numpy's Generator.multinomial, from the seed) gives the mean counts · v / n, and the
    interval is their percentiles, interpolated as scipy's. The distinct values are taken in
    ascending order, so the result depends on the multiset alone. Where the values are
    nearly all distinct (more than n / DRAWS_PER_BINOMIAL of them), the n values are
    resampled by position instead, in ascending order: the same distribution, drawn at
    the lower cost. The mean and the SD are
    rounded once from their exact sums, as math.fsum over the n values gives them.

    >>> r = counted_mean_bounded_interval({1: 1, 2: 1, 5: 1}, 1, 5)
    >>> r == mean_bounded_interval([5, 1, 2], 1, 5)
    True
    >>> counted_mean_bounded_interval({3: 10**12}, 1, 5)["ci_low"]
    3.0
    """
    merged: dict[float, int] = {}
    for value, count in counts.items():
        if not low <= value <= high:
            raise ValueError(f"values must lie within [{low}, {high}]")
        if isinstance(count, bool) or not isinstance(count, Integral) or count < 0:
            raise ValueError(f"counts must be whole numbers of at least 0; got {count!r}")
        merged[float(value)] = merged.get(float(value), 0) + int(count)
    held = sorted((value, count) for value, count in merged.items() if count)
    n = sum(count for _value, count in held)
    if n == 0:
        return {"n": 0, "mean": None, "sd": None, "ci_low": None, "ci_high": None}
    mean = _counted_fsum(held) / n
    if n < 2:
        return {"n": n, "mean": mean, "sd": None, "ci_low": None, "ci_high": None}
    sd = math.sqrt(_counted_fsum([((value - mean) ** 2, count) for value, count in held]) / (n - 1))
    if len(held) == 1:
        return {"n": n, "mean": mean, "sd": sd, "ci_low": mean, "ci_high": mean}
    import numpy as np

    values = np.array([value for value, _count in held])
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    if len(held) * DRAWS_PER_BINOMIAL <= n:
        draws = rng.multinomial(n, np.array([count for _value, count in held]) / n, size=n_resamples)
        means = draws @ values / n
    else:
        # Nearly every value distinct (a unit mean over floats): k binomials per resample
        # would cost more than drawing the n positions themselves, as scipy does.
        expanded = np.repeat(values, [count for _value, count in held])
        means = expanded[rng.integers(0, n, size=(n_resamples, n))].mean(axis=1)
    alpha = (1 - confidence) / 2
    ci_low, ci_high = (float(x) for x in np.percentile(means, [100 * alpha, 100 * (1 - alpha)]))
    # Percentiles are interpolated between resampled means, all within [min, max] of the
    # values; the clamp only guards the last float bit.
    ci_low = min(max(ci_low, low), mean)
    ci_high = max(min(ci_high, high), mean)
    return {"n": n, "mean": mean, "sd": sd, "ci_low": ci_low, "ci_high": ci_high}


def proportion_interval(successes: int, n: int, confidence: float = CONFIDENCE) -> dict:
    """A share of yes answers in a sample with its Wilson score interval (scipy's
    `binomtest(...).proportion_ci(method="wilson")`): unlike the normal approximation it
    stays within [0, 1] and is not empty at a share of 0 or 1, which a small audit sample
    often gives. {"n", "successes", "share", "ci_low", "ci_high"}; the share and interval
    are None for an empty sample. A count outside [0, n] is a ValueError.

    >>> r = proportion_interval(95, 100)
    >>> r["share"], round(r["ci_low"], 4), round(r["ci_high"], 4)
    (0.95, 0.8882, 0.9785)
    >>> proportion_interval(0, 0)["share"] is None
    True
    """
    if isinstance(n, bool) or isinstance(successes, bool) or not 0 <= successes <= n:
        raise ValueError(f"successes must lie within [0, n]; got {successes} of {n}")
    if n == 0:
        return {"n": 0, "successes": 0, "share": None, "ci_low": None, "ci_high": None}
    from scipy import stats

    interval = stats.binomtest(successes, n).proportion_ci(confidence_level=confidence, method="wilson")
    return {
        "n": n,
        "successes": successes,
        "share": successes / n,
        "ci_low": float(interval.low),
        "ci_high": float(interval.high),
    }
