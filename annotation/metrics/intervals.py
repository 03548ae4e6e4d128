"""Means with Student's t confidence intervals, for per-system and per-criterion ratings
(LCHAIM Table 1, HeSum §4). Pure: no Django."""

import math

CONFIDENCE = 0.95


def mean_t_interval(values: list[float], confidence: float = CONFIDENCE) -> dict:
    """Mean, sample SD and the two-sided t interval (scipy.stats.t, n - 1 degrees of freedom)
    of `values`. The interval is None with fewer than 2 values, and collapses to the mean when
    every value is equal (scipy refuses a zero scale).

    >>> r = mean_t_interval([3, 4, 5])
    >>> r["mean"], round(r["ci_low"], 4), round(r["ci_high"], 4)
    (4.0, 1.5159, 6.4841)
    """
    n = len(values)
    if n == 0:
        return {"n": 0, "mean": None, "sd": None, "ci_low": None, "ci_high": None}
    mean = math.fsum(values) / n
    if n < 2:
        return {"n": 1, "mean": mean, "sd": None, "ci_low": None, "ci_high": None}
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    sem = sd / math.sqrt(n)
    if sem == 0:
        low = high = mean
    else:
        # Imported here: scipy.stats costs every process that imports it ~55 MiB, and web
        # and beat processes import this module without ever computing an interval.
        from scipy import stats

        low, high = (float(x) for x in stats.t.interval(confidence, n - 1, loc=mean, scale=sem))
    return {"n": n, "mean": mean, "sd": sd, "ci_low": low, "ci_high": high}
