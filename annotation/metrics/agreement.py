"""Krippendorff's alpha, a unit-resampling bootstrap CI, and per-coder agreement.

Sources:

* K. Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability",
  Annenberg School for Communication, University of Pennsylvania. §A (values
  -> coincidence matrix), §B-§E (nominal, ordinal, interval, ratio metrics and
  alpha = 1 - (n-1) * sum_ck o_ck d2_ck / sum_ck n_c n_k d2_ck), and the
  4 coders x 12 units worked example (nominal 0.743, ordinal 0.815,
  interval 0.849).
* Hayes & Krippendorff (2007), "Answering the Call for a Standard Reliability
  Measure for Coding Data", Communication Methods and Measures 1(1), for
  bootstrapping alpha; here the resampled entity is the unit, and the interval
  is the plain percentile interval.

Input convention: ``reliability_data`` is coders x units (rows are coders, as in
Krippendorff's tables and the ``krippendorff`` package). A missing value is
``None`` or a float NaN. Nominal data may be strings; ordinal ranks follow the
numeric order of the values; interval and ratio use the numeric values.

Degenerate data never raises and never yields 1.0: ``alpha`` is None and
``reason`` says why. The cases, checked in this order:

1. fewer than 2 coders (rows),
2. no pairable values (no unit has 2 or more values),
3. one distinct value among the pairable values (expected disagreement D_e = 0,
   alpha = 1 - 0/0), and more generally any data whose D_e is 0 (ratio data
   made only of x and -x, whose ratio distance is taken as 0).

Pure Python + numpy: no Django import here (docs/conventions.md "Pure math").
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Sequence

import krippendorff
import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from scipy import sparse

Level = Literal["nominal", "ordinal", "interval", "ratio"]
Method = Literal["auto", "package", "coincidence", "closed_form"]

LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")

# Above this many distinct values, interval alpha is computed from per-unit
# sums and sums of squares: the package's V x V (and units x V x V) arrays
# exhaust memory long before 100K distinct floats.
INTERVAL_CLOSED_FORM_THRESHOLD = 2_000

# The package materialises a units x V x V array (three of them, briefly);
# above this many elements we build the V x V coincidence matrix ourselves.
_PACKAGE_ELEMENT_BUDGET = 20_000_000

# Our own coincidence path still holds V x V matrices; past this size ordinal
# and ratio data are refused rather than risking an out-of-memory kill.
_MAX_MATRIX_VALUES = 4_000

# Integer-valued data spanning fewer values than this is coded with a bincount and a
# lookup table instead of a sort (see _small_integer_codes).
_SMALL_RANGE = 1 << 16

# Bootstrap: cap on (resamples in a batch) x (per-resample working set).
_BATCH_ELEMENT_BUDGET = 5_000_000

REASON_FEW_CODERS = "fewer than 2 coders"
REASON_NO_PAIRABLE = "no pairable values: no unit has values from 2 or more coders"
REASON_ONE_VALUE = "all pairable values are identical: expected disagreement is 0"
REASON_ZERO_EXPECTED = "expected disagreement is 0"


@dataclass(frozen=True)
class AlphaResult:
    """Krippendorff's alpha with the counts it rests on.

    ``units`` counts pairable units (2+ values), ``coders`` counts rows of the
    input, ``pairable_values`` is Krippendorff's n (values in pairable units).
    ``alpha`` is None exactly when ``reason`` is set.
    """

    alpha: float | None
    level: str
    units: int
    coders: int
    pairable_values: int
    reason: str | None = None


@dataclass(frozen=True)
class BootstrapResult:
    """Point estimate and percentile CI from resampling units with replacement.

    ``n_kept`` is how many of ``n_resamples`` had a defined alpha (a resample
    that happens to hold one distinct value has none and is dropped).
    """

    alpha: float | None
    ci_low: float | None
    ci_high: float | None
    n_resamples: int
    n_kept: int
    confidence: float
    level: str
    units: int
    reason: str | None = None


@dataclass(frozen=True)
class _Prepared:
    """Reliability data restricted to pairable units, values coded 0..V-1."""

    level: str
    coders: int
    codes: np.ndarray  # coders x pairable units, int64, -1 = missing
    domain: np.ndarray  # V distinct values (sorted when numeric)
    numeric_values: np.ndarray | None  # coders x pairable units, float, NaN = missing
    m: np.ndarray  # values per pairable unit
    reason: str | None

    @property
    def units(self) -> int:
        return int(self.codes.shape[1])

    @property
    def pairable_values(self) -> int:
        return int(self.m.sum())

    @property
    def n_domain(self) -> int:
        return int(self.domain.shape[0])


def _is_missing(x: Any) -> bool:
    return x is None or (isinstance(x, (float, np.floating)) and math.isnan(x))


def _check_level(level: str) -> None:
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")


def _to_arrays(reliability_data: Any, level: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Return (codes, domain, numeric values or None) for the full matrix."""
    if isinstance(reliability_data, np.ndarray) and reliability_data.dtype.kind in "biuf":
        values = np.asarray(reliability_data, dtype=np.float64)
        if values.ndim != 2:
            raise ValueError(f"reliability_data must be 2-D (coders x units), got shape {values.shape}")
    else:
        rows = [list(row) for row in reliability_data]
        if len({len(row) for row in rows}) > 1:
            raise ValueError("reliability_data rows (coders) must all have the same number of units")
        flat = [x for row in rows for x in row]
        present = [x for x in flat if not _is_missing(x)]
        if all(isinstance(x, numbers.Real) for x in present):
            values = np.array([np.nan if _is_missing(x) else float(x) for x in flat], dtype=np.float64)
            values = values.reshape(len(rows), len(rows[0]) if rows else 0)
        else:
            if level != "nominal":
                raise ValueError(
                    f"non-numeric values need level 'nominal'; {level!r} needs numbers whose order means something"
                )
            # Labels are coded in order of first appearance; nominal alpha does
            # not look at the order, only at equality.
            index: dict[Any, int] = {}
            codes_flat = [-1 if _is_missing(x) else index.setdefault(x, len(index)) for x in flat]
            codes: npt.NDArray[np.int64] = np.array(codes_flat, dtype=np.int64).reshape(
                len(rows), len(rows[0]) if rows else 0
            )
            domain = np.empty(len(index), dtype=object)
            domain[:] = list(index)
            return codes, domain, None

    small = _small_integer_codes(values)
    if small is not None:
        codes, domain = small
        return codes, domain, values
    present_mask = ~np.isnan(values)
    if not np.isfinite(values[present_mask]).all():
        raise ValueError("reliability_data values must be finite (NaN marks a missing value)")
    domain = np.unique(values[present_mask])
    codes = np.where(present_mask, np.searchsorted(domain, np.where(present_mask, values, 0.0)), -1)
    return codes.astype(np.int64), domain, values


