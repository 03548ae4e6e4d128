"""annotation/sql.py: the hand-written statements of the annotate hot path give what the
ORM gives, and prepared statements behave across rollbacks and reconnects.

Runs on SQLite and PostgreSQL; the prepared-statement tests need PostgreSQL."""

import pytest
from django.db import connection, transaction

from annotation.sql import _prepared_form, column_count, execute, from_row, select_columns

pytestmark = pytest.mark.django_db


def test_prepared_form_numbers_positional_placeholders_in_order():
    name, text, order = _prepared_form("SELECT %s, %s WHERE x = %s")
    assert text == "SELECT $1, $2 WHERE x = $3"
    assert order == (0, 1, 2)
    assert name.startswith("mashov_")


def test_prepared_form_reuses_one_number_for_a_repeated_name():
    _name, text, order = _prepared_form("SELECT %(a)s, %(b)s, %(a)s")
    assert text == "SELECT $1, $2, $1"
    assert order == ("a", "b")


def test_prepared_form_names_differ_with_the_text():
    assert _prepared_form("SELECT %s")[0] != _prepared_form("SELECT %s + 1")[0]


def test_from_row_gives_the_orm_instance(nli_project, make_user):
    """Every field, JSON, booleans and aware datetimes included, on either backend."""
    from django.utils import timezone

    from annotation.models import Assignment, Item

    item = Item.objects.create(
        project=nli_project,
        external_id="x-1",
        payload={"premise": "שלום\u200f עולם", "hypothesis": "h", "n": [1, 2.5, None]},
        reference_label="entailment",
        group="g",
        in_sample=False,
    )
    user = make_user("reader")
    now = timezone.now()
    assignment = Assignment.objects.create(
        project=nli_project, item=item, annotator=user, round=1, claimed_at=now, expires_at=now
    )
    with connection.cursor() as cursor:
        execute(
            cursor,
            f"SELECT {select_columns(Assignment, 'a')}, {select_columns(Item, 'i')}"
            " FROM annotation_assignment a JOIN annotation_item i ON i.id = a.item_id WHERE a.id = %s",
            [assignment.pk],
        )
        row = cursor.fetchone()
    split = column_count(Assignment)
    got_assignment, got_item = from_row(Assignment, row[:split]), from_row(Item, row[split:])
    for model, got in ((Item, got_item), (Assignment, got_assignment)):
        expected = model.objects.get(pk=got.pk)
        for field in model._meta.concrete_fields:
            assert getattr(got, field.attname) == getattr(expected, field.attname), field.name
    assert got_item.in_sample is False
    assert got_assignment.claimed_at.tzinfo is not None
    assert not got_item._state.adding


@pytest.mark.postgres
def test_a_statement_is_prepared_once_per_connection_and_survives_a_rollback():
    sql = "SELECT %s::int + 1"
    name = _prepared_form(sql)[0]
    with transaction.atomic():
        with connection.cursor() as cursor:
            execute(cursor, sql, [1])
            assert cursor.fetchone() == (2,)
        transaction.set_rollback(True)
    assert name in connection.mashov_prepared
    with connection.cursor() as cursor:
        execute(cursor, sql, [41])
        assert cursor.fetchone() == (42,)
        cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE name = %s", [name])
        assert cursor.fetchone() == (1,)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_new_connection_prepares_again():
    sql = "SELECT %s::int * 2"
    with connection.cursor() as cursor:
        execute(cursor, sql, [2])
        assert cursor.fetchone() == (4,)
    # What Django does when a connection is closed and a later query opens a new one.
    connection.close()
    with connection.cursor() as cursor:
        execute(cursor, sql, [3])
        assert cursor.fetchone() == (6,)


@pytest.mark.postgres
def test_prepared_statements_can_be_turned_off(settings):
    """DB_PREPARED_STATEMENTS=0, for a pooler in transaction mode: plain statements."""
    settings.MASHOV_PREPARED_STATEMENTS = False
    sql = "SELECT %s::int - 1"
    with connection.cursor() as cursor:
        execute(cursor, sql, [10])
        assert cursor.fetchone() == (9,)
        cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE name = %s", [_prepared_form(sql)[0]])
        assert cursor.fetchone() == (0,)
