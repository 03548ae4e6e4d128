"""An import's batches go into one COPY that PostgreSQL stores while the next batch is read
and validated (annotation/copy_stream.py), still all or nothing: a bad row found after
batches were sent, a failure in the Python, or the connection lost in the middle of the COPY
leaves nothing stored."""

import json
import time

import psycopg2
import pytest


def _file(rows: list[dict]) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()


def _rows(n: int) -> list[dict]:
    return [{"id": f"r{i}", "premise": f"הנחה {i}", "hypothesis": f"השערה {i}", "label": "neutral"} for i in range(n)]


@pytest.fixture
def small_batches(monkeypatch, settings):
    from annotation.services import imports

    monkeypatch.setattr(imports, "BATCH_SIZE", 4)
    settings.MASHOV_IMPORT_JOB_ROWS = 10**6  # in the call, as the worker runs it


@pytest.fixture
def observer():
    """A connection of its own, to watch the import's backend from outside."""
    from django.db import connection

    watcher = psycopg2.connect(**connection.get_connection_params())
    watcher.autocommit = True
    yield watcher
    watcher.close()


def _wait_for_copy(watcher, pid: int) -> tuple[str, str]:
    """The backend's state and statement once it is in a COPY (or as it is after 10 s):
    the sending thread starts the COPY on its own time."""
    deadline = time.monotonic() + 10
    while True:
        with watcher.cursor() as cursor:
            cursor.execute("SELECT state, query FROM pg_stat_activity WHERE pid = %s", [pid])
            state, query = cursor.fetchone()
        if (state == "active" and query.startswith("COPY")) or time.monotonic() > deadline:
            return state, query
        time.sleep(0.01)


def _on_batch(monkeypatch, number: int, action) -> None:
    """Run `action(pid of the import's backend)` as the import starts validating its
    `number`th batch."""
    from django.db import connection

    from annotation.services import imports

    real = imports._validate_batch
    calls = []

    def validating(*args, **kwargs):
        calls.append(1)
        if len(calls) == number:
            action(connection.connection.get_backend_pid())  # libpq's, no statement
        return real(*args, **kwargs)

    monkeypatch.setattr(imports, "_validate_batch", validating)


@pytest.mark.django_db
def test_the_server_stores_a_batch_while_the_next_is_validated(nli_project, small_batches, monkeypatch, observer):
    from annotation.models import Item
    from annotation.services.imports import items_import

    seen = []
    _on_batch(monkeypatch, 2, lambda pid: seen.append(_wait_for_copy(observer, pid)))
    result = items_import(project=nli_project, data=_file(_rows(10)), fmt="jsonl", filename="f.jsonl")
    assert result.created == 10
    ((state, query),) = seen
    assert state == "active" and query.startswith("COPY annotation_item"), (state, query)
    positions = list(
        Item.objects.filter(project=nli_project).order_by("position").values_list("external_id", flat=True)
    )
    assert positions == [f"r{i}" for i in range(10)]
    # One COPY for the whole file: every item has the import's one creation time.
    assert Item.objects.filter(project=nli_project).values("created_at").distinct().count() == 1


@pytest.mark.django_db
def test_a_bad_row_found_after_batches_were_sent_stores_nothing_and_names_its_row(
    nli_project, small_batches, monkeypatch, observer
):
    from annotation.errors import InvalidInput
    from annotation.models import Item
    from annotation.services.imports import items_import

    rows = _rows(14)
    rows[9]["label"] = "maybe"  # the third batch, after two were sent
    seen = []
    _on_batch(monkeypatch, 3, lambda pid: seen.append(_wait_for_copy(observer, pid)))
    with pytest.raises(InvalidInput) as raised:
        items_import(project=nli_project, data=_file(rows), fmt="jsonl", filename="f.jsonl")
    assert seen[0][0] == "active" and seen[0][1].startswith("COPY"), seen  # the first batches were in the COPY
    assert [(error.row, error.field) for error in raised.value.errors] == [(10, "label")]
    assert not Item.objects.filter(project=nli_project).exists()


@pytest.mark.django_db
def test_a_bad_row_after_a_lookup_ended_the_copy_stores_nothing(nli_project, small_batches, monkeypatch):
    """A project too large for its ids to be read once looks every batch's ids up: each
    lookup ends the COPY before it (the rows sent so far are in the transaction), the next
    batch starts another; the bad row still rolls them all back."""
    from annotation.errors import InvalidInput
    from annotation.models import Item
    from annotation.services import imports

    monkeypatch.setattr(imports, "FEW_ITEMS", 0)
    rows = _rows(14)
    rows[12]["premise"] = 7
    with pytest.raises(InvalidInput) as raised:
        imports.items_import(project=nli_project, data=_file(rows), fmt="jsonl", filename="f.jsonl")
    assert [(error.row, error.field) for error in raised.value.errors] == [(13, "premise")]
    assert not Item.objects.filter(project=nli_project).exists()
    result = imports.items_import(project=nli_project, data=_file(_rows(14)), fmt="jsonl", filename="f.jsonl")
    assert (result.created, Item.objects.filter(project=nli_project).count()) == (14, 14)


@pytest.mark.django_db
def test_a_failure_in_the_python_after_batches_were_sent_is_raised_and_stores_nothing(
    nli_project, small_batches, monkeypatch, observer
):
    from annotation.models import Item
    from annotation.services.imports import items_import

    def fail(pid):
        assert _wait_for_copy(observer, pid)[0] == "active"
        raise RuntimeError("a kind's reader broke")

    _on_batch(monkeypatch, 3, fail)
    with pytest.raises(RuntimeError, match="a kind's reader broke"):
        items_import(project=nli_project, data=_file(_rows(14)), fmt="jsonl", filename="f.jsonl")
    assert not Item.objects.filter(project=nli_project).exists()


@pytest.mark.django_db(transaction=True)
def test_the_connection_lost_in_the_middle_of_the_copy_stores_nothing(
    nli_project, small_batches, monkeypatch, observer
):
    from django.db import DatabaseError, connection

    from annotation.models import Item
    from annotation.services.imports import items_import

    ended = []

    def cut(pid):
        assert _wait_for_copy(observer, pid)[0] == "active"
        with observer.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
            ended.append(cursor.fetchone()[0])

    _on_batch(monkeypatch, 2, cut)
    with pytest.raises(DatabaseError):
        items_import(project=nli_project, data=_file(_rows(14)), fmt="jsonl", filename="f.jsonl")
    assert ended == [True]
    connection.close()  # the broken one; the next statement connects anew
    assert not Item.objects.filter(project=nli_project).exists()
