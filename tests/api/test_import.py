"""Import through `POST /api/projects/{slug}/import/` and `manage.py import_items`.

Good files (JSONL, CSV, FarsTail's own TSV) are stored byte-exact; bad files get a 400 (or
413) whose `errors` name the field and row, and store NOTHING (docs/api.md "General rules": all or nothing)."""

import codecs
import csv
import io
import json
from pathlib import Path

import pytest

from tests.conftest import NOTHING_HELD_OUT

FARSTAIL = Path(__file__).resolve().parents[3] / "shared" / "data" / "farstail"
SLUG = "fa-nli"
URL = f"/api/projects/{SLUG}/import/"
ZWNJ, LRM, RLM, NBSP, RLO = "\u200c", "\u200e", "\u200f", "\u00a0", "\u202e"


def upload(name: str, data: str | bytes):
    handle = io.BytesIO(data.encode("utf-8") if isinstance(data, str) else data)
    handle.name = name
    return handle


def jsonl(*records) -> str:
    return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)


def error_list(response, status: int = 400) -> list[dict]:
    assert response.status_code == status, response.content[:1000]
    body = response.json()
    assert set(body) == {"errors"}, body
    errors = body["errors"]
    assert isinstance(errors, list) and errors
    for error in errors:
        assert {"field", "message"} <= set(error) <= {"field", "message", "row"}, error
        assert isinstance(error["message"], str) and error["message"]
    return errors


def has_error(errors, *, field=None, row=None, any_field=False) -> bool:
    return any((any_field or error["field"] == field) and (row is None or error.get("row") == row) for error in errors)


def read_farstail(name: str) -> tuple[list[str], list[list[str]]]:
    """The file's header and rows, read independently of the product with csv.reader."""
    with open(FARSTAIL / name, encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle, delimiter="\t"))
    return rows[0], rows[1:]


@pytest.fixture
def sup(nli_project, client_for, django_user_model):
    return client_for(django_user_model.objects.get(username="sup"))


@pytest.fixture
def post(sup):
    def send(name: str, data: str | bytes, fmt: str):
        return sup.post(URL, {"file": upload(name, data), "format": fmt})

    return send


def all_items(client, **params) -> list[dict]:
    query = "&".join(f"{key}={value}" for key, value in {"page_size": 1000, **params}.items())
    response = client.get(f"/api/projects/{SLUG}/items/?{query}")
    assert response.status_code == 200, response.content[:500]
    body = response.json()
    assert body["count"] <= 1000
    return body["results"]


# ---------------------------------------------------------------- good files


@pytest.mark.django_db
def test_jsonl_import_stores_text_byte_exact(sup, post):
    premise = f"می{ZWNJ}خواهم کتاب بخوانم.  "  # ZWNJ inside the word, two trailing spaces
    hypothesis = f'{NBSP}הוא אמר {RLM}"שלום"{LRM} 42 times{NBSP}'
    free_text_override = f"a {RLO}bidi override{chr(0x202C)} in free text is kept"
    response = post(
        "items.jsonl",
        jsonl(
            {"id": "a", "premise": premise, "hypothesis": hypothesis, "label": "e", "group": "g1", "split": "dev"},
            {"id": "b", "premise": "e\u0301 not NFC", "hypothesis": free_text_override, "label": "contradiction"},
            {"id": 7, "premise": "numeric id", "hypothesis": "h", "label": "neutral"},
        ),
        "jsonl",
    )
    assert response.status_code == 201, response.content
    assert response.json() == {"created": 3, "skipped": 0, "job": None, **NOTHING_HELD_OUT}
    items = {item["external_id"]: item for item in all_items(sup)}
    assert set(items) == {"a", "b", "7"}
    assert items["a"]["payload"]["premise"] == premise
    assert items["a"]["payload"]["hypothesis"] == hypothesis
    assert items["a"]["group"] == "g1" and items["a"]["split"] == "dev"
    assert items["a"]["reference_label"] == "entailment"
    assert items["b"]["payload"]["premise"] == "e\u0301 not NFC"  # no normalisation on the way in
    assert items["b"]["payload"]["hypothesis"] == free_text_override
    assert items["b"]["reference_label"] == "contradiction"
    assert all(item["status"] == "open" and item["round"] == 1 for item in items.values())
    assert all(isinstance(item["id"], int) for item in items.values())


