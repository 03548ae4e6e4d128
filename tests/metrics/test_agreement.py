"""Krippendorff's alpha, its bootstrap CI and per-coder agreement."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from annotation.metrics import agreement
from annotation.metrics.agreement import (
    AlphaResult,
    alpha,
    bootstrap_ci,
    per_coder_agreement_with_reference,
)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
nan = float("nan")

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the
# 4 coders x 12 units example; "*" (missing) is None.
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]
# Published values (to 3 places) and the package's exact values, checked
# against each other in test_published_example_matches_package.
PUBLISHED = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797}


def _package_alpha(data, level):
    """The krippendorff package on the same data, or None where it cannot answer."""
    array = np.array([[nan if x is None else x for x in row] for row in data], dtype=float)
    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            value = float(krippendorff.alpha(reliability_data=array, level_of_measurement=level))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


# --- Published and hand-computed examples ---------------------------------------------------


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_published_example_matches_package(level):
    assert round(_package_alpha(KRIPPENDORFF_2011, level), 3) == PUBLISHED[level]


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
@pytest.mark.parametrize("method", ["auto", "package", "coincidence"])
def test_published_example(level, method):
    result = alpha(KRIPPENDORFF_2011, level, method=method)

    assert round(result.alpha, 3) == PUBLISHED[level]
    assert result.alpha == pytest.approx(_package_alpha(KRIPPENDORFF_2011, level), abs=1e-12)
    # Unit 12 has a single value, so 11 units and 40 values are pairable.
    assert (result.units, result.coders, result.pairable_values, result.reason) == (11, 4, 40, None)


def test_published_example_interval_closed_form():
    result = alpha(KRIPPENDORFF_2011, "interval", method="closed_form")

    assert result.alpha == pytest.approx(0.8491071428571428, abs=1e-12)


def test_hand_computed_nominal_and_interval():
    """Two coders, three units: (1, 1), (1, 2), (2, 2).

    Nominal. Coincidences: unit 1 gives o_11 += 2 (two ordered pairs, /(m-1)=1),
    unit 2 gives o_12 += 1 and o_21 += 1, unit 3 gives o_22 += 2.
    Marginals n_1 = n_2 = 3, n = 6.
    alpha = 1 - (n-1) * sum_{c!=k} o_ck / sum_{c!=k} n_c n_k = 1 - 5 * 2 / 18 = 4/9.

    Interval. d2(1, 2) = 1, so the sums are the same as nominal: alpha = 4/9.
    Check with D_o and D_e directly: D_o = (1/n) sum_u (1/(m_u-1)) sum_pairs (a-b)^2
    = (0 + 2 + 0) / 6 = 1/3; D_e = sum over ordered pairs of all 6 values of (a-b)^2
    / (n(n-1)) = (2 * 3 * 3 * 1) / 30 = 3/5; alpha = 1 - (1/3) / (3/5) = 4/9.

    Ordinal and ratio. With two values there is one non-zero distance, d2(1, 2)
    (ordinal: (n_1 + n_2 - (n_1 + n_2)/2)^2 = 9; ratio: ((1-2)/(1+2))^2 = 1/9), and
    it cancels between D_o and D_e: alpha = 4/9 as well.
    """
    data = [[1, 1, 2], [1, 2, 2]]
    for level in ("nominal", "ordinal", "interval", "ratio"):
        assert alpha(data, level).alpha == pytest.approx(4 / 9, abs=1e-12), level
    assert alpha(data, "interval", method="closed_form").alpha == pytest.approx(4 / 9, abs=1e-12)
    assert alpha([["a", "a", "b"], ["a", "b", "b"]], "nominal").alpha == pytest.approx(4 / 9, abs=1e-12)


def test_strings_are_coded_for_nominal():
    labels = {1: "entailment", 2: "neutral", 3: "contradiction", 4: "x", 5: "y"}
    as_strings = [[None if x is None else labels[x] for x in row] for row in KRIPPENDORFF_2011]

    assert alpha(as_strings, "nominal").alpha == pytest.approx(alpha(KRIPPENDORFF_2011, "nominal").alpha, abs=1e-12)


def test_numpy_input_with_nan_is_accepted():
    array = np.array([[nan if x is None else x for x in row] for row in KRIPPENDORFF_2011])

    assert alpha(array, "ordinal").alpha == pytest.approx(0.8153875037548814, abs=1e-12)


def test_result_is_frozen():
    result = alpha(KRIPPENDORFF_2011, "nominal")

    assert isinstance(result, AlphaResult)
    with pytest.raises(AttributeError):
        result.alpha = 1.0  # type: ignore[misc]


# --- Degenerate cases: alpha None with a reason, never 1.0, never an exception --------------


@pytest.mark.parametrize(
    "data, reason",
    [
        ([["a", "a", "a"], ["a", "a", "a"]], agreement.REASON_ONE_VALUE),
        ([[3, 3, None], [3, None, 3], [3, 3, 3]], agreement.REASON_ONE_VALUE),
        # The lone 2 is in a unit with one value, so it is not pairable.
        ([[1, 1, 2], [1, 1, None]], agreement.REASON_ONE_VALUE),
        ([["a", "b", "c"]], agreement.REASON_FEW_CODERS),
        ([], agreement.REASON_FEW_CODERS),
        ([["a", None, None], [None, "b", None], [None, None, "c"]], agreement.REASON_NO_PAIRABLE),
        ([[None, None], [None, None]], agreement.REASON_NO_PAIRABLE),
    ],
    ids=["all agree", "all agree with gaps", "one pairable value", "one coder", "no coders", "no overlap", "empty"],
)
@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_degenerate_cases(data, reason, level):
    if level != "nominal" and any(isinstance(x, str) for row in data for x in row):
        data = [[None if x is None else ord(x) for x in row] for row in data]

    result = alpha(data, level)
    boot = bootstrap_ci(data, level, n_resamples=10)

    assert result.alpha is None
    assert result.reason == reason
    assert (boot.alpha, boot.ci_low, boot.ci_high, boot.n_kept, boot.reason) == (None, None, None, 0, reason)


def test_ratio_with_zero_expected_disagreement():
    # Ratio distance ((c-k)/(c+k))^2 is taken as 0 when c + k = 0 (package convention).
    result = alpha([[-1, 1], [-1, 1]], "ratio")

    assert result.alpha is None
    assert result.reason == agreement.REASON_ZERO_EXPECTED


def test_perfect_agreement_across_different_values_is_one():
    # Not degenerate: units differ, coders agree within each.
    assert alpha([["a", "b", "c"], ["a", "b", "c"]], "nominal").alpha == pytest.approx(1.0)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: alpha(KRIPPENDORFF_2011, "cardinal"), "level must be one of"),
        (lambda: alpha([["a", "b"], ["a", "a"]], "ordinal"), "non-numeric values need level 'nominal'"),
        (lambda: alpha([[1, 2], [1]], "nominal"), "same number of units"),
        (lambda: alpha([["a", "b"], ["a", "a"]], "nominal", method="closed_form"), "only for level 'interval'"),
        (lambda: alpha(np.array([1.0, 2.0]), "interval"), "2-D"),
        (lambda: alpha(np.array([[1.0, np.inf], [1.0, 2.0]]), "interval"), "finite"),
        (lambda: bootstrap_ci(KRIPPENDORFF_2011, "nominal", n_resamples=0), "n_resamples"),
        (lambda: bootstrap_ci(KRIPPENDORFF_2011, "nominal", confidence=1.0), "confidence"),
    ],
)
def test_invalid_input_raises(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# --- Agreement with the krippendorff package on random data ---------------------------------


@st.composite
def reliability_data(draw, values=st.integers(min_value=1, max_value=5)):  # noqa: B008 (a strategy is immutable)
    coders = draw(st.integers(min_value=2, max_value=5))
    units = draw(st.integers(min_value=1, max_value=10))
    cell = st.one_of(st.none(), values)
    return [[draw(cell) for _ in range(units)] for _ in range(coders)]


@settings(max_examples=150, deadline=None)
@given(data=reliability_data(), level=st.sampled_from(["nominal", "ordinal", "interval", "ratio"]))
def test_alpha_matches_package(data, level):
    expected = _package_alpha(data, level)
    for method in ("auto", "coincidence"):
        result = alpha(data, level, method=method)
        if expected is None:
            assert result.alpha is None and result.reason is not None
        else:
            assert result.alpha == pytest.approx(expected, abs=1e-9), method


finite_floats = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, allow_infinity=False)


@settings(max_examples=150, deadline=None)
@given(data=reliability_data(values=finite_floats))
def test_interval_closed_form_matches_package(data):
    expected = _package_alpha(data, "interval")
    result = alpha(data, "interval", method="closed_form")

    if expected is None:
        assert result.alpha is None
    else:
        # The closed form calls D_e zero only at round-off level (values equal
        # to ~1e-12 relative), where the package's answer is noise anyway.
        assume(result.alpha is not None)
        assert result.alpha == pytest.approx(expected, abs=1e-9)


def test_interval_closed_form_matches_package_far_from_zero():
    rng = np.random.default_rng(7)
    data = 1e6 + rng.normal(size=(4, 60)).round(2)
    data[rng.random(data.shape) < 0.2] = np.nan

    assert alpha(data, "interval", method="closed_form").alpha == pytest.approx(
        _package_alpha(data.tolist(), "interval"), abs=1e-9
    )


def test_many_distinct_interval_values_use_the_closed_form():
    rng = np.random.default_rng(3)
    truth = rng.normal(size=700)
    data = truth + 0.5 * rng.normal(size=(4, 700))
    assert np.unique(data).size > agreement.INTERVAL_CLOSED_FORM_THRESHOLD

    auto = alpha(data, "interval")
    reference = alpha(data, "interval", method="coincidence")

    assert auto.alpha == pytest.approx(reference.alpha, abs=1e-9)
    assert 0.7 < auto.alpha < 0.9  # signal variance 1, noise 0.25: 1/1.25 = 0.8


# --- Bootstrap ------------------------------------------------------------------------------


def _generated(units, seed, coders=5, labels=3, p_agree=0.7, p_missing=0.1):
    """Each coder gives the unit's true label with p_agree, else a random one."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, labels, units)
    data = np.where(rng.random((coders, units)) < p_agree, truth, rng.integers(0, labels, (coders, units)))
    data = data.astype(float)
    data[rng.random((coders, units)) < p_missing] = np.nan
    return data


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_bootstrap_point_estimate_equals_alpha(level):
    data = _generated(300, seed=1) + 1.0  # ratio needs positive values to be interesting
    boot = bootstrap_ci(data, level, n_resamples=200)

    assert boot.alpha == pytest.approx(alpha(data, level).alpha, abs=1e-9)
    assert boot.ci_low <= boot.alpha <= boot.ci_high
    assert (boot.n_resamples, boot.n_kept, boot.units, boot.reason) == (200, 200, alpha(data, level).units, None)


