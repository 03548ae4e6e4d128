"""gunicorn's worker for Mashov's web (`worker_class` in config/gunicorn.py).

A worker forked from the master that loaded the app shares the master's pages until it
writes to them, and CPython writes to every object it reads (its reference count, and in
3.11 the counters of the bytecode it runs): serving pages copies 25-30 MiB of the master's
objects into each worker, which keeps them for its life (README "What a web worker keeps
after serving pages"). Nothing frees those copies but the worker's end; this worker ends
itself once it has been idle for a while with more than a margin copied, and the master
forks a fresh one, which starts again from the shared pages. Busy workers are never
interrupted: the check runs only after a wait in which no request came.
"""

import os

from gunicorn.workers.sync import SyncWorker

# A worker that served only health checks or a few API calls stays: it holds a few MiB, and
# replacing it would cost more than it frees (a fork, a new database connection, and the
# same pages copied again on its next requests).
MARGIN_KIB = int(float(os.environ.get("GUNICORN_RECYCLE_MIB", "8")) * 1024)
IDLE_SECONDS = float(os.environ.get("GUNICORN_RECYCLE_IDLE_SECONDS", "15"))


def private_kib(pid: int | str = "self") -> int:
    """A process's private memory (USS, KiB): for a forked worker, the pages it no longer
    shares with its master."""
    total = 0
    with open(f"/proc/{pid}/smaps_rollup") as handle:
        for line in handle:
            if line.startswith(("Private_Clean:", "Private_Dirty:")):
                total += int(line.split()[1])
    return total


class RecyclingWorker(SyncWorker):
    """gunicorn's sync worker, which ends itself when idle with the master's pages copied."""

    forked_kib: int | None = None

    def init_process(self):
        # In the worker, just after the fork, before its first request.
        try:
            self.forked_kib = private_kib()
        except OSError:  # no /proc/self/smaps_rollup (not Linux, or before 4.14): never recycled
            self.forked_kib = None
        super().init_process()

    def wait(self, timeout):
        ready = super().wait(min(timeout, IDLE_SECONDS))
        # None: the whole wait passed with no connection and no signal from the master.
        if ready is None and self.alive and self.forked_kib is not None:
            copied = private_kib() - self.forked_kib
            if copied > MARGIN_KIB:
                self.log.info("Worker %s idle with %d MiB copied: replaced by a fresh one", self.pid, copied // 1024)
                self.alive = False
        return ready
