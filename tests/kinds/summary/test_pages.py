"""The results page's number lines: an interval past the 1-5 scale is drawn and written cut at
the scale's end, and marked so."""

from annotation.kinds.summary.pages import _system_rows


def figure(mean, low, high, n=2):
    return {"mean": mean, "ci_low": low, "ci_high": high, "n": n}


def test_intervals_past_the_scale_are_clipped_and_marked():
    report = {
        "criteria": ["coherence", "completeness"],
        "systems": [{"system": "A", "coherence": figure(4.5, 2.6, 6.4), "completeness": figure(3.0, 2.5, 3.5)}],
    }
    wide, narrow = _system_rows(report)[0]["cells"]
    assert (wide["shown_low"], wide["shown_high"], wide["clipped"]) == (2.6, 5, True)
    assert (
        wide["high_x"]
        == _system_rows({"criteria": ["coherence"], "systems": [{"system": "B", "coherence": figure(5, 5, 5)}]})[0][
            "cells"
        ][0]["dot"]
    )
    assert (narrow["shown_low"], narrow["shown_high"], narrow["clipped"]) == (2.5, 3.5, False)
    assert wide["ci_low"] == 2.6 and wide["ci_high"] == 6.4  # the report's own figures stay as computed
