"""Hand-written SQL for the few queries on the annotate hot path.

The ORM spends about a millisecond of CPU compiling a query with joins, and PostgreSQL
up to half a millisecond planning it — each more than a bare Django view costs in all.
`next` and `submit` run for every label, so their statements are written out once (in the
selectors and services that own them) and run through `execute`, which on PostgreSQL makes
each a server-side prepared statement of the connection: planned once per connection
instead of once per call. Rows become ordinary model instances through the backend's own
converters (JSON, booleans and aware datetimes come out as the ORM gives them, on
PostgreSQL and on SQLite)."""

import functools
import hashlib
import re

from django.conf import settings
from django.db import connection, connections
from django.db.backends.signals import connection_created

# --- Statements -----------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"%(?:\((\w+)\))?s")


@functools.lru_cache(maxsize=256)
def _prepared_form(sql: str) -> tuple[str, str, tuple]:
    """(statement name, `PREPARE` text with $n parameters, the parameters' positions or
    names in $n order) for `sql` written with %s or with %(name)s placeholders."""
    order: list = []

    def number(match: re.Match) -> str:
        key = match.group(1) if match.group(1) is not None else len(order)
        if key not in order:
            order.append(key)
        return f"${order.index(key) + 1}"

    text = _PLACEHOLDER.sub(number, sql)
    name = "mashov_" + hashlib.sha1(sql.encode()).hexdigest()[:20]
    return name, text, tuple(order)


def _forget_prepared(sender, connection, **kwargs) -> None:
    # A new server session knows none of the statements the previous one prepared.
    connection.mashov_prepared = set()


connection_created.connect(_forget_prepared)


def execute(cursor, sql: str, params):
    """`cursor.execute(sql, params)`, as a prepared statement on PostgreSQL. A prepared
    statement outlives a rollback of the transaction that prepared it, so it is marked
    prepared once `PREPARE` succeeded and is never prepared twice on one connection."""
    connection = cursor.db
    if connection.vendor != "postgresql" or not settings.MASHOV_PREPARED_STATEMENTS:
        return cursor.execute(sql, params)
    name, text, order = _prepared_form(sql)
    prepared = connection.__dict__.setdefault("mashov_prepared", set())
    if name not in prepared:
        cursor.execute(f"PREPARE {name} AS {text}")
        prepared.add(name)
    args = [params[key] for key in order]
    if not args:
        return cursor.execute(f"EXECUTE {name}")
    return cursor.execute(f"EXECUTE {name}({', '.join(['%s'] * len(args))})", args)


# --- Rows as model instances ----------------------------------------------------------------


@functools.cache
def _fields(model) -> tuple:
    return tuple(model._meta.concrete_fields)


@functools.cache
def _attnames(model) -> list[str]:
    return [field.attname for field in _fields(model)]


def select_columns(model, alias: str, using: str = "default") -> str:
    """`alias."col", …` for every concrete field of `model`, in the order `from_row` reads."""
    return _select_columns(model, alias, connections[using].vendor, using)


@functools.cache
def _select_columns(model, alias: str, vendor: str, using: str) -> str:
    quote = connections[using].ops.quote_name
    return ", ".join(f"{alias}.{quote(field.column)}" for field in _fields(model))


def column_count(model) -> int:
    return len(_fields(model))


@functools.cache
def _converters(model, vendor: str, using: str) -> tuple:
    """Per field, the converters the ORM would apply to its column (backend's, then field's).
    Cached per backend: they depend on the backend and the settings, not on which thread's
    connection asked first (each call is given the current connection)."""
    connection = connections[using]
    table = model._meta.db_table
    out = []
    for field in _fields(model):
        column = field.get_col(table)
        out.append((column, tuple(connection.ops.get_db_converters(column) + field.get_db_converters(connection))))
    return tuple(out)


def fetch_models(sql: str, params, *models) -> list | None:
    """Run `sql` (through `execute`) and split its first row into one instance of each of
    `models`, whose columns it selects in `select_columns` order one model after another;
    values after the last model's columns follow as they are. None when there is no row."""
    with connection.cursor() as cursor:
        execute(cursor, sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    out, start = [], 0
    for model in models:
        end = start + column_count(model)
        out.append(from_row(model, row[start:end]))
        start = end
    return out + list(row[start:])


def from_row(model, row, using: str = "default"):
    """A `model` instance from `row`, whose values are in `select_columns` order."""
    connection = connections[using]
    values = []
    for value, (column, converters) in zip(row, _converters(model, connection.vendor, using)):
        for converter in converters:
            value = converter(value, column, connection)
        values.append(value)
    return model.from_db(using, _attnames(model), values)


def column_in(model, column: str, values: list):
    """A filter of `model`'s rows whose `column` is one of `values`: on PostgreSQL one
    array parameter (`= ANY(%s)`), where `<column>__in` has the ORM prepare every value
    apart (a third of an export chunk's time at 2,000 ids); elsewhere the ORM's IN."""
    from django.db.models import BooleanField, Q
    from django.db.models.expressions import RawSQL

    if connection.vendor != "postgresql":
        return Q(**{f"{column}__in": values})
    name = f"{connection.ops.quote_name(model._meta.db_table)}.{connection.ops.quote_name(column)}"
    # psycopg2 sends a list of ints as an integer[] array. Against a bigint column (every
    # id here) PostgreSQL cannot hash that array (the two sides hash differently), so a
    # plan that filters rows rather than probing an index compares each row with every
    # value: a table last analysed while empty (the reasons a project's first figures run
    # stores) took 280 ms a chunk of 5,000 ids at 17,000 rows. The array is cast to the
    # column's own integer type; other types are sent as they are.
    db_type = model._meta.get_field(column).db_type(connection)
    cast = f"::{db_type}[]" if db_type in ("bigint", "integer", "smallint") else ""
    return RawSQL(f"{name} = ANY(%s{cast})", (list(values),), output_field=BooleanField())
