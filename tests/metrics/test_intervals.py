"""Means with a t interval and with a bounded bootstrap interval, against scipy, on the scale and on the edge
cases; the bootstrap over a multiset of values as over the list they expand to."""

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats

from annotation.metrics.intervals import (
    counted_mean_bounded_interval,
    mean_bounded_interval,
    mean_t_interval,
    proportion_interval,
)


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


# A multiset of ratings as the summary report keeps them: a few distinct means of small
# integers on 1-5, each held by up to many summaries.
_counts = st.dictionaries(
    st.fractions(min_value=1, max_value=5, max_denominator=6).map(float), st.integers(0, 10**6), max_size=12
)


@given(st.lists(st.floats(1, 5), max_size=60), st.randoms(use_true_random=False))
def test_the_list_and_its_counts_give_the_same_interval(values, random):
    shuffled = list(values)
    random.shuffle(shuffled)
    counted = counted_mean_bounded_interval(Counter(values), 1, 5, n_resamples=300)
    assert mean_bounded_interval(shuffled, 1, 5, n_resamples=300) == counted
    assert mean_bounded_interval(values, 1, 5, n_resamples=300) == counted


@given(st.lists(st.floats(1, 5), min_size=1, max_size=60))
def test_the_counted_mean_and_sd_are_those_of_the_values(values):
    # Rounded once from the exact sums, as math.fsum over the values gives them.
    result = counted_mean_bounded_interval(Counter(values), 1, 5, n_resamples=10)
    mean = math.fsum(values) / len(values)
    assert result["n"] == len(values) and result["mean"] == mean
    if len(values) > 1:
        assert result["sd"] == math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))


@settings(deadline=None, max_examples=40)
@given(
    st.one_of(
        # Values nearly all distinct: the n values resampled by position.
        st.lists(st.fractions(1, 5, max_denominator=4).map(float), min_size=2, max_size=150),
        # A few distinct values among many: multinomial counts of the distinct values.
        st.lists(st.integers(1, 5).map(float), min_size=100, max_size=400),
    )
)
def test_the_counted_interval_is_scipys_percentile_bootstrap(values):
    # Both are percentiles of 20,000 resampled means of the same distribution, drawn from
    # different random streams. The resampled mean has SD se = (population SD) / sqrt(n);
    # a 2.5% percentile estimated from B draws has a Monte Carlo SD of about
    # sqrt(p (1 - p) / B) / phi(1.96) * se = 0.019 se, the difference of two estimates
    # 0.027 se: 0.15 se is over 5 of those. The resampled means are discrete (spaced at
    # most (max - min) / n apart), so two estimates near a jump of the distribution can fall
    # on neighbouring values: one such step more.
    assume(min(values) < max(values))
    resamples = 20_000
    result = counted_mean_bounded_interval(Counter(values), 1, 5, n_resamples=resamples)
    scipy_interval = stats.bootstrap(
        (np.asarray(values),),
        np.mean,
        n_resamples=resamples,
        method="percentile",
        random_state=np.random.default_rng(1),
    ).confidence_interval
    mean = float(np.mean(values))
    tolerance = 0.15 * float(np.std(values)) / math.sqrt(len(values)) + (max(values) - min(values)) / len(values)
    # scipy's percentiles widened to the mean, as the counted interval is on a tiny sample.
    assert result["ci_low"] == pytest.approx(min(scipy_interval.low, mean), abs=tolerance)
    assert result["ci_high"] == pytest.approx(max(scipy_interval.high, mean), abs=tolerance)


@given(_counts)
def test_the_counted_interval_stays_on_the_scale_and_contains_the_mean(counts):
    result = counted_mean_bounded_interval(counts, 1, 5, n_resamples=300)
    n = sum(counts.values())
    assert result["n"] == n
    if n < 2:
        assert result["ci_low"] is None and result["ci_high"] is None
        return
    assert 1 <= result["ci_low"] <= result["mean"] <= result["ci_high"] <= 5
    if len([value for value, count in counts.items() if count]) == 1:
        assert result["ci_low"] == result["mean"] == result["ci_high"]
    assert result == counted_mean_bounded_interval(dict(reversed(list(counts.items()))), 1, 5, n_resamples=300)


def test_a_multiset_too_large_to_list_is_bootstrapped_from_its_counts():
    # 10**12 values would take 8 TB as a list: the resamples draw counts of the 5 distinct
    # values. The mean of 1..5 in equal shares is 3; the interval is narrow about it.
    result = counted_mean_bounded_interval({value: 2 * 10**11 for value in (1, 2, 3, 4, 5)}, 1, 5)
    assert result["n"] == 10**12 and result["mean"] == 3.0
    assert 3 - 1e-5 < result["ci_low"] < 3 < result["ci_high"] < 3 + 1e-5


def test_the_counted_interval_refuses_impossible_counts_and_values():
    for counts in ({1: -1, 2: 3}, {1: 1.5, 2: 3}, {1: True, 2: 3}, {0: 1, 2: 3}, {float("nan"): 2}):
        with pytest.raises(ValueError):
            counted_mean_bounded_interval(counts, 1, 5)
    assert counted_mean_bounded_interval({}, 1, 5)["mean"] is None
    assert counted_mean_bounded_interval({2: 0, 4: 1}, 1, 5) == mean_bounded_interval([4], 1, 5)


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
