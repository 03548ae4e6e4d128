"""A large import is read, validated and written batch by batch in one transaction: the
first batch is stored before the rest of the file is read (memory holds one batch of rows,
not the file's), and a bad row anywhere — in the last batch too, or an id the file gave
already in an earlier batch — is a 400 naming its row and field with nothing stored."""

import io
import json

import pytest


def _file(rows: list[dict]) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()


def _rows(n: int) -> list[dict]:
    return [{"id": f"r{i}", "premise": f"הנחה {i}", "hypothesis": f"השערה {i}", "label": "neutral"} for i in range(n)]


def _post(client, slug: str, data: bytes):
    handle = io.BytesIO(data)
    handle.name = "big.jsonl"
    return client.post(f"/api/projects/{slug}/import/", {"file": handle, "format": "jsonl"})


@pytest.fixture
def small_batches(monkeypatch, settings):
    from annotation.services import imports

    monkeypatch.setattr(imports, "BATCH_SIZE", 4)
    settings.MASHOV_IMPORT_JOB_ROWS = 10**6  # in the request, as the worker runs it


@pytest.mark.django_db
def test_the_first_batch_is_written_before_the_rest_of_the_file_is_read(
    nli_project, client_for, make_user, monkeypatch, small_batches
):
    from annotation.models import Item
    from annotation.services import imports

    read = []
    real_read, real_write = imports.read_records, imports._RowWriter.write

    def counting_read(*args, **kwargs):
        for record in real_read(*args, **kwargs):
            read.append(record[0])
            yield record

    written_after = []

    def noting_write(writer, rows, authors):
        written_after.append((len(read), len(rows)))
        return real_write(writer, rows, authors)

    monkeypatch.setattr(imports, "read_records", counting_read)
    monkeypatch.setattr(imports._RowWriter, "write", noting_write)
    response = _post(client_for(make_user("stream-sup", staff=True)), nli_project.slug, _file(_rows(10)))
    assert response.status_code in (200, 201), response.content
    assert response.json()["created"] == 10
    assert written_after[0] == (4, 4), written_after  # one batch read, that batch written
    assert [size for _read, size in written_after] == [4, 4, 2]
    assert list(
        Item.objects.filter(project=nli_project).order_by("position").values_list("external_id", flat=True)
    ) == [f"r{i}" for i in range(10)]


@pytest.mark.django_db
def test_a_bad_row_in_the_last_batch_stores_nothing_and_names_its_row_and_field(
    nli_project, client_for, make_user, small_batches
):
    from annotation.models import Item

    rows = _rows(11)
    rows[9]["label"] = "maybe"
    rows[10]["premise"] = 7
    response = _post(client_for(make_user("stream-sup", staff=True)), nli_project.slug, _file(rows))
    assert response.status_code == 400, response.content
    errors = [(error["row"], error["field"]) for error in response.json()["errors"]]
    assert errors == [(10, "label"), (11, "premise")]
    assert not Item.objects.filter(project=nli_project).exists()


@pytest.mark.django_db
def test_an_id_given_again_in_a_later_batch_is_a_duplicate_even_with_the_same_content(
    nli_project, client_for, make_user, small_batches
):
    """The earlier batch is already written (in the transaction) when the later one is
    checked against the project: the copy must still be a duplicate of the file, not an
    existing item to skip."""
    from annotation.models import Item

    rows = _rows(9)
    rows[8] = dict(rows[1])
    response = _post(client_for(make_user("stream-sup", staff=True)), nli_project.slug, _file(rows))
    assert response.status_code == 400, response.content
    (error,) = response.json()["errors"]
    assert (error["row"], error["field"]) == (9, "id") and "2" in error["message"], error
    assert not Item.objects.filter(project=nli_project).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("few", [50_000, 3], ids=["ids read once", "ids looked up per batch"])
def test_a_file_imported_again_is_skipped_batch_by_batch(
    nli_project, client_for, make_user, small_batches, monkeypatch, few
):
    from annotation.services import imports

    monkeypatch.setattr(imports, "FEW_ITEMS", few)
    client = client_for(make_user("stream-sup", staff=True))
    data = _file(_rows(10))
    assert _post(client, nli_project.slug, data).json()["created"] == 10
    again = _post(client, nli_project.slug, data + _file([{"id": "new", "premise": "p", "hypothesis": "h"}]))
    assert (again.json()["created"], again.json()["skipped"]) == (1, 10), again.content


@pytest.mark.django_db
def test_the_batches_of_an_import_into_an_empty_project_look_up_no_item(
    nli_project, client_for, make_user, small_batches
):
    """The rows the import itself wrote are not looked up batch after batch: with the new
    project's statistics PostgreSQL read all of them for every batch (quadratic at 1M)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = client_for(make_user("stream-sup", staff=True))
    with CaptureQueriesContext(connection) as captured:
        response = _post(client, nli_project.slug, _file(_rows(12)))
    assert response.json()["created"] == 12, response.content
    lookups = [q["sql"] for q in captured if "external_id" in q["sql"] and "= ANY" in q["sql"]]
    assert lookups == [], lookups
