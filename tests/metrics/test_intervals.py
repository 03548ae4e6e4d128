"""Mean with a t confidence interval, against scipy and on the edge cases."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from annotation.metrics.intervals import mean_t_interval


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