@pytest.mark.django_db
def test_jsonl_with_bom_crlf_and_blank_lines(sup, post):
    data = (
        codecs.BOM_UTF8
        + (
            '{"id": "a", "premise": "p1", "hypothesis": "h1"}\r\n\r\n{"id": "b", "premise": "p2", "hypothesis": "h2"}\r\n'
        ).encode()
    )
    response = post("items.jsonl", data, "jsonl")
    assert response.status_code == 201, response.content
    assert response.json()["created"] == 2
    items = {item["external_id"]: item["payload"] for item in all_items(sup)}
    assert items == {"a": {"premise": "p1", "hypothesis": "h1"}, "b": {"premise": "p2", "hypothesis": "h2"}}


@pytest.mark.django_db
def test_csv_import_with_quoted_commas_and_newlines(sup, post):
    rows = [
        ["id", "premise", "hypothesis", "label", "group", "split"],
        ["r1", "שלום, עולם", "line one\nline two, with comma", "n", "g", "train"],
        ["r2", 'he said "hi", then left', f"می{ZWNJ}روم ", "entailment", "g", "train"],
        ["r3", "  leading and trailing  ", "tab\tinside", "", "", ""],
    ]
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerows(rows)
    response = post("items.csv", buffer.getvalue(), "csv")
    assert response.status_code == 201, response.content
    assert response.json() == {"created": 3, "skipped": 0, "job": None, **NOTHING_HELD_OUT}
    items = {item["external_id"]: item for item in all_items(sup)}
    for row in rows[1:]:
        item = items[row[0]]
        assert item["payload"]["premise"] == row[1]
        assert item["payload"]["hypothesis"] == row[2]
        assert item["group"] == row[4] and item["split"] == row[5]
    assert items["r1"]["reference_label"] == "neutral"
    assert items["r2"]["reference_label"] == "entailment"
    assert items["r3"]["reference_label"] == ""


@pytest.mark.django_db
def test_farstail_val_and_test_files(sup, post, django_user_model):
    """Row count, groups = runs of identical premises, e/c/n labels, hard(...) columns, exact text."""
    labels = {"e": "entailment", "c": "contradiction", "n": "neutral"}
    expected_total = 0
    for name in ("Val-word.csv", "Test-word.csv"):
        header, rows = read_farstail(name)
        response = post(name, (FARSTAIL / name).read_bytes(), "farstail")
        assert response.status_code == 201, response.content[:1000]
        assert response.json() == {"created": len(rows), "skipped": 0, "job": None, **NOTHING_HELD_OUT}
        expected_total += len(rows)

        items = all_items(sup)
        assert len(items) == expected_total
        by_pair = {(item["payload"]["premise"], item["payload"]["hypothesis"]): item for item in items}
        # Every row's text is found exactly (byte for byte: ZWNJ, trailing spaces, quotes, tabs).
        file_items = []
        for row in rows:
            item = by_pair.get((row[0], row[1]))
            assert item is not None, f"row text changed on import: {row[0][:30]!r} / {row[1][:30]!r}"
            assert item["payload"]["premise"].encode("utf-8") == row[0].encode("utf-8")
            assert item["payload"]["hypothesis"].encode("utf-8") == row[1].encode("utf-8")
            assert item["reference_label"] == labels[row[2]]
            for column, value in zip(header[3:], row[3:]):
                assert item["payload"]["extra"][column] == value
            file_items.append(item)
        # The sample does exercise what byte-exactness protects.
        assert any(ZWNJ in row[0] + row[1] for row in rows)
        assert any(field != field.rstrip() for row in rows for field in row[:2])

        # Groups: independently computed runs of identical consecutive premises.
        runs, previous = [], object()
        for row in rows:
            if row[0] != previous:
                runs.append([])
                previous = row[0]
            runs[-1].append(row)
        groups = [item["group"] for item in file_items]
        assert all(groups), "every FarsTail row belongs to a group"
        assert len(set(groups)) == len(runs)
        for index in range(1, len(rows)):
            same_premise = rows[index][0] == rows[index - 1][0]
            assert (groups[index] == groups[index - 1]) == same_premise, index
        # Spot checks: the first run and the longest run map to one group of the same size.
        for run in (runs[0], max(runs, key=len)):
            run_groups = {by_pair[(row[0], row[1])]["group"] for row in run}
            assert len(run_groups) == 1
            assert sum(1 for group in groups if group in run_groups) == len(run)
        if header[3:]:
            assert header[3:] == ["hard(hypothesis)", "hard(overlap)"]

    # No group spans both files.
    val_groups = {item["group"] for item in all_items(sup) if item["payload"].get("extra") is None}
    test_groups = {item["group"] for item in all_items(sup) if item["payload"].get("extra") is not None}
    assert val_groups and test_groups and not (val_groups & test_groups)


