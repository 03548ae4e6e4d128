"""A release's Parquet files: the JSONL records of every split as typed columns, under one
schema for all splits (docs/api.md "Releases").

The schema is inferred from the records themselves, every record of every split, so that
it does not depend on which item comes first or which split a file holds:

- numbers stay numbers (an integer column with a fraction anywhere is float64), booleans
  booleans, text text;
- an object is a struct whose fields are every member any record has, in the order they
  first appear (a record without one reads it as null);
- a list is a list of the type that holds every entry of every record's list;
- an object that is empty in every record is null (Parquet has no struct without fields),
  and a member absent everywhere is no field at all;
- a value that is sometimes text and sometimes a number or an object (no type holds both)
  is text, the non-text values written as JSON.

What `datasets.load_dataset` gives for the JSONL file is what it gives for the Parquet file."""

from __future__ import annotations

import io
import json
from collections.abc import Iterable

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


NULL, JSON_TEXT, EMPTY = ("null",), ("json",), ("struct", ())
_NUMBERS = {("int",), ("float",)}


def _shape_of(value) -> tuple:
    """The type of one value as a tuple: ("null",), ("bool",), ("int",), ("float",),
    ("text",), ("json",) for no one type, ("list", inner), ("struct", ((name, shape), ...))."""
    if value is None:
        return NULL
    if isinstance(value, bool):
        return ("bool",)
    if isinstance(value, int):
        return ("int",) if INT64_MIN <= value <= INT64_MAX else JSON_TEXT
    if isinstance(value, float):
        return ("float",)
    if isinstance(value, str):
        return ("text",)
    if isinstance(value, list):
        inner = NULL
        for entry in value:
            inner = _merge(inner, _shape_of(entry))
        return ("list", inner)
    if isinstance(value, dict):
        return ("struct", tuple((name, _shape_of(member)) for name, member in value.items()))
    return JSON_TEXT


def _merge(a: tuple, b: tuple) -> tuple:
    """The type that holds the values of types `a` and `b`."""
    if a == b or b == NULL:
        return a
    if a == NULL:
        return b
    if a == JSON_TEXT or b == JSON_TEXT:
        return JSON_TEXT
    if a in _NUMBERS and b in _NUMBERS:
        return ("float",)
    if a[0] == b[0] == "list":
        return ("list", _merge(a[1], b[1]))
    if a[0] == b[0] == "struct":
        fields = dict(a[1])
        for name, inner in b[1]:
            fields[name] = _merge(fields[name], inner) if name in fields else inner
        return ("struct", tuple(fields.items()))
    return JSON_TEXT


def _final(shape: tuple) -> tuple:
    """`shape` with every struct that never had a member as null (Parquet has no struct
    without fields)."""
    if shape[0] == "list":
        return ("list", _final(shape[1]))
    if shape[0] == "struct":
        return ("struct", tuple((name, _final(inner)) for name, inner in shape[1])) if shape[1] else NULL
    return shape


def _arrow_type(shape: tuple):
    import pyarrow as pa

    simple = {"null": pa.null(), "bool": pa.bool_(), "int": pa.int64(), "float": pa.float64()}
    if shape[0] in simple:
        return simple[shape[0]]
    if shape[0] in ("text", "json"):
        return pa.string()
    if shape[0] == "list":
        return pa.list_(_arrow_type(shape[1]))
    return pa.struct([pa.field(name, _arrow_type(inner)) for name, inner in shape[1]])


def _conform(value, shape: tuple):
    """`value` as a column of `shape` holds it."""
    if value is None or shape[0] == "null":
        return None
    if shape[0] == "json":
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if shape[0] == "float":
        return float(value)
    if shape[0] == "list":
        return [_conform(entry, shape[1]) for entry in value]
    if shape[0] == "struct":
        return {name: _conform(value.get(name), inner) for name, inner in shape[1]}
    return value


def records_shape(records: Iterable[dict]) -> tuple:
    """The shape of a table of `records` (a struct of its columns), read one record at a
    time: memory grows with the schema, not with the records. See the module docstring.

    >>> records_shape([{"a": 1, "b": {}}, {"a": 2.5, "c": ["x"]}])
    ('struct', (('a', ('float',)), ('b', ('null',)), ('c', ('list', ('text',)))))
    """
    shape = EMPTY
    for record in records:
        shape = _merge(shape, _shape_of(record))
    return shape if shape[1] == () else ("struct", tuple((name, _final(inner)) for name, inner in shape[1]))


def records_parquet(records: list[dict], shape: tuple) -> bytes:
    """`records` as a Parquet file of the columns `shape` (records_shape) names."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([pa.field(name, _arrow_type(inner)) for name, inner in shape[1]])
    columns = {name: [_conform(record.get(name), inner) for record in records] for name, inner in shape[1]}
    table = pa.Table.from_pydict(columns, schema=schema)
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()
