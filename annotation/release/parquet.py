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


def _shape(values: Iterable) -> tuple:
    """The type of `values` as a tuple: ("null",), ("bool",), ("int",), ("float",),
    ("text",), ("json",) for mixed values, ("list", inner), ("struct", ((name, shape), ...))."""
    kinds: set[str] = set()
    objects: list[dict] = []
    lists: list[list] = []
    for value in values:
        if value is None:
            continue
        if isinstance(value, bool):
            kinds.add("bool")
        elif isinstance(value, int):
            kinds.add("int" if INT64_MIN <= value <= INT64_MAX else "json")
        elif isinstance(value, float):
            kinds.add("float")
        elif isinstance(value, str):
            kinds.add("text")
        elif isinstance(value, dict):
            kinds.add("struct")
            objects.append(value)
        elif isinstance(value, list):
            kinds.add("list")
            lists.append(value)
        else:
            kinds.add("json")
    if not kinds:
        return ("null",)
    if kinds == {"float"} or kinds == {"int", "float"}:
        return ("float",)
    if len(kinds) > 1 or kinds == {"json"}:
        return ("json",)
    kind = kinds.pop()
    if kind == "list":
        return ("list", _shape(entry for value in lists for entry in value))
    if kind == "struct":
        names = list(dict.fromkeys(name for value in objects for name in value))
        if not names:
            return ("null",)
        return ("struct", tuple((name, _shape(value.get(name) for value in objects)) for name in names))
    return (kind,)


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
    """The shape of a table of `records` (a struct of its columns); see the module docstring.

    >>> records_shape([{"a": 1, "b": {}}, {"a": 2.5, "c": ["x"]}])
    ('struct', (('a', ('float',)), ('b', ('null',)), ('c', ('list', ('text',)))))
    """
    shape = _shape(records)
    return shape if shape[0] == "struct" else ("struct", ())


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