@pytest.mark.django_db
def test_farstail_label_counts_match_the_file(sup, post):
    header, rows = read_farstail("Val-word.csv")
    assert post("Val-word.csv", (FARSTAIL / "Val-word.csv").read_bytes(), "farstail").status_code == 201
    counted = {}
    for item in all_items(sup):
        counted[item["reference_label"]] = counted.get(item["reference_label"], 0) + 1
    expected = {}
    for row in rows:
        long = {"e": "entailment", "c": "contradiction", "n": "neutral"}[row[2]]
        expected[long] = expected.get(long, 0) + 1
    assert counted == expected


@pytest.mark.django_db
def test_reimport_skips_every_row(sup, post):
    from annotation.models import Item

    data = (FARSTAIL / "Val-word.csv").read_bytes()
    _, rows = read_farstail("Val-word.csv")
    first = post("Val-word.csv", data, "farstail")
    assert first.status_code == 201
    before = list(Item.objects.order_by("pk").values_list("pk", "external_id", "payload", "group"))
    second = post("Val-word.csv", data, "farstail")
    assert second.status_code == 201, second.content[:500]
    assert second.json() == {"created": 0, "skipped": len(rows), "job": None, **NOTHING_HELD_OUT}
    assert list(Item.objects.order_by("pk").values_list("pk", "external_id", "payload", "group")) == before

    lines = jsonl({"id": "x", "premise": "p", "hypothesis": "h", "label": "n"})
    assert post("x.jsonl", lines, "jsonl").json() == {"created": 1, "skipped": 0, "job": None, **NOTHING_HELD_OUT}
    assert post("x.jsonl", lines, "jsonl").json() == {"created": 0, "skipped": 1, "job": None, **NOTHING_HELD_OUT}


@pytest.mark.django_db
def test_import_with_existing_author(sup, post, django_user_model):
    response = post(
        "a.jsonl", jsonl({"id": "a", "premise": "p", "hypothesis": "h", "label": "e", "author": "ann1"}), "jsonl"
    )
    assert response.status_code == 201, response.content
    [item] = all_items(sup)
    assert item["author"] == "ann1"


# ---------------------------------------------------------------- bad files

GOOD = {"id": "ok", "premise": "פרמיסה", "hypothesis": "השערה", "label": "e"}

