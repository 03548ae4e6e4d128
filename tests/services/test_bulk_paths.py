"""The bulk paths' shortcuts give what the plain code gives: the export's copy-on-write
pass that leaves out empty objects writes the same bytes, the JSON reader with its nesting
bound reads and refuses what the plain reader does, an import skips its per-string checks
only for a file that cannot hold NUL or a surrogate, and the item table keeps no index an
import must fill for nothing."""

import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation import safe_json
from annotation.services.exports import without_empty_objects

KEYS = st.sampled_from(["a", "b", "extra", "aggregates", "votes", "פרמיסה", ""])
LEAVES = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
TREES = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=30,
)


def reference_without_empty(value):
    """The pass as first written: a new object everywhere, every member visited."""
    if isinstance(value, dict):
        kept = {}
        for key, inner in value.items():
            inner = reference_without_empty(inner)
            if isinstance(inner, dict) and not inner:
                continue
            kept[key] = inner
        return kept
    if isinstance(value, list):
        return [reference_without_empty(inner) for inner in value]
    return value


@settings(max_examples=400, deadline=None)
@given(TREES)
def test_leaving_out_empty_objects_writes_the_same_bytes_and_changes_nothing_given(value):
    before = json.dumps(value, ensure_ascii=False)
    result = without_empty_objects(value)
    assert json.dumps(result, ensure_ascii=False) == json.dumps(reference_without_empty(value), ensure_ascii=False)
    assert json.dumps(value, ensure_ascii=False) == before  # the record given is never changed


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(KEYS, TREES, max_size=6))
def test_a_jsonl_line_is_the_record_without_empty_objects_whether_or_not_it_holds_one(record):
    from annotation.services.exports import _jsonl_line

    assert _jsonl_line(record) == json.dumps(reference_without_empty(record), ensure_ascii=False)


def test_an_object_emptied_inside_is_left_out_at_every_depth():
    record = {"id": "x", "extra": {"a": {"b": {}}}, "list": [{"c": {}}, {}], "kept": {"d": 1, "e": {}}}
    assert without_empty_objects(record) == {"id": "x", "list": [{}, {}], "kept": {"d": 1}}
    assert record["extra"] == {"a": {"b": {}}}


@settings(max_examples=300, deadline=None)
@given(TREES)
def test_the_json_reader_reads_what_json_reads(value):
    text = json.dumps(value, ensure_ascii=False)
    assert safe_json.loads(text) == json.loads(text)
    assert safe_json.loads(text.encode()) == json.loads(text)


@pytest.mark.parametrize("depth", [64, 65, 200])
def test_the_nesting_bound_still_refuses_deep_values_whatever_the_strings_hold(depth):
    deep = "[" * depth + '"{[{["' + "]" * depth
    if depth <= safe_json.MAX_DEPTH:
        assert safe_json.loads(deep) is not None
    else:
        with pytest.raises(safe_json.UnsafeJSON):
            safe_json.loads(deep)
    # Brackets inside strings count toward the bound but nest nothing: read as they are.
    shallow = json.dumps({"t": "{[" * 100})
    assert safe_json.loads(shallow) == {"t": "{[" * 100}


def _upload(data: bytes, name: str):
    handle = io.BytesIO(data)
    handle.name = name
    return handle


@pytest.mark.django_db
@pytest.mark.parametrize(
    "fmt, data, field",
    [
        # A NUL reached through a JSON escape, deep in a member only the per-string walk visits.
        ("jsonl", b'{"id": "a", "premise": "p", "hypothesis": "h", "extra": {"note": ["ok", "x\\u0000"]}}\n', "extra"),
        ("jsonl", b'{"id": "a", "premise": "p", "hypothesis": "h", "extra": {"k\\ud800": 1}}\n', "extra"),
        ("csv", b'id,premise,hypothesis,extra\na,p,h,"{""note"": ""x\\u0000""}"\n', "extra"),
    ],
)
def test_a_file_that_can_hold_an_unstorable_string_is_still_checked(
    nli_project, client_for, make_user, fmt, data, field
):
    from annotation.models import Item

    client = client_for(make_user("bulk-sup", staff=True))
    response = client.post(
        f"/api/projects/{nli_project.slug}/import/", {"file": _upload(data, f"f.{fmt}"), "format": fmt}
    )
    assert response.status_code == 400, response.content
    errors = response.json()["errors"]
    assert errors and all(error["field"].startswith(field) for error in errors), errors
    assert not Item.objects.filter(project=nli_project).exists()


def test_only_a_nul_or_a_json_escape_makes_a_file_need_the_string_checks():
    from annotation.services.imports import strings_to_check

    assert not strings_to_check("jsonl", '{"id": "א", "premise": "שלום\\n"}\n')
    assert strings_to_check("jsonl", '{"id": "a", "premise": "\\u05e9"}\n')
    assert strings_to_check("csv", "id,premise\na,x\x00y\n")
    assert strings_to_check("farstail", "premise\thypothesis\n")  # a kind's own reader: always checked


@pytest.mark.django_db
def test_the_item_table_has_no_index_an_import_fills_for_nothing():
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'annotation_item'")
        definitions = [row[0] for row in cursor.fetchall()]
    # Every index begins with the project except the primary key and the two partial ones.
    assert not any(definition.endswith("btree (project_id)") for definition in definitions), definitions
    for column in ("author_id", "probe_of_id"):
        (definition,) = [d for d in definitions if d.split("btree ")[1].startswith(f"({column})")]
        assert definition.endswith(f"WHERE ({column} IS NOT NULL)"), definition