def _small_integer_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(codes, sorted domain) when every present value is an integer in a range of fewer
    than ``_SMALL_RANGE`` values, else None.

    Labels and ratings arrive as small integer codes; for them a bincount over the range
    finds the domain and a lookup table codes it, in a few linear passes, where np.unique
    sorts every value (most of alpha's time on 500K votes). Same result as the sorting
    path: the domain is the sorted distinct present values, as floats.
    """
    if values.size == 0:
        return None
    # fmin/fmax skip NaN (missing); an infinity makes the range infinite and falls back.
    lo, hi = float(np.fmin.reduce(values, axis=None)), float(np.fmax.reduce(values, axis=None))
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi - lo >= _SMALL_RANGE:
        return None  # also when every value is missing (NaN)
    # Value lo + j goes to position j + 1, a missing value to position 0.
    position = values - (lo - 1.0)
    # fmax returns the other operand where one is NaN: missing → 0, in place (nan_to_num
    # is several times slower).
    np.fmax(position, 0.0, out=position)
    shifted = position.astype(np.int64)
    if not np.array_equal(shifted, position):
        return None  # a fraction somewhere
    seen = np.bincount(shifted.ravel(), minlength=int(hi - lo) + 2)[1:] > 0
    if seen.all():
        # Every value of the range occurs (the usual case for label codes 0..V-1):
        # the code is the position minus one, in place.
        codes = shifted
        codes -= 1
    else:
        lookup = np.concatenate(([-1], np.cumsum(seen) - 1))
        codes = lookup[shifted]
    domain = np.flatnonzero(seen).astype(np.float64) + lo
    return codes, domain


def _prepare(reliability_data: Any, level: str) -> _Prepared:
    _check_level(level)
    codes, domain, values = _to_arrays(reliability_data, level)
    coders = int(codes.shape[0])
    m_all = np.count_nonzero(codes >= 0, axis=0)
    pairable = m_all >= 2
    # Every value of the domain occurs somewhere; when every unit is pairable they all
    # occur in pairable units, so the domain's size is the number of distinct values.
    pairable_all = bool(pairable.all())
    if not pairable_all:  # copies only when some unit drops out
        codes = codes[:, pairable]
        if values is not None:
            values = values[:, pairable]
        m = m_all[pairable]
    else:
        m = m_all

    reason = None
    if coders < 2:
        reason = REASON_FEW_CODERS
    elif codes.shape[1] == 0:
        reason = REASON_NO_PAIRABLE
    elif (domain.shape[0] if pairable_all else _distinct_codes(codes, domain.shape[0])) < 2:
        reason = REASON_ONE_VALUE
    return _Prepared(level, coders, codes, domain, values, m, reason)


def _distinct_codes(codes: np.ndarray, n_domain: int) -> int:
    """How many distinct values the (-1 = missing) codes hold; a bincount, not a sort."""
    return int(np.count_nonzero(np.bincount((codes + 1).ravel(), minlength=n_domain + 1)[1:]))


def _result(prep: _Prepared, value: float | None, reason: str | None = None) -> AlphaResult:
    return AlphaResult(
        alpha=value,
        level=prep.level,
        units=prep.units,
        coders=prep.coders,
        pairable_values=prep.pairable_values,
        reason=reason,
    )


def _value_counts(codes: np.ndarray, n_domain: int) -> np.ndarray:
    """units x V counts of how many coders gave each value to each unit."""
    n_units = codes.shape[1]
    # Missing values (-1) land in an extra column 0 that is dropped: no masked copies.
    width = n_domain + 1
    flat = (codes + 1) + (np.arange(n_units, dtype=np.int64) * width)[None, :]
    return np.bincount(flat.ravel(), minlength=n_units * width).reshape(n_units, width)[:, 1:]


def _coincidences(codes: np.ndarray, m: np.ndarray, n_domain: int) -> np.ndarray:
    """V x V coincidence matrix o_ck = sum_u (#ordered c-k pairs in u) / (m_u - 1).

    Krippendorff (2011) §A. Uses O(units x V + V^2) memory, unlike the
    package's units x V x V.
    """
    weight = 1.0 / (m - 1)
    if codes.shape[1] * n_domain <= _PACKAGE_ELEMENT_BUDGET:
        counts = _value_counts(codes, n_domain).astype(np.float64)
        weighted = counts * weight[:, None]
        return counts.T @ weighted - np.diag(weighted.sum(axis=0))
    # Too many units x values for a dense count matrix: accumulate coder
    # pairs instead, which never holds more than one pair of rows.
    o = np.zeros(n_domain * n_domain)
    for i in range(codes.shape[0]):
        for j in range(codes.shape[0]):
            if i == j:
                continue
            a, b = codes[i], codes[j]
            both = (a >= 0) & (b >= 0)
            o += np.bincount(a[both] * n_domain + b[both], weights=weight[both], minlength=n_domain * n_domain)
    return o.reshape(n_domain, n_domain)


def _fixed_delta2(domain: np.ndarray, level: str) -> np.ndarray | None:
    """V x V squared distances for levels whose metric ignores the marginals."""
    if level == "nominal":
        return 1.0 - np.eye(domain.shape[0])
    if level == "ordinal":
        return None
    v = domain.astype(np.float64)
    diff = v[:, None] - v[None, :]
    if level == "interval":
        return diff**2
    total = v[:, None] + v[None, :]
    # Same convention as the krippendorff package: 0 where c + k = 0.
    return np.divide(diff, total, out=np.zeros_like(diff), where=total != 0) ** 2


def _ordinal_delta2(n_c: np.ndarray) -> np.ndarray:
    """Krippendorff's ordinal metric, (sum_{g=c..k} n_g - (n_c + n_k)/2)^2.

    ``n_c`` is (..., V); the result is (..., V, V). Ranks are positions in the
    sorted domain, and the marginals are those of the data at hand, so a
    bootstrap resample gets its own metric.
    """
    n_domain = n_c.shape[-1]
    idx = np.arange(n_domain)
    lo = np.minimum(idx[:, None], idx[None, :])
    hi = np.maximum(idx[:, None], idx[None, :])
    cum = np.cumsum(n_c, axis=-1)
    between = cum[..., hi] - cum[..., lo] + n_c[..., lo]
    return (between - (n_c[..., lo] + n_c[..., hi]) / 2.0) ** 2


def _alpha_from_coincidences(o: np.ndarray, domain: np.ndarray, level: str) -> np.ndarray:
    """alpha = 1 - (n-1) sum o_ck d2_ck / sum n_c n_k d2_ck for (..., V, V) o.

    Krippendorff (2011), coincidence-matrix form. Returns NaN where the
    expected disagreement is 0.
    """
    n_c = o.sum(axis=-1)
    n = n_c.sum(axis=-1)
    delta2 = _fixed_delta2(domain, level)
    if delta2 is None:
        delta2 = _ordinal_delta2(n_c)
    observed = (o * delta2).sum(axis=(-2, -1))
    expected = (n_c[..., :, None] * n_c[..., None, :] * delta2).sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, 1.0 - (n - 1) * observed / expected, np.nan)


def unit_pair_counts(codes: Sequence[int], n_domain: int) -> np.ndarray:
    """One unit's ordered pairs of values from different coders, V x V integers: the
    unit's share of the coincidence matrix times (m_u - 1), m_u its number of values
    (Krippendorff 2011 §A). Integers so that shares can be summed and taken out again
    without round-off (``alpha_from_pair_counts``).

    >>> unit_pair_counts([0, 0, 1], 2).tolist()
    [[2, 2], [2, 0]]
    """
    counts = np.bincount(np.asarray(codes, dtype=np.int64), minlength=n_domain)
    return np.outer(counts, counts) - np.diag(counts)


def alpha_from_pair_counts(pairs_by_m: dict[int, Any], domain: Sequence[float], level: str) -> float | None:
    """Alpha from the units' summed pair counts (``unit_pair_counts``), grouped by the
    number of values m of their units: o = sum_m pairs_m / (m - 1), then
    alpha = 1 - (n-1) sum o_ck d2_ck / sum n_c n_k d2_ck over the sorted ``domain``.
    None when nothing is pairable or the expected disagreement is 0 (as ``alpha``).
    Since the coincidence matrix is a sum over units, a changed unit's counts can be
    taken out and its new ones added, and the statistic computed again from the sums.

    >>> a = unit_pair_counts([0, 0], 2) + unit_pair_counts([0, 1], 2) + unit_pair_counts([1, 1], 2)
    >>> round(alpha_from_pair_counts({2: a}, [0, 1], "nominal"), 6)
    0.444444
    """
    _check_level(level)
    values = np.asarray(domain, dtype=np.float64)
    o: np.ndarray = np.zeros((values.shape[0], values.shape[0]))
    for m in sorted(pairs_by_m):  # one order, so equal counts give the same float
        if int(m) >= 2:
            o = o + np.asarray(pairs_by_m[m], dtype=np.float64).reshape(o.shape) / (int(m) - 1)
    if o.sum() <= 0:
        return None
    value = float(_alpha_from_coincidences(o, values, level))
    return value if math.isfinite(value) else None


def _interval_unit_features(prep: _Prepared) -> np.ndarray:
    """Per pairable unit: [m_u, sum x, sum x^2, within-unit term], float, units x 4.

    The within-unit term is sum over ordered pairs (a-b)^2 / (m_u - 1)
    = 2 m_u sum (x - mean_u)^2 / (m_u - 1). Values are centred on the grand
    mean first (interval alpha is shift-invariant) so that n*Q - S^2 does not
    cancel catastrophically for data far from 0.
    """
    assert prep.numeric_values is not None
    x = prep.numeric_values
    present = ~np.isnan(x)
    x = np.where(present, x - np.nanmean(x), 0.0)
    m = prep.m.astype(np.float64)
    s = x.sum(axis=0)
    q = (x * x).sum(axis=0)
    unit_mean = s / m
    within = np.where(present, x - unit_mean, 0.0)
    d = 2.0 * m * (within * within).sum(axis=0) / (m - 1.0)
    return np.column_stack([m, s, q, d])


def _alpha_from_interval_sums(agg: np.ndarray) -> np.ndarray:
    """Interval alpha from summed unit features (..., 4).

    D_o = sum_u d_u / n and D_e = (2 n Q - 2 S^2) / (n (n-1)), using
    sum_{i,j} (x_i - x_j)^2 = 2 n sum x^2 - 2 (sum x)^2 over the n pairable
    values; alpha = 1 - D_o / D_e = 1 - (n-1) sum_u d_u / (2 n Q - 2 S^2).
    """
    n, s, q, d = agg[..., 0], agg[..., 1], agg[..., 2], agg[..., 3]
    expected = 2.0 * n * q - 2.0 * s * s
    # Round-off can leave a tiny positive D_e when every value is equal.
    tiny = 1e-12 * np.maximum(2.0 * n * q, 1e-300)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > tiny, 1.0 - (n - 1.0) * d / expected, np.nan)


def _use_closed_form(prep: _Prepared, method: str) -> bool:
    if method == "closed_form":
        if prep.level != "interval":
            raise ValueError("method 'closed_form' exists only for level 'interval'")
        return True
    if method == "auto":
        return prep.level == "interval" and prep.n_domain > INTERVAL_CLOSED_FORM_THRESHOLD
    return False


def _check_matrix_size(prep: _Prepared) -> None:
    if prep.n_domain > _MAX_MATRIX_VALUES:
        raise ValueError(
            f"{prep.n_domain} distinct values is too many for a {prep.level} V x V coincidence matrix "
            f"(limit {_MAX_MATRIX_VALUES}); only interval data has a closed form without it"
        )


def alpha(reliability_data: Any, level: str, *, method: Method = "auto") -> AlphaResult:
    """Krippendorff's alpha for coders x units data.

    Source: Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability".
    The computation is delegated to the ``krippendorff`` package
    (``krippendorff.alpha(value_counts=..., value_domain=...,
    level_of_measurement=...)``) when its units x V x V working arrays fit in
    memory. Otherwise the same formula runs on a V x V coincidence matrix
    built here, and interval data with more than
    ``INTERVAL_CLOSED_FORM_THRESHOLD`` distinct values uses the closed form
    D_o, D_e from per-unit sums and sums of squares (O(units) memory).

    ``method`` forces a path (for tests): "package", "coincidence" or
    "closed_form" (interval only); "auto" chooses as above. Nominal, ordinal
    and ratio data with more than 4,000 distinct values raise ValueError
    rather than allocate V x V matrices of that size.

    Degenerate data (fewer than 2 coders, no pairable values, D_e = 0) gives
    ``alpha=None`` with a ``reason``; see the module docstring.

    Worked example, nominal, 2 coders x 3 units, hand-computed: units
    (a,a), (a,b), (b,b) give o_aa = 2, o_ab = o_ba = 1, o_bb = 2, n_a = n_b = 3,
    n = 6, so alpha = 1 - (n-1) * (o_ab + o_ba) / (n_a n_b + n_b n_a)
    = 1 - 5 * 2 / 18 = 4/9.

    >>> r = alpha([["a", "a", "b"], ["a", "b", "b"]], "nominal")
    >>> round(r.alpha, 6), r.units, r.pairable_values
    (0.444444, 3, 6)
    >>> alpha([["a", "a"], ["a", None]], "nominal").reason
    'all pairable values are identical: expected disagreement is 0'
    """
    prep = _prepare(reliability_data, level)
    if prep.reason is not None:
        return _result(prep, None, prep.reason)
    if method not in ("auto", "package", "coincidence", "closed_form"):
        raise ValueError(f"unknown method {method!r}")

    if _use_closed_form(prep, method):
        value = float(_alpha_from_interval_sums(_interval_unit_features(prep).sum(axis=0)))
    else:
        use_package = method == "package" or (
            method == "auto" and prep.units * prep.n_domain**2 <= _PACKAGE_ELEMENT_BUDGET
        )
        if use_package:
            # Codes stand in for string labels; numeric data keeps its values,
            # which the interval and ratio metrics need.
            domain = prep.domain if prep.numeric_values is not None else np.arange(prep.n_domain)
            with np.errstate(divide="ignore", invalid="ignore"):
                value = float(
                    krippendorff.alpha(
                        value_counts=_value_counts(prep.codes, prep.n_domain),
                        value_domain=domain,
                        level_of_measurement=level,
                    )
                )
        else:
            _check_matrix_size(prep)
            o = _coincidences(prep.codes, prep.m, prep.n_domain)
            value = float(_alpha_from_coincidences(o, prep.domain, level))

    if not math.isfinite(value):
        return _result(prep, None, REASON_ZERO_EXPECTED)
    return _result(prep, value)


def _pattern_features(prep: _Prepared) -> tuple[sparse.csr_matrix, sparse.csr_matrix, np.ndarray]:
    """Group units by their multiset of values.

    Returns (coincidences P x V^2, marginals P x V, counts P) for the P
    distinct patterns; a pattern's marginals are its value counts.

    Two units with the same value counts have the same coincidence matrix,
    so with 5 coders and 3 labels 200K units collapse to a few dozen rows.
    Row p is pattern p's coincidence matrix, flattened; it has at most
    coders^2 non-zeros, hence sparse storage when V is large.
    """
    sorted_codes = np.sort(prep.codes, axis=0)
    patterns, counts = np.unique(sorted_codes, axis=1, return_counts=True)
    n_patterns, n_domain = patterns.shape[1], prep.n_domain
    weight = 1.0 / ((patterns >= 0).sum(axis=0) - 1.0)
    rows, cols, vals = [], [], []
    for i in range(patterns.shape[0]):
        for j in range(patterns.shape[0]):
            if i == j:
                continue
            a, b = patterns[i], patterns[j]
            both = (a >= 0) & (b >= 0)
            rows.append(np.flatnonzero(both))
            cols.append(a[both] * n_domain + b[both])
            vals.append(weight[both])
    # Imported here: scipy.sparse costs every process that imports this module ~20 MiB, and
    # web and beat processes import it without ever computing agreement.
    from scipy import sparse

    features = sparse.coo_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(n_patterns, n_domain * n_domain),
    ).tocsr()  # duplicate (row, col) entries are summed, as the definition needs
    present = patterns >= 0
    marginals = sparse.coo_matrix(
        (np.ones(int(present.sum())), (np.nonzero(present)[1], patterns[present])),
        shape=(n_patterns, n_domain),
    ).tocsr()
    return features, marginals, counts


def bootstrap_ci(
    reliability_data: Any,
    level: str,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    *,
    method: Method = "auto",
) -> BootstrapResult:
    """Percentile bootstrap CI for Krippendorff's alpha, resampling units.

    Source: Hayes & Krippendorff (2007) for bootstrapping alpha; the alpha of a
    resample uses the coincidence-matrix form of Krippendorff (2011).

    Only pairable units (2+ values) are resampled: the others carry no
    information on agreement and alpha() ignores them too. Each unit's
    coincidence matrix is a fixed V x V array, so a resample's matrix is the
    count-weighted sum of its units'. Units with identical value counts are
    grouped into patterns and each resample draws pattern counts
    ``Generator(seed).multinomial(units, pattern_frequency / units)`` - the
    same law as drawing units uniformly with replacement, at the cost of the
    number of patterns. For nominal, interval and ratio the observed
    disagreement is linear in the pattern counts and the expected one needs
    only the marginals, so no V x V matrix is built per resample; the ordinal
    metric depends on each resample's marginals and is recomputed from its
    full coincidence matrix. Interval data on the closed-form path (see
    :func:`alpha`; ``method`` forces it as there) resamples per-unit sums
    instead, one unit per "pattern", drawing unit indices uniformly.

    ``alpha`` is the full-data estimate and equals ``alpha(...).alpha``.
    Resamples whose alpha is undefined (e.g. a single distinct value) are
    dropped; ``n_kept`` reports how many remain. If the full-data alpha is
    undefined, everything is None and ``reason`` is alpha()'s reason.

    >>> r = bootstrap_ci([["a", "a", "b", "b"], ["a", "b", "b", "b"]], "nominal", n_resamples=200)
    >>> round(r.alpha, 4), r.n_resamples, r.n_kept <= 200
    (0.5333, 200, True)
    """
    if not isinstance(n_resamples, int) or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if method not in ("auto", "coincidence", "closed_form"):
        raise ValueError(f"bootstrap_ci method must be 'auto', 'coincidence' or 'closed_form', got {method!r}")

    prep = _prepare(reliability_data, level)

    def undefined(reason: str) -> BootstrapResult:
        return BootstrapResult(None, None, None, n_resamples, 0, confidence, level, prep.units, reason)

    if prep.reason is not None:
        return undefined(prep.reason)

    rng = np.random.Generator(np.random.PCG64(seed))
    n_units = prep.units
    closed_form = _use_closed_form(prep, method)

    if closed_form:
        features = _interval_unit_features(prep)
        point = float(_alpha_from_interval_sums(features.sum(axis=0)))
        width = n_units

        def draw(size: int) -> np.ndarray:
            # Uniform indices + bincount: the multinomial(units, 1/units) law,
            # without numpy's per-category binomial loop over 200K categories.
            idx = rng.integers(0, n_units, size=(size, n_units))
            offsets = (np.arange(size) * n_units)[:, None]
            return np.bincount((idx + offsets).ravel(), minlength=size * n_units).reshape(size, n_units)

        def estimate(weights: np.ndarray) -> np.ndarray:
            return _alpha_from_interval_sums(weights @ features)

    else:
        _check_matrix_size(prep)
        features, marginals, counts = _pattern_features(prep)
        n_domain = prep.n_domain
        pvals = counts / counts.sum()
        delta2 = _fixed_delta2(prep.domain, level)

        def draw(size: int) -> np.ndarray:
            return rng.multinomial(n_units, pvals, size=size)

        if delta2 is None:
            # Ordinal: the metric depends on each resample's marginals, so each
            # resample needs its whole coincidence matrix.
            def estimate(weights: np.ndarray) -> np.ndarray:
                o = (features.T @ weights.T.astype(np.float64)).T.reshape(-1, n_domain, n_domain)
                return _alpha_from_coincidences(o, prep.domain, level)

            width = len(counts) + 3 * n_domain * n_domain

        else:
            # sum_ck o_ck d2_ck is linear in o, so each pattern's share is
            # computed once; the expected part needs only the marginals n_c.
            observed_per_pattern = features @ delta2.ravel()

            def estimate(weights: np.ndarray) -> np.ndarray:
                w = weights.astype(np.float64)
                observed = w @ observed_per_pattern
                n_c = (marginals.T @ w.T).T
                n = n_c.sum(axis=1)
                expected = ((n_c @ delta2) * n_c).sum(axis=1)
                with np.errstate(divide="ignore", invalid="ignore"):
                    return np.where(expected > 0, 1.0 - (n - 1.0) * observed / expected, np.nan)

            width = len(counts) + 2 * n_domain

        point = float(estimate(counts[None, :])[0])

    if not math.isfinite(point):
        return undefined(REASON_ZERO_EXPECTED)

    # ``width`` is the per-resample working set: its weights plus whatever
    # the estimate builds from them.
    batch = max(1, min(n_resamples, _BATCH_ELEMENT_BUDGET // width))
    estimates = []
    for start in range(0, n_resamples, batch):
        estimates.append(estimate(draw(min(batch, n_resamples - start))))
    boot = np.concatenate(estimates)
    kept = boot[np.isfinite(boot)]
    if kept.size == 0:
        return BootstrapResult(
            point, None, None, n_resamples, 0, confidence, level, n_units, "no resample had a defined alpha"
        )
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(kept, [tail, 1.0 - tail])
    return BootstrapResult(point, float(low), float(high), n_resamples, int(kept.size), confidence, level, n_units)


def per_coder_agreement_with_reference(reliability_data: Any, reference: Sequence[Any]) -> dict[int, tuple[int, int]]:
    """For each coder (row), (units where its value equals the reference, units compared).

    A unit is compared when both the coder's value and the reference value
    are present (missing = None or NaN). Used for "agreement of each annotator
    with the consensus", the reference being the gold labels.

    >>> per_coder_agreement_with_reference([["a", "b", None], ["a", "a", "a"]], ["a", "b", None])
    {0: (2, 2), 1: (1, 2)}
    """
    rows = [list(row) for row in reliability_data]
    reference = list(reference)
    for i, row in enumerate(rows):
        if len(row) != len(reference):
            raise ValueError(f"coder {i} has {len(row)} units but the reference has {len(reference)}")
    # Coding coders and reference together makes equal values share a code.
    codes, _, _ = _to_arrays(rows + [reference], "nominal")
    ref = codes[-1]
    result: dict[int, tuple[int, int]] = {}
    for i in range(len(rows)):
        compared = (codes[i] >= 0) & (ref >= 0)
        result[i] = (int((codes[i][compared] == ref[compared]).sum()), int(compared.sum()))
    return result


def slot_matrix(unit_index: np.ndarray, codes: np.ndarray, n_units: int) -> np.ndarray:
    """A reliability matrix from (unit, value) pairs: one row per value slot (the i-th value
    of each unit), one column per unit, NaN where a unit has fewer values. Alpha depends
    only on each unit's multiset of values, not on who gave them, so this equals the
    coders × units matrix for alpha and needs only (max values per unit) rows.

    >>> slot_matrix(np.array([0, 0, 1]), np.array([2.0, 3.0, 2.0]), 2).tolist()
    [[2.0, 2.0], [3.0, nan]]
    """
    if unit_index.size == 0:
        return np.full((0, n_units), np.nan)
    order = np.argsort(unit_index, kind="stable")
    units_sorted = unit_index[order]
    first = np.searchsorted(units_sorted, units_sorted, side="left")
    slot = np.arange(units_sorted.size) - first
    matrix = np.full((int(slot.max()) + 1, n_units), np.nan)
    matrix[slot, units_sorted] = codes[order]
    return matrix