BAD_FILES = [
    # name, filename, data, format, expected (field, row) pairs; field "*" = any
    (
        "malformed-json-line",
        "x.jsonl",
        jsonl(GOOD) + '{"id": "b", "premise": "p", "hypothesis": \n',
        "jsonl",
        [("*", 2)],
    ),
    ("json-line-not-an-object", "x.jsonl", jsonl(GOOD) + '["b", "p", "h"]\n', "jsonl", [("*", 2)]),
    ("json-line-a-string", "x.jsonl", jsonl(GOOD) + '"just text"\n', "jsonl", [("*", 2)]),
    ("csv-without-id-column", "x.csv", "premise,hypothesis\np,h\n", "csv", [("*", None)]),
    ("csv-row-with-extra-fields", "x.csv", "id,premise,hypothesis\na,p,h\nb,p,h,surplus\n", "csv", [("*", 2)]),
    (
        "latin-1-bytes",
        "x.jsonl",
        '{"id": "a", "premise": "café", "hypothesis": "h"}\n'.encode("latin-1"),
        "jsonl",
        [("file", None)],
    ),
    ("utf-16-with-bom", "x.jsonl", jsonl(GOOD).encode("utf-16"), "jsonl", [("file", None)]),
    ("utf-16-csv", "x.csv", "id,premise,hypothesis\na,p,h\n".encode("utf-16"), "csv", [("file", None)]),
    (
        "nul-escape-in-jsonl",
        "x.jsonl",
        jsonl(GOOD) + '{"id": "b", "premise": "a\\u0000b", "hypothesis": "h"}\n',
        "jsonl",
        [("premise", 2)],
    ),
    (
        "raw-nul-in-jsonl",
        "x.jsonl",
        jsonl(GOOD) + '{"id": "b", "premise": "a\x00b", "hypothesis": "h"}\n',
        "jsonl",
        [("*", 2)],
    ),
    ("raw-nul-in-csv", "x.csv", "id,premise,hypothesis\na,p,h\nb,x\x00y,h\n", "csv", [("premise", 2)]),
    (
        "nul-in-json-key",
        "x.jsonl",
        jsonl(GOOD) + '{"id": "b", "premise": "p", "hypothesis": "h", "x\\u0000": 1}\n',
        "jsonl",
        [("*", 2)],
    ),
    (
        "lone-surrogate-escape",
        "x.jsonl",
        jsonl(GOOD) + '{"id": "b", "premise": "p", "hypothesis": "x\\ud800y"}\n',
        "jsonl",
        [("hypothesis", 2)],
    ),
    (
        "lone-low-surrogate-in-id",
        "x.jsonl",
        jsonl(GOOD) + '{"id": "\\udc00", "premise": "p", "hypothesis": "h"}\n',
        "jsonl",
        [("id", 2)],
    ),
    (
        "duplicate-ids-in-file",
        "x.jsonl",
        jsonl(
            GOOD, {"id": "b", "premise": "p", "hypothesis": "h"}, {"id": "ok", "premise": "other", "hypothesis": "h"}
        ),
        "jsonl",
        [("id", 3)],
    ),
    (
        "label-outside-set",
        "x.jsonl",
        jsonl(GOOD, {"id": "b", "premise": "p", "hypothesis": "h", "label": "maybe"}),
        "jsonl",
        [("label", 2)],
    ),
    (
        "label-wrong-type",
        "x.jsonl",
        jsonl(GOOD, {"id": "b", "premise": "p", "hypothesis": "h", "label": 1}),
        "jsonl",
        [("label", 2)],
    ),
    (
        "bidi-override-in-id",
        "x.jsonl",
        jsonl(GOOD, {"id": f"b{RLO}x", "premise": "p", "hypothesis": "h"}),
        "jsonl",
        [("id", 2)],
    ),
    (
        "bidi-override-in-group",
        "x.jsonl",
        jsonl(GOOD, {"id": "b", "premise": "p", "hypothesis": "h", "group": f"g{RLO}"}),
        "jsonl",
        [("group", 2)],
    ),
    (
        "bidi-isolate-in-split",
        "x.jsonl",
        jsonl(GOOD, {"id": "b", "premise": "p", "hypothesis": "h", "split": "\u2067dev"}),
        "jsonl",
        [("split", 2)],
    ),
    (
        "unknown-author",
        "x.jsonl",
        jsonl(GOOD, {"id": "b", "premise": "p", "hypothesis": "h", "author": "nobody"}),
        "jsonl",
        [("author", 2)],
    ),
    ("missing-premise", "x.jsonl", jsonl(GOOD, {"id": "b", "hypothesis": "h"}), "jsonl", [("premise", 2)]),
    ("missing-id", "x.jsonl", jsonl(GOOD, {"premise": "p", "hypothesis": "h"}), "jsonl", [("id", 2)]),
    (
        "premise-not-a-string",
        "x.jsonl",
        jsonl(GOOD, {"id": "b", "premise": ["p"], "hypothesis": "h"}),
        "jsonl",
        [("premise", 2)],
    ),
    ("empty-file", "x.jsonl", b"", "jsonl", [("file", None)]),
    ("blank-lines-only", "x.jsonl", "\n\n  \n", "jsonl", [("file", None)]),
    ("header-only-csv", "x.csv", "id,premise,hypothesis\n", "csv", [("file", None)]),
    ("unknown-format", "x.xml", jsonl(GOOD), "xml", [("format", None)]),
    ("missing-format", "x.jsonl", jsonl(GOOD), "", [("format", None)]),
    ("format-the-kind-lacks", "x.json", '{"version": "v2.0", "data": []}', "squad", [("format", None)]),
    ("farstail-wrong-header", "Val.csv", "a\tb\tc\nx\ty\te\n", "farstail", [("file", None)]),
    ("farstail-bad-label", "Val.csv", "premise\thypothesis\tlabel\np\th\te\np\th2\tx\n", "farstail", [("label", 2)]),
    ("farstail-short-row", "Val.csv", "premise\thypothesis\tlabel\np\th\te\np\th2\n", "farstail", [("*", 2)]),
]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("filename", "data", "fmt", "expected"), [case[1:] for case in BAD_FILES], ids=[case[0] for case in BAD_FILES]
)
def test_bad_file_is_refused_and_nothing_is_stored(post, filename, data, fmt, expected):
    from annotation.models import Item

    before = Item.objects.count()
    errors = error_list(post(filename, data, fmt))
    for field, row in expected:
        assert has_error(errors, field=field, row=row, any_field=field == "*"), (field, row, errors)
    assert Item.objects.count() == before == 0


