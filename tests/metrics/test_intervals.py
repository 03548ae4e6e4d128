"""Means with a t interval and with a bounded bootstrap interval, against scipy, on the scale and on the edge cases."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from annotation.metrics.intervals import mean_bounded_interval, mean_t_interval, proportion_interval


@given(st.lists(st.integers(min_value=1, max_value=5), min_size=2, max_size=60))
def test_matches_scipy_and_contains_the_mean(values):
    result = mean_t_interval(values)
    assert result["mean"] == pytest.approx(np.mean(values))
    assert result["ci_low"] <= result["mean"] <= result["ci_high"]
    if np.std(values) > 0:
        low, high = stats.t.interval(0.95, len(values) - 1, loc=np.mean(values), scale=stats.sem(values))
        assert (result["ci_low"], result["ci_high"]) == pytest.approx((low, high))


def test_edge_cases():
    assert mean_t_interval([]) == {"n": 0, "mean": None, "sd": None, "ci_low": None, "ci_high": None}
    assert mean_t_interval([4]) == {"n": 1, "mean": 4.0, "sd": None, "ci_low": None, "ci_high": None}
    assert mean_t_interval([3, 3, 3])["ci_low"] == mean_t_interval([3, 3, 3])["ci_high"] == 3.0


def test_wider_at_higher_confidence():
    values = [1, 2, 4, 5, 5, 3]
    narrow, wide = mean_t_interval(values, 0.9), mean_t_interval(values, 0.99)
    assert wide["ci_low"] < narrow["ci_low"] and narrow["ci_high"] < wide["ci_high"]


# Ratings on a 1-5 scale, and yes/no shares (0/1), as Table 1 reads them.
_scales = st.sampled_from([(1.0, 5.0), (0.0, 1.0)])


@given(_scales.flatmap(lambda s: st.tuples(st.just(s), st.lists(st.floats(*s), min_size=0, max_size=40))))
def test_bounded_interval_stays_on_the_scale_and_contains_the_mean(case):
    (low, high), values = case
    result = mean_bounded_interval(values, low, high, n_resamples=300)
    if len(values) < 2:
        assert result["ci_low"] is None and result["ci_high"] is None
        return
    assert low <= result["ci_low"] <= result["mean"] <= result["ci_high"] <= high
    assert result["mean"] == pytest.approx(np.mean(values))


@given(st.lists(st.sampled_from([0.0, 1.0]), min_size=2, max_size=30))
def test_bounded_interval_of_a_share_within_zero_and_one(values):
    result = mean_bounded_interval(values, 0, 1, n_resamples=300)
    assert 0 <= result["ci_low"] <= result["mean"] <= result["ci_high"] <= 1


def test_where_the_t_interval_leaves_the_scale_the_bounded_one_does_not():
    # Three spread ratings on 1-5 and a yes/no share of one half, over two candidates.
    for values, (low, high) in (([1, 2, 5], (1, 5)), ([0, 1], (0, 1))):
        t = mean_t_interval(values)
        assert t["ci_low"] < low and t["ci_high"] > high
        bounded = mean_bounded_interval(values, low, high)
        assert low <= bounded["ci_low"] < bounded["mean"] < bounded["ci_high"] <= high


def test_bounded_interval_is_reproducible_and_refuses_values_off_the_scale():
    values = [1, 2, 2, 3, 5, 4, 1]
    assert mean_bounded_interval(values, 1, 5) == mean_bounded_interval(values, 1, 5)
    assert mean_bounded_interval([2, 2, 2], 1, 5)["ci_low"] == mean_bounded_interval([2, 2, 2], 1, 5)["ci_high"] == 2
    with pytest.raises(ValueError):
        mean_bounded_interval([0, 3], 1, 5)


def _wilson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    # The Wilson score interval written out (Wilson 1927), to check scipy's against.
    from scipy.stats import norm

    z = norm.ppf(0.5 + confidence / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


@pytest.mark.parametrize(("k", "n"), [(95, 100), (0, 12), (12, 12), (1, 2), (37, 200)])
def test_proportion_interval_is_wilsons(k, n):
    result = proportion_interval(k, n)
    low, high = _wilson(k, n)
    assert result["share"] == k / n and result["n"] == n and result["successes"] == k
    assert result["ci_low"] == pytest.approx(low, abs=1e-12)
    assert result["ci_high"] == pytest.approx(high, abs=1e-12)


@settings(deadline=None)
@given(st.integers(min_value=1, max_value=5000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_proportion_interval_holds_the_share_within_zero_and_one(pair):
    k, n = pair
    result = proportion_interval(k, n)
    assert 0 <= result["ci_low"] <= result["share"] <= result["ci_high"] <= 1
    # Never empty, even at a share of 0 or 1.
    assert result["ci_high"] > result["ci_low"]


def test_proportion_interval_refuses_impossible_counts():
    assert proportion_interval(0, 0)["ci_low"] is None
    for k, n in ((3, 2), (-1, 4), (True, 2)):
        with pytest.raises(ValueError):
            proportion_interval(k, n)