def test_bootstrap_point_estimate_on_published_example():
    for level in ("nominal", "ordinal", "interval", "ratio"):
        assert bootstrap_ci(KRIPPENDORFF_2011, level, n_resamples=50).alpha == pytest.approx(
            _package_alpha(KRIPPENDORFF_2011, level), abs=1e-9
        )


def test_bootstrap_interval_closed_form():
    rng = np.random.default_rng(5)
    data = rng.normal(size=400) + 0.7 * rng.normal(size=(3, 400))
    data[rng.random(data.shape) < 0.1] = np.nan

    forced = bootstrap_ci(data, "interval", n_resamples=300, method="closed_form")
    matrix = bootstrap_ci(data, "interval", n_resamples=300, method="coincidence")

    assert forced.alpha == pytest.approx(alpha(data, "interval").alpha, abs=1e-9)
    assert matrix.alpha == pytest.approx(forced.alpha, abs=1e-9)
    assert forced.ci_low < forced.alpha < forced.ci_high
    # Different random streams, same sampling law: the intervals roughly agree.
    assert forced.ci_low == pytest.approx(matrix.ci_low, abs=0.03)
    assert forced.ci_high == pytest.approx(matrix.ci_high, abs=0.03)


def test_bootstrap_same_seed_same_ci_and_other_seed_differs():
    data = _generated(500, seed=2)

    first = bootstrap_ci(data, "nominal", n_resamples=300, seed=11)
    again = bootstrap_ci(data, "nominal", n_resamples=300, seed=11)
    other = bootstrap_ci(data, "nominal", n_resamples=300, seed=12)

    assert first == again
    assert (first.ci_low, first.ci_high) != (other.ci_low, other.ci_high)