@pytest.mark.django_db
def test_row_errors_carry_field_and_row(post):
    errors = error_list(
        post("x.jsonl", jsonl(GOOD, {"id": "b", "premise": "p", "hypothesis": "h", "label": "maybe"}), "jsonl")
    )
    assert errors == [{"field": "label", "message": errors[0]["message"], "row": 2}]
    assert "entailment" in errors[0]["message"]


@pytest.mark.django_db
def test_id_that_exists_with_other_content(post):
    from annotation.models import Item

    assert post("x.jsonl", jsonl(GOOD), "jsonl").status_code == 201
    changed = dict(GOOD, premise=GOOD["premise"] + " ")  # one trailing space is other content
    errors = error_list(post("y.jsonl", jsonl({"id": "new", "premise": "p", "hypothesis": "h"}, changed), "jsonl"))
    assert has_error(errors, field="id", row=2), errors
    assert list(Item.objects.values_list("external_id", flat=True)) == ["ok"]
    assert Item.objects.get().payload["premise"] == GOOD["premise"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "change", [{"label": "c"}, {"group": "other"}, {"split": "test"}], ids=["label", "group", "split"]
)
def test_existing_id_with_other_metadata_is_refused(post, change):
    from annotation.models import Item

    assert post("x.jsonl", jsonl(GOOD), "jsonl").status_code == 201
    errors = error_list(post("y.jsonl", jsonl(dict(GOOD, **change)), "jsonl"))
    assert has_error(errors, field="id", row=1), errors
    assert Item.objects.count() == 1


