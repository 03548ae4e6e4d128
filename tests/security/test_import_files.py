"""Hostile and malformed import files through `POST /api/projects/{slug}/import/`.

Every bad file gets a 400 that says what is wrong with it, naming the file, the row and the
field or column, and stores nothing; every format reads the same text the same way (a cell
too long for Python's csv module is as welcome as the same text in a JSONL row); rows are
counted by records, whatever the line ends, to decide whether a file becomes a job; and CSV
exports neutralise every cell a spreadsheet would run as a formula (OWASP's list)."""

import codecs
import csv
import io
import json
from pathlib import Path

import pytest

from tests.conftest import NOTHING_HELD_OUT

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
SLUG = "fa-nli"
URL = f"/api/projects/{SLUG}/import/"
DEEP = 1_000
LONG = 200_000  # characters: above csv's default field limit of 131,072


def upload(name: str, data: str | bytes):
    handle = io.BytesIO(data.encode("utf-8") if isinstance(data, str) else data)
    handle.name = name
    return handle


def jsonl(*records) -> str:
    return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)


def deep_list(depth: int = DEEP) -> str:
    return "[" * depth + "]" * depth


def errors_of(response, status: int = 400) -> list[dict]:
    assert response.status_code == status, response.content[:2000]
    errors = response.json()["errors"]
    assert errors and all(isinstance(error["message"], str) and error["message"] for error in errors)
    return errors


def nothing_stored():
    from annotation.models import Item, Job

    return Item.objects.count() == 0 and Job.objects.count() == 0


@pytest.fixture
def sup(nli_project, client_for, django_user_model):
    return client_for(django_user_model.objects.get(username="sup"))


@pytest.fixture
def post(sup):
    def send(name: str, data: str | bytes, fmt: str, slug: str = SLUG):
        return sup.post(f"/api/projects/{slug}/import/", {"file": upload(name, data), "format": fmt})

    return send


@pytest.fixture
def project_of_kind(nli_project, django_user_model):
    """Another project of the given kind, with the nli project's supervisor."""
    from annotation.models import Membership
    from annotation.services.projects import project_create

    def make(kind: str):
        admin = django_user_model.objects.get(username="root")
        project = project_create(actor=admin, slug=f"p-{kind.replace('_', '-')}", name=kind, kind=kind, language="he")
        Membership.objects.create(
            project=project, user=django_user_model.objects.get(username="sup"), role="supervisor", status="active"
        )
        return project.slug

    return make


# ---------------------------------------------------------------- JSON inside files


@pytest.mark.django_db
@pytest.mark.parametrize("depth", [65, DEEP, 50_000])
def test_deeply_nested_jsonl_row_is_400_naming_row_and_field(post, depth):
    data = jsonl({"id": "a", "premise": "p", "hypothesis": "h"}) + (
        '{"id": "b", "premise": "p", "hypothesis": "h", "extra": {"x": ' + deep_list(depth) + "}}\n"
    )
    errors = errors_of(post("deep.jsonl", data, "jsonl"))
    assert errors == [{"field": "extra", "message": "nests deeper than 64 levels", "row": 2}]
    assert nothing_stored()


@pytest.mark.django_db
def test_deep_jsonl_row_that_is_not_an_object_names_the_row(post):
    errors = errors_of(post("deep.jsonl", deep_list() + "\n", "jsonl"))
    assert errors == [{"field": None, "message": "nests deeper than 64 levels", "row": 1}]
    assert nothing_stored()


@pytest.mark.django_db
@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_number_in_extra_is_400_naming_the_field(post, constant):
    data = jsonl({"id": "a", "premise": "p", "hypothesis": "h"}) + (
        '{"id": "b", "premise": "p", "hypothesis": "h", "extra": {"score": ' + constant + "}}\n"
    )
    errors = errors_of(post("nan.jsonl", data, "jsonl"))
    assert errors == [{"field": "extra", "message": f"{constant} is not a JSON number", "row": 2}]
    assert nothing_stored()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "cell, message",
    [
        (deep_list(), "nests deeper than 64 levels"),
        ('["a", NaN]', "NaN is not a JSON number"),
        ("[1, Infinity]", "Infinity is not a JSON number"),
    ],
    ids=["deep", "nan", "infinity"],
)
def test_bad_json_column_of_a_csv_is_400_naming_row_and_column(post, project_of_kind, cell, message):
    slug = project_of_kind("nli_authoring")
    buffer = io.StringIO()
    csv.writer(buffer).writerows(
        [
            ["id", "question", "choices", "answer_index"],
            ["q1", "which?", '["a", "b"]', "0"],
            ["q2", "which?", cell, "0"],
        ]
    )
    errors = errors_of(post("deep.csv", buffer.getvalue(), "csv", slug))
    assert errors == [{"field": "choices", "message": message, "row": 2}]
    assert nothing_stored()