@pytest.mark.parametrize("level", ["nominal", "ordinal"])
def test_bootstrap_ci_narrows_with_more_units(level):
    small = bootstrap_ci(_generated(200, seed=4), level, n_resamples=400)
    large = bootstrap_ci(_generated(5_000, seed=4), level, n_resamples=400)

    assert large.ci_high - large.ci_low < 0.5 * (small.ci_high - small.ci_low)
    # Both generated with p_agree = 0.7 over 3 labels, so the CIs overlap.
    assert large.ci_low < small.ci_high and small.ci_low < large.ci_high


def test_bootstrap_drops_resamples_without_a_defined_alpha():
    # Two units: any resample that draws the same unit twice holds one value only.
    boot = bootstrap_ci([["a", "b"], ["a", "b"]], "nominal", n_resamples=400, seed=0)

    assert boot.alpha == pytest.approx(1.0)
    assert 100 < boot.n_kept < 300  # about half the resamples draw both units
    assert boot.ci_low == boot.ci_high == pytest.approx(1.0)


def test_bootstrap_many_units_is_fast_enough():
    # A smoke test of the grouped path, not a benchmark: 50K units x 5 coders.
    data = _generated(50_000, seed=9)
    boot = bootstrap_ci(data, "nominal", n_resamples=1000)

    assert boot.n_kept == 1000
    assert boot.ci_high - boot.ci_low < 0.02


