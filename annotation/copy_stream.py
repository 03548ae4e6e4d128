"""A PostgreSQL COPY fed piece by piece while the caller goes on working.

An import validates a batch of rows in Python, then PostgreSQL stores it; one after the
other, the server waited for the Python and the Python for the server. `CopyStream` sends
what it is given from a thread of its own (psycopg2's `copy_expert` lets go of the GIL
while it sends), so the server stores batch k while the caller validates batch k + 1: on
two cores the Python and the server's half overlap.

The COPY runs on the caller's connection, inside its transaction (all or nothing with the
rest of it). A connection in COPY answers no other statement, so any statement the caller
runs through Django meanwhile (a lookup, a job's input read in slices, a progress update)
first ends the COPY and waits for it (`connection.execute_wrapper`); the next `write`
starts another. A failure of the COPY (the server's error, a lost connection) is raised to
the caller at its next `write`, at `close`, or at that statement. Leaving the block with an
exception aborts the COPY: the server discards it and the caller's transaction is rolled
back by whoever owns it.

PostgreSQL only (`copy_available`); other databases insert their rows otherwise."""

import queue
import threading
from types import TracebackType

from django.db import connection

# What the sending thread hands psycopg2 at a time: large enough that the thread seldom
# needs the GIL, small enough for libpq's send buffer (a few MiB handed whole are slower).
SEND_BYTES = 256 << 10
# Pieces given and not yet sent, at most: memory stays a few batches whatever the file.
QUEUED_PIECES = 4

_END, _ABORT = object(), object()


class CopyAborted(Exception):
    """Raised into psycopg2's read loop: the server drops the COPY (its message)."""


def copy_available() -> bool:
    """Whether the default database takes COPY (PostgreSQL)."""
    return connection.vendor == "postgresql"


class _Pieces:
    """The file psycopg2's `copy_expert` reads: what `CopyStream.write` queued, in slices of
    at most `size` bytes, then b"" (the end) or an exception (the abort)."""

    def __init__(self, pieces: "queue.Queue[object]"):
        self._pieces = pieces
        self._piece, self._at = b"", 0
        self.finished = False  # the end or the abort was taken from the queue

    def read(self, size: int = SEND_BYTES) -> bytes:
        if self._at >= len(self._piece):
            piece = self._pieces.get()
            if piece is _END or piece is _ABORT:
                self.finished = True
                if piece is _ABORT:
                    raise CopyAborted("the import stopped")
                return b""
            assert isinstance(piece, bytes)
            self._piece, self._at = piece, 0
        start = self._at
        self._at += size
        return self._piece[start : self._at] if start or self._at < len(self._piece) else self._piece


class CopyStream:
    """`with CopyStream(sql) as stream: stream.write(text)...`: one COPY ... FROM STDIN (`sql`)
    of every `write`'s text (whole lines of COPY's text format), sent while the caller goes
    on; leaving the block waits until the server has stored all of it."""

    def __init__(self, sql: str):
        self.sql = sql
        self._thread: threading.Thread | None = None
        self._pieces: queue.Queue[object] = queue.Queue(QUEUED_PIECES)
        self._error: BaseException | None = None
        self._wrapper = connection.execute_wrapper(self._before_statement)

    def __enter__(self) -> "CopyStream":
        self._wrapper.__enter__()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        try:
            if kind is None:
                self.close()
            else:
                self._stop(_ABORT)
        finally:
            self._wrapper.__exit__(None, None, None)

    def write(self, text: str) -> None:
        """Queue `text` for the COPY (starting one if none is open); it blocks only while
        QUEUED_PIECES are waiting to be sent."""
        self._raise_failure()
        if not text:
            return
        if self._thread is None:
            self._start()
        self._pieces.put(text.encode())

    def close(self) -> None:
        """End the open COPY, if any, once the server has stored what it was sent."""
        self._stop(_END)
        self._raise_failure()

    def _start(self) -> None:
        connection.ensure_connection()
        cursor = connection.connection.cursor()  # psycopg2's: the COPY is no Django statement
        self._thread = threading.Thread(target=self._send, args=(cursor,), name="copy-stream", daemon=True)
        self._thread.start()

    def _send(self, cursor) -> None:
        reader = _Pieces(self._pieces)
        try:
            cursor.copy_expert(self.sql, reader, size=SEND_BYTES)
        except BaseException as exc:  # noqa: BLE001 (handed to the caller's thread)
            self._error = exc
            # The caller may still be putting pieces: take them until it stops, so that it
            # never waits on a full queue for a thread that has gone.
            while not reader.finished:
                reader.finished = self._pieces.get() in (_END, _ABORT)
        finally:
            cursor.close()

    def _stop(self, how: object) -> None:
        if self._thread is None:
            return
        self._pieces.put(how)
        self._thread.join()
        self._thread = None

    def _raise_failure(self) -> None:
        error, self._error = self._error, None
        if error is not None and not isinstance(error, CopyAborted):
            # As Django raises a database error: its own exception class, and the
            # connection marked for the health check that drops a broken one.
            with connection.wrap_database_errors:
                raise error

    def _before_statement(self, execute, sql, params, many, context):
        self.close()
        return execute(sql, params, many, context)