@pytest.mark.django_db
@pytest.mark.parametrize("body", ['{"data": ' + deep_list() + "}", '{"version": NaN, "data": []}'], ids=["deep", "nan"])
def test_bad_whole_file_json_is_400_naming_the_file(post, project_of_kind, body):
    slug = project_of_kind("qa_authoring")
    errors = errors_of(post("heq.json", body, "squad", slug))
    assert [error["field"] for error in errors] == ["file"], errors
    assert "nests deeper" in errors[0]["message"] or "is not a JSON number" in errors[0]["message"]
    assert nothing_stored()


# ---------------------------------------------------------------- long cells


@pytest.mark.django_db
def test_a_long_cell_is_taken_alike_from_csv_tsv_and_jsonl(sup, post, project_of_kind):
    from annotation.models import Item

    long_text = ("פרמיסה ארוכה " * (LONG // 13 + 1))[:LONG]
    buffer = io.StringIO()
    csv.writer(buffer).writerows([["id", "premise", "hypothesis"], ["c1", long_text, "h"]])
    assert post("long.csv", buffer.getvalue(), "csv").status_code == 201
    assert post("long.jsonl", jsonl({"id": "j1", "premise": long_text, "hypothesis": "h"}), "jsonl").status_code == 201
    tsv = f"premise\thypothesis\tlabel\n{long_text}\th\te\n"
    response = post("Long-word.csv", tsv, "farstail")
    assert response.status_code == 201, response.content[:500]
    assert sorted(Item.objects.values_list("external_id", flat=True)) == ["Long-word-1", "c1", "j1"]
    assert {len(text) for text in Item.objects.values_list("payload__premise", flat=True)} == {LONG}


# ---------------------------------------------------------------- line ends and the job threshold


def cr_only_csv(rows: int) -> bytes:
    lines = ["id,premise,hypothesis"] + [f"r{i},پیش\u200cفرض {i},فرضیه {i}" for i in range(rows)]
    return ("\r".join(lines) + "\r").encode("utf-8")


@pytest.mark.django_db
def test_cr_only_csv_imports_one_item_per_row(sup, post):
    from annotation.models import Item

    response = post("mac.csv", cr_only_csv(4), "csv")
    assert response.status_code == 201, response.content
    assert response.json() == {"created": 4, "skipped": 0, "job": None, **NOTHING_HELD_OUT}
    assert dict(Item.objects.values_list("external_id", "payload__premise")) == {
        f"r{i}": f"پیش\u200cفرض {i}" for i in range(4)
    }


@pytest.mark.django_db
@pytest.mark.parametrize("line_end", ["\r", "\n", "\r\n"])
def test_file_over_the_threshold_becomes_a_job_whatever_its_line_ends(sup, post, settings, line_end):
    from annotation.models import Item, Job

    settings.MASHOV_IMPORT_JOB_ROWS = 3
    data = cr_only_csv(5).replace(b"\r", line_end.encode())
    response = post("mac.csv", data, "csv")
    assert response.status_code == 202, response.content
    assert Job.objects.filter(pk=response.json()["job"], kind="import").exists()
    assert Item.objects.count() == 0  # the worker imports it, not the request


# ---------------------------------------------------------------- unclear errors


@pytest.mark.django_db
def test_unterminated_csv_quote_names_the_row_where_it_opens(post):
    data = 'id,premise,hypothesis\r\nr1,p,h\r\nr2,"never closed,h\r\nr3,p,h\r\nr4,p,h\r\n'
    errors = errors_of(post("open.csv", data, "csv"))
    assert errors == [
        {"field": "file", "message": "row 2 (line 3): a quoted cell opens here and is never closed", "row": 2}
    ]
    assert nothing_stored()


@pytest.mark.django_db
def test_unterminated_farstail_quote_names_the_row_where_it_opens(post):
    data = 'premise\thypothesis\tlabel\np\th\te\np\t"open\te\np\th\te\n'
    errors = errors_of(post("Open-word.csv", data, "farstail"))
    assert errors == [
        {"field": "file", "message": "row 2 (line 3): a quoted cell opens here and is never closed", "row": 2}
    ]
    assert nothing_stored()


@pytest.mark.django_db
def test_text_after_a_closing_quote_is_400_naming_the_row(post):
    data = 'id,premise,hypothesis\nr1,p,h\nr2,"quoted" then more,h\n'
    errors = errors_of(post("quote.csv", data, "csv"))
    assert [(error["field"], error.get("row")) for error in errors] == [("file", 2)]
    assert errors[0]["message"].startswith("row 2 (line 3): ")
    assert nothing_stored()


SAMPLE = 'id,premise,hypothesis\nr1,"הוא אמר, ""שלום""",او می\u200cخواهد\nr2,premise,hypothesis\n'


@pytest.mark.django_db
@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
@pytest.mark.parametrize("text", [SAMPLE, "id,premise,hypothesis\nr1,p,h\nr2,p,h\n"], ids=["rtl", "ascii"])
def test_utf16_without_bom_is_one_error_for_the_file(post, encoding, text):
    errors = errors_of(post("wide.csv", text.encode(encoding), "csv"))
    endian = "little" if encoding.endswith("le") else "big"
    assert errors == [
        {
            "field": "file",
            "message": f"the file is UTF-16 ({endian}-endian) without a byte-order mark; save it as UTF-8",
        }
    ]
    assert nothing_stored()


@pytest.mark.django_db
def test_utf16_jsonl_without_bom_is_one_error_for_the_file(post):
    data = jsonl(*({"id": f"r{i}", "premise": "p", "hypothesis": "h"} for i in range(20))).encode("utf-16-le")
    errors = errors_of(post("wide.jsonl", data, "jsonl"))
    assert [error["field"] for error in errors] == ["file"]
    assert "UTF-16" in errors[0]["message"]
    assert nothing_stored()


@pytest.mark.django_db
@pytest.mark.parametrize("encoding", ["cp1256", "iso-8859-8"])
def test_a_legacy_single_byte_encoding_is_one_error_for_the_file(post, encoding):
    text = (
        "id,premise,hypothesis\nr1,p,h\nr2,سلام,h\n"
        if encoding == "cp1256"
        else "id,premise,hypothesis\nr1,p,h\nr2,שלום,h\n"
    )
    errors = errors_of(post("legacy.csv", text.encode(encoding), "csv"))
    assert errors == [
        {
            "field": "file",
            "message": "the file is not valid UTF-8 (line 3, byte 32); save it as UTF-8"
            " (it may be in a legacy encoding such as Windows-1256 or ISO-8859-8)",
        }
    ]
    assert nothing_stored()


@pytest.mark.django_db
def test_utf8_with_bom_and_utf16_with_bom_are_still_told_apart(post):
    from annotation.models import Item

    assert post("bom.csv", codecs.BOM_UTF8 + SAMPLE.encode(), "csv").status_code == 201
    assert Item.objects.count() == 2
    errors = errors_of(post("wide.csv", codecs.BOM_UTF16_LE + SAMPLE.encode("utf-16-le"), "csv"))
    assert errors == [{"field": "file", "message": "the file is UTF-16; save it as UTF-8"}]


@pytest.mark.django_db
def test_published_farstail_file_still_imports_unchanged(post):
    from annotation.models import Item

    data = (DATA / "farstail" / "Val-word.csv").read_bytes()
    response = post("Val-word.csv", data, "farstail")
    assert response.status_code == 201, response.content[:500]
    with open(DATA / "farstail" / "Val-word.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle, delimiter="\t"))[1:]
    assert response.json()["created"] == len(rows)
    assert set(Item.objects.values_list("payload__premise", "payload__hypothesis")) == {(r[0], r[1]) for r in rows}


# ---------------------------------------------------------------- CSV export


@pytest.mark.django_db
def test_csv_export_neutralises_tab_and_cr_leading_cells_and_farstail_keeps_them(sup, post):
    data = jsonl(
        {"id": "t", "premise": "\tپیش\u200cفرض", "hypothesis": "\rfrom a CR", "label": "e"},
        {"id": "plain", "premise": "a\tb", "hypothesis": "ok\r", "label": "n"},
    )
    assert post("cells.jsonl", data, "jsonl").status_code == 201
    response = sup.get(f"/api/projects/{SLUG}/export/?format=csv&status=all")
    assert response.status_code == 200
    body = b"".join(response.streaming_content).decode("utf-8").removeprefix("\ufeff")
    rows = {row[0]: row for row in csv.reader(io.StringIO(body, newline=""))}
    assert rows["t"][1:3] == ["'\tپیش\u200cفرض", "'\rfrom a CR"]
    assert rows["plain"][1:3] == ["a\tb", "ok\r"]
    for row in rows.values():
        assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for cell in row), row
    # FarsTail's own layout is written exactly, never neutralised (it must round-trip).
    response = sup.get(f"/api/projects/{SLUG}/export/?format=farstail&status=all")
    tsv = b"".join(response.streaming_content).decode("utf-8")
    assert '"\tپیش\u200cفرض"\t' in tsv and "'" not in tsv


@pytest.mark.django_db
def test_lchaim_files_with_deep_or_non_finite_json_are_400_naming_file_row_and_field(sup, project_of_kind):
    slug = project_of_kind("translation_rating")
    source = jsonl({"uid": "u1", "premise": "p", "hypothesis": "h", "label": "e"}) + (
        '{"uid": "u2", "premise": ' + deep_list() + ', "hypothesis": "h", "label": "e"}\n'
    )
    translation = '[{"uid": "u1", "premise": "פ", "hypothesis": "ה", "score": NaN}]'
    response = sup.post(
        f"/api/projects/{slug}/import-lchaim/",
        {
            "split": "dev",
            "source": upload("c.jsonl", source),
            "system": "amazon",
            "translation": upload("a.json", translation),
        },
    )
    errors = errors_of(response)
    assert {"field": "source.premise", "message": "nests deeper than 64 levels", "row": 2} in errors, errors
    assert {"field": "translation[0]", "message": "NaN is not a JSON number"} in errors, errors
    assert nothing_stored()