@pytest.mark.django_db
def test_several_bad_rows_are_all_listed(post):
    from annotation.models import Item

    lines = [
        json.dumps(GOOD),  # 1 good
        '{"id": "b", "premise": "p", "hypothesis": "h", "label": "wrong"}',  # 2 label
        '{"id": "c", "premise": "p"',  # 3 malformed
        '{"id": "d", "premise": "p", "hypothesis": "h"}',  # 4 good
        '{"id": "e", "premise": "a\\u0000", "hypothesis": "h"}',  # 5 NUL
        '{"id": "ok", "premise": "p", "hypothesis": "h"}',  # 6 duplicate id
        '{"id": "g\u202e", "premise": "p", "hypothesis": "h"}',  # 7 bidi in id
        '{"id": "h", "hypothesis": "h"}',  # 8 missing premise
        "[1, 2]",  # 9 not an object
        '{"id": "j", "premise": "p", "hypothesis": "h", "label": "n"}',  # 10 good
    ]
    errors = error_list(post("x.jsonl", "\n".join(lines) + "\n", "jsonl"))
    rows = {error.get("row") for error in errors}
    assert {2, 3, 5, 6, 7, 8, 9} <= rows, errors
    assert has_error(errors, field="label", row=2)
    assert has_error(errors, field="premise", row=5)
    assert has_error(errors, field="id", row=6)
    assert has_error(errors, field="id", row=7)
    assert has_error(errors, field="premise", row=8)
    assert not ({1, 4, 10} & rows)
    assert Item.objects.count() == 0


@pytest.mark.django_db
def test_store_time_checks_are_listed_with_the_other_bad_rows(post):
    """Every bad row is listed in one answer, including the checks that need the database
    (unknown author, an id that exists with other content), not only after the others are fixed."""
    from annotation.models import Item

    assert post("x.jsonl", jsonl(GOOD), "jsonl").status_code == 201
    lines = jsonl(
        {"id": "a", "premise": "p", "hypothesis": "h"},
        {"id": "b", "premise": "p", "hypothesis": "h", "label": "wrong"},
        {"id": "c", "premise": "p", "hypothesis": "h", "author": "ghost"},
        dict(GOOD, premise="changed"),
    )
    errors = error_list(post("y.jsonl", lines, "jsonl"))
    assert has_error(errors, field="label", row=2), errors
    assert has_error(errors, field="author", row=3), errors
    assert has_error(errors, field="id", row=4), errors
    assert Item.objects.count() == 1


@pytest.mark.django_db
def test_csv_several_bad_rows_numbered_after_the_header(post):
    data = 'id,premise,hypothesis,label\na,p,h,e\nb,"two\nlines",h,bad\nc,,h,n\nd,p,h,e,extra\n'
    errors = error_list(post("x.csv", data, "csv"))
    assert has_error(errors, field="label", row=2), errors
    assert has_error(errors, field="premise", row=3), errors
    assert has_error(errors, any_field=True, row=4), errors


@pytest.mark.django_db
def test_oversized_upload_is_413_and_stores_nothing(post, settings):
    from annotation.models import Item

    settings.MASHOV_MAX_IMPORT_BYTES = 100
    data = jsonl(*({"id": f"r{i}", "premise": "פרמיסה ארוכה", "hypothesis": "h"} for i in range(10)))
    assert len(data.encode()) > 100
    errors = error_list(post("big.jsonl", data, "jsonl"), status=413)
    assert has_error(errors, field="file"), errors
    assert Item.objects.count() == 0
    small = jsonl({"id": "r", "premise": "p", "hypothesis": "h"})
    assert len(small.encode()) <= 100
    assert post("small.jsonl", small, "jsonl").status_code == 201


@pytest.mark.django_db
def test_missing_file_is_400(sup):
    from annotation.models import Item

    errors = error_list(sup.post(URL, {"format": "jsonl"}))
    assert has_error(errors, field="file"), errors
    assert Item.objects.count() == 0


