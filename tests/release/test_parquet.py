"""A release's Parquet schema (annotation/release/parquet.py): inferred from every record,
whatever their order, for any JSON records; typed columns, with text only where no type
holds the values."""

import io

import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.release.parquet import records_parquet, records_shape


def read(records):
    table = pq.read_table(io.BytesIO(records_parquet(records, records_shape(records))))
    return table.schema, table.to_pylist()


def test_members_objects_and_lists_are_typed_from_every_record():
    schema, rows = read(
        [
            {"id": "a", "votes": {"e": 1}, "tags": []},
            {"id": "b", "votes": {"n": 2}, "extra": {"x": "1"}, "tags": [{"tag": "t", "count": 2}]},
        ]
    )
    assert str(schema.field("votes").type) == "struct<e: int64, n: int64>"
    assert str(schema.field("extra").type) == "struct<x: string>"
    assert str(schema.field("tags").type) == "list<element: struct<tag: string, count: int64>>"
    assert rows[0] == {"id": "a", "votes": {"e": 1, "n": None}, "tags": [], "extra": None}
    assert rows[1]["tags"] == [{"tag": "t", "count": 2}]


def test_numbers_widen_empty_objects_are_null_and_mixed_values_are_text():
    schema, rows = read(
        [
            {"mean": 4, "score": "5", "empty": {}, "big": 2**70},
            {"mean": 3.5, "score": 4, "empty": {}, "big": 1},
        ]
    )
    assert [str(schema.field(name).type) for name in ("mean", "score", "empty", "big")] == [
        "double",
        "string",
        "null",
        "string",
    ]
    assert [row["mean"] for row in rows] == [4.0, 3.5]
    assert [row["score"] for row in rows] == ["5", "4"]  # the number as JSON text
    assert [row["big"] for row in rows] == [str(2**70), "1"]
    assert [row["empty"] for row in rows] == [None, None]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abc"), inner, max_size=3),
    max_leaves=6,
)
# Every exported record has its id.
RECORDS = st.lists(
    st.fixed_dictionaries({"id": st.text(max_size=3)}, optional={"votes": JSON, "extra": JSON, "n": JSON}), max_size=6
)


# The machines running the suite are shared: a slow draw is no failure.
@settings(suppress_health_check=[HealthCheck.too_slow])
@given(RECORDS, st.randoms(use_true_random=False))
def test_any_json_records_write_and_the_schema_does_not_depend_on_their_order(records, rnd):
    schema, rows = read(records)
    assert len(rows) == len(records)
    names = {name for record in records for name in record}
    assert set(schema.names) == names
    shuffled = list(records)
    rnd.shuffle(shuffled)
    other = records_shape(shuffled)
    # The same columns with the same types; only the order members first appear in differs.
    assert dict(_types(other)) == dict(_types(records_shape(records)))


def _types(shape):
    """(name, type) of a struct shape with members sorted at every depth."""
    if shape[0] == "struct":
        return tuple(sorted((name, _types(inner)) for name, inner in shape[1]))
    if shape[0] == "list":
        return ("list", _types(shape[1]))
    return shape
