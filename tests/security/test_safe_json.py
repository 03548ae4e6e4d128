"""The strict JSON reader every outside JSON goes through (no database)."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.safe_json import MAX_DEPTH, UnsafeJSON, loads, nesting_depth


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"score": -Infinity}'])
def test_non_finite_numbers_are_refused(text):
    with pytest.raises(UnsafeJSON, match="is not a JSON number"):
        loads(text)


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 1_000, 3_000, 100_000])
def test_deep_nesting_is_refused_without_recursion_error(depth):
    with pytest.raises(UnsafeJSON, match="nests deeper"):
        loads("[" * depth + "]" * depth)
    with pytest.raises(UnsafeJSON, match="nests deeper"):
        loads('{"a":' * depth + "1" + "}" * depth)


def test_nesting_at_the_limit_is_accepted():
    assert nesting_depth(loads("[" * MAX_DEPTH + "]" * MAX_DEPTH)) == MAX_DEPTH


def test_malformed_json_says_where():
    with pytest.raises(UnsafeJSON, match="line 1, column 7"):
        loads('{"a": }')


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=30,
)


# No deadline: the suite runs beside a worker and PostgreSQL on two cores.
@settings(deadline=None)
@given(json_values)
def test_agrees_with_json_loads_on_ordinary_json(value):
    text = json.dumps(value, ensure_ascii=False)
    assert loads(text) == json.loads(text)


@pytest.mark.parametrize(
    ("text", "reason"),
    [("1e400", "beyond the range"), ("[-1e999]", "beyond the range"), ("9" * 5_000, "too many digits")],
)
def test_numbers_python_cannot_hold_are_refused(text, reason):
    with pytest.raises(UnsafeJSON, match=reason):
        loads(text)
