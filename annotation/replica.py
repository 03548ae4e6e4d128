"""Reads that may go to a PostgreSQL read replica (docs/operations.md "Scaling out").

When DATABASE_REPLICA_URL is set, the settings add the database alias `replica` and
`ReplicaRouter` sends to it the reads made inside `replica_reads()` — the exports' stream
and the report figures, which read much and tolerate the replica's lag of a moment.
Everything else — every write, the annotate path, the reads a write depends on, the
migrations — stays on `default`, the primary. Without a replica `replica_reads()` changes
nothing."""

from __future__ import annotations

import contextvars
import functools
from contextlib import contextmanager
from typing import Iterator

from django.conf import settings

REPLICA = "replica"

_reading = contextvars.ContextVar("mashov_replica_reads", default=False)


@contextmanager
def replica_reads():
    """Route the reads made inside the block to the replica, when there is one."""
    token = _reading.set(True)
    try:
        yield
    finally:
        _reading.reset(token)


def read_from_replica(function):
    """`function` run inside `replica_reads()`: for a selector whose every read may lag."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        with replica_reads():
            return function(*args, **kwargs)

    return wrapper


def stream_from_replica(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """`chunks` with each chunk read inside `replica_reads()`. The block is entered and
    left around every step, never held across a `yield`, because a streaming response may
    resume the generator in another context (ASGI)."""
    while True:
        with replica_reads():
            try:
                chunk = next(chunks)
            except StopIteration:
                return
        yield chunk


def replica_configured() -> bool:
    return REPLICA in settings.DATABASES


class ReplicaRouter:
    """Reads inside `replica_reads()` to the replica; all else to the primary."""

    def db_for_read(self, model, **hints):
        if _reading.get() and replica_configured() and not _in_write_transaction():
            return REPLICA
        return "default"

    def db_for_write(self, model, **hints):
        return "default"

    def allow_relation(self, obj1, obj2, **hints):
        return True  # one database seen twice: relations hold across the aliases

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        return db == "default"


def _in_write_transaction() -> bool:
    # A read inside the primary's transaction must see that transaction's own writes.
    from django.db import connections

    return connections["default"].in_atomic_block
