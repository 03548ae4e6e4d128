"""The results page's number lines: the report's interval is a bootstrap percentile interval
on the 1-5 scale, drawn and written as computed (no clipping, no mark)."""

from annotation.kinds.summary.pages import _system_rows
from annotation.metrics.intervals import mean_bounded_interval


def figure(mean, low, high, n=2):
    return {"mean": mean, "ci_low": low, "ci_high": high, "n": n}


def test_intervals_are_drawn_as_computed_on_the_scale():
    spread = mean_bounded_interval([1, 2, 5], 1, 5)  # a t interval reaches [-2.5, 8.5] here
    report = {
        "criteria": ["coherence"],
        "systems": [{"system": "A", "coherence": figure(spread["mean"], spread["ci_low"], spread["ci_high"], 3)}],
    }
    (cell,) = _system_rows(report)[0]["cells"]
    edges = _system_rows(
        {
            "criteria": ["coherence", "completeness"],
            "systems": [{"system": "B", "coherence": figure(1, 1, 1), "completeness": figure(5, 5, 5)}],
        }
    )[0]["cells"]
    assert edges[0]["dot"] <= cell["low_x"] < cell["dot"] < cell["high_x"] <= edges[1]["dot"]
    assert "clipped" not in cell and "shown_low" not in cell