@pytest.mark.django_db
def test_nul_character_in_a_form_field_is_400(sup):
    from annotation.models import Item

    errors = error_list(sup.post(URL, {"file": upload("x.jsonl", jsonl(GOOD)), "format": "json\x00l"}))
    assert errors == [{"field": "format", "message": "contains a NUL character at position 4"}]
    assert Item.objects.count() == 0


@pytest.mark.django_db
def test_json_body_instead_of_multipart_is_refused(sup):
    response = sup.post(URL, {"file": jsonl(GOOD), "format": "jsonl"}, format="json")
    assert response.status_code in (400, 415), response.content
    assert "errors" in response.json()


@pytest.mark.django_db
def test_large_file_becomes_a_job(sup, post, settings):
    """More rows than MASHOV_IMPORT_JOB_ROWS → 202 with a job id the caller can read."""
    settings.MASHOV_IMPORT_JOB_ROWS = 3
    data = jsonl(*({"id": f"r{i}", "premise": "p", "hypothesis": "h"} for i in range(5)))
    response = post("big.jsonl", data, "jsonl")
    assert response.status_code == 202, response.content
    body = response.json()
    assert isinstance(body["job"], int)
    job = sup.get(f"/api/jobs/{body['job']}/")
    assert job.status_code == 200
    assert job.json()["status"] in ("queued", "running", "done")
    assert 0 <= job.json()["progress"] <= 1


# ---------------------------------------------------------------- manage.py import_items


@pytest.mark.django_db
def test_import_items_command_good_file(nli_project, tmp_path):
    from django.core.management import call_command

    from annotation.models import Item

    path = tmp_path / "Test-word.csv"
    path.write_bytes((FARSTAIL / "Test-word.csv").read_bytes())
    _, rows = read_farstail("Test-word.csv")
    out = io.StringIO()
    call_command("import_items", SLUG, str(path), "--format", "farstail", stdout=out)
    assert Item.objects.filter(project=nli_project).count() == len(rows)
    assert f"created {len(rows)}" in out.getvalue()
    pairs = set(Item.objects.values_list("payload__premise", "payload__hypothesis"))
    assert pairs == {(row[0], row[1]) for row in rows}

    out = io.StringIO()
    call_command("import_items", SLUG, str(path), "--format", "farstail", stdout=out)
    assert f"skipped {len(rows)}" in out.getvalue()
    assert Item.objects.count() == len(rows)


@pytest.mark.django_db
def test_import_items_command_jsonl(nli_project, tmp_path):
    from django.core.management import call_command

    from annotation.models import Item

    path = tmp_path / "x.jsonl"
    path.write_text(jsonl(GOOD, {"id": "b", "premise": f"ب{ZWNJ}ا ", "hypothesis": "h"}), encoding="utf-8")
    call_command("import_items", SLUG, str(path), "--format", "jsonl", stdout=io.StringIO())
    assert Item.objects.get(external_id="b").payload["premise"] == f"ب{ZWNJ}ا "


@pytest.mark.django_db
def test_import_items_command_bad_file(nli_project, tmp_path):
    from django.core.management import CommandError, call_command

    from annotation.models import Item

    path = tmp_path / "bad.jsonl"
    path.write_text(jsonl(GOOD, {"id": "b", "premise": "p", "hypothesis": "h", "label": "maybe"}), encoding="utf-8")
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import_items", SLUG, str(path), "--format", "jsonl", stdout=io.StringIO(), stderr=err)
    assert "row 2" in err.getvalue() and "label" in err.getvalue()
    assert Item.objects.count() == 0


@pytest.mark.django_db
def test_import_items_command_unknown_project_and_missing_file(nli_project, tmp_path):
    from django.core.management import CommandError, call_command

    path = tmp_path / "x.jsonl"
    path.write_text(jsonl(GOOD), encoding="utf-8")
    with pytest.raises(CommandError):
        call_command("import_items", "no-such-project", str(path), "--format", "jsonl")
    with pytest.raises(CommandError):
        call_command("import_items", SLUG, str(tmp_path / "missing.jsonl"), "--format", "jsonl")