# --- Per-coder agreement with a reference ---------------------------------------------------


def test_per_coder_agreement_with_reference():
    data = [
        ["e", "n", "c", None],
        ["e", "e", "c", "n"],
        [None, None, None, None],
    ]
    gold = ["e", "n", None, "n"]

    assert per_coder_agreement_with_reference(data, gold) == {0: (2, 2), 1: (2, 3), 2: (0, 0)}


def test_per_coder_agreement_with_numeric_reference():
    data = np.array([[1.0, 2.0, nan], [1.0, 1.0, 2.0]])

    assert per_coder_agreement_with_reference(data, [1, 2, 2]) == {0: (2, 2), 1: (2, 3)}


def test_per_coder_agreement_length_mismatch():
    with pytest.raises(ValueError, match="reference"):
        per_coder_agreement_with_reference([["a", "b"]], ["a"])


# --- Purity ---------------------------------------------------------------------------------


def test_metrics_do_not_import_django():
    code = (
        "import sys\n"
        "import annotation.metrics.agreement, annotation.metrics.consensus\n"
        "assert not any(m == 'django' or m.startswith('django.') for m in sys.modules), "
        "sorted(m for m in sys.modules if m.startswith('django'))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60
    )

    assert completed.returncode == 0, completed.stderr


# --- Alpha from summed pair counts (the worker's incremental agreement) ----------------------


def _pair_counts(data, domain):
    """Each unit's pair counts, summed by the unit's number of values."""
    code = {value: index for index, value in enumerate(domain)}
    sums = {}
    for unit in zip(*data):
        values = [code[x] for x in unit if x is not None]
        if len(values) >= 2:
            sums[len(values)] = sums.get(len(values), 0) + agreement.unit_pair_counts(values, len(domain))
    return sums


@settings(max_examples=200, deadline=None)
@given(data=reliability_data(), level=st.sampled_from(["nominal", "ordinal", "interval"]))
def test_alpha_from_pair_counts_equals_the_package(data, level):
    domain = sorted({x for row in data for x in row if x is not None})
    expected = _package_alpha(data, level)
    found = agreement.alpha_from_pair_counts(_pair_counts(data, domain), domain, level)
    if expected is None:
        assert found is None
    else:
        assert found == pytest.approx(expected, abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(data=reliability_data(), changed=reliability_data(), level=st.sampled_from(["nominal", "ordinal", "interval"]))
def test_pair_counts_taken_out_and_added_equal_counts_built_anew(data, changed, level):
    """Units replaced one by one in the sums give exactly (not approximately) the alpha of
    the sums built from the final units."""
    domain = [1, 2, 3, 4, 5]
    units = [list(unit) for unit in zip(*data)]
    sums = _pair_counts(data, domain)
    replacement = [list(unit) for unit in zip(*changed)][: len(units)]
    replacement = [unit[: len(data)] + [None] * (len(data) - len(unit)) for unit in replacement]
    for position, new in enumerate(replacement):
        for sign, unit in ((-1, units[position]), (1, new)):
            for m, counts in _pair_counts([[x] for x in unit], domain).items():
                sums[m] = sums.get(m, 0) + sign * counts
        units[position] = new
    final = _pair_counts([list(row) for row in zip(*units)], domain)
    sums = {m: counts for m, counts in sums.items() if np.any(counts)}
    assert sorted(sums) == sorted(final)
    assert all(np.array_equal(sums[m], final[m]) for m in final)
    assert agreement.alpha_from_pair_counts(sums, domain, level) == agreement.alpha_from_pair_counts(
        final, domain, level
    )
