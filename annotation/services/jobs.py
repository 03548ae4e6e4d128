"""Background runs: create a Job row, enqueue its task after commit, record progress, and
recover jobs whose worker died.

A job goes queued → running → done | failed. Each run claims it (queued → running, one more
attempt); only the sweep moves it back to queued, when the heartbeat of its worker is older
than MASHOV_JOB_STALE_SECONDS: the process that claimed it is gone (killed, out of memory,
past the time limit, a host that went away). Running a job again is safe for every kind: an
import and an agreement store their rows in one transaction (a run that died stored nothing),
and measures (summaries, back-translation) overwrite what an earlier run wrote."""

import contextlib
import logging
import threading
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from annotation.models import Job
from annotation.services.tasks_queue import enqueue_rollback_unsafe
from annotation.stored_text import stored_message

logger = logging.getLogger(__name__)

# What a job whose worker stopped too often says, by kind (the default otherwise).
# Message ids: stored in English, translated when read (annotation.stored_text).
STOPPED_REASON = gettext_noop(
    "the worker running this job stopped %(attempts)s times before it finished (killed, restarted, out of memory or past the time limit); it is not run again"
)
STOPPED_REASON_BY_KIND = {
    "import": gettext_noop(
        "the worker running this job stopped %(attempts)s times before it finished (killed, restarted, out of memory or past the time limit); it is not run again. The import was interrupted and nothing was imported: send the file again."
    ),
}


def job_create(
    *, kind: str, project=None, user=None, params: dict | None = None, input_data: bytes | None = None
) -> Job:
    """Store a queued Job and enqueue it when the surrounding transaction commits."""
    job = Job.objects.create(kind=kind, project=project, created_by=user, params=params or {}, input_data=input_data)
    transaction.on_commit(lambda: job_enqueue(job.pk))
    return job


# A stored input is read in at most this many slices, none smaller than the second number.
INPUT_SLICES, INPUT_SLICE_BYTES = 8, 8 << 20


class JobInput:
    """A job's stored input (`Job.input_data`), read a slice at a time, never fetched whole:
    psycopg2 receives a bytea as hex text (twice its size) and unescapes it into a third
    copy, so a 64 MiB upload cost 192 MiB in the worker before its first row. PostgreSQL
    decompresses a stored value from its start up to the slice asked for, so the slices
    are few and large (INPUT_SLICES of at least INPUT_SLICE_BYTES): reading the input costs
    the server about INPUT_SLICES / 2 decompressions of it. A binary file for
    `annotation.upload_text.UploadText`: `read`, `seek` (to the start or the end), `size`."""

    def __init__(self, job_id: int):
        self.job_id = job_id
        self.size = self._fetch("octet_length(input_data)") or 0
        self._slice_bytes = max(INPUT_SLICE_BYTES, -(-self.size // INPUT_SLICES))
        self._at, self._slice, self._slice_at = 0, memoryview(b""), 0

    def _fetch(self, expression: str, *params):
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT {expression} FROM {Job._meta.db_table} WHERE id = %s", [*params, self.job_id])
            row = cursor.fetchone()
        return row[0] if row else None

    def seek(self, offset: int, whence: int = 0) -> int:
        self._at = offset if whence == 0 else self.size + offset
        return self._at

    def read(self, size: int = -1) -> bytes:
        size = self.size - self._at if size < 0 else min(size, self.size - self._at)
        pieces = []
        while size > 0:
            start = self._at - self._slice_at
            if not 0 <= start < len(self._slice):
                # substring() counts from 1.
                # psycopg2's buffer as it comes (a memoryview): the slice is not copied.
                self._slice = self._fetch("substring(input_data FROM %s FOR %s)", self._at + 1, self._slice_bytes)
                if not self._slice:
                    # Never a shorter file: the job's outcome cleared its input meanwhile.
                    raise RuntimeError(f"job {self.job_id}: its stored input is gone")
                self._slice_at, start = self._at, 0
            piece = self._slice[start : start + size]
            pieces.append(piece)
            self._at += len(piece)
            size -= len(piece)
        return b"".join(pieces)


def job_enqueue(job_id: int) -> None:
    """Publish the job's task; a job whose publish fails stays queued for the sweep."""
    enqueue_rollback_unsafe("annotation.tasks.run_job", job_id)


class _Heartbeat(threading.Thread):
    """Writes a running job's heartbeat and latest progress on its own database connection:
    every `interval` seconds, and soon after the progress changes. Its own connection, because
    progress written from inside the job's transaction (an import stores its rows in one)
    would stay invisible until commit and hold the job row's lock meanwhile."""

    def __init__(self, job: Job, interval: float):
        super().__init__(name=f"job-{job.pk}-heartbeat", daemon=True)
        self.job_id, self.attempt, self.interval = job.pk, job.attempts, interval
        self.progress = job.progress
        self._changed = threading.Event()
        self._stopped = threading.Event()

    def report(self, progress: float) -> None:
        self.progress = progress
        self._changed.set()

    def stop(self) -> None:
        self._stopped.set()
        self._changed.set()
        self.join()

    def run(self) -> None:
        try:
            while not self._stopped.is_set():
                self._changed.wait(self.interval)
                self._changed.clear()
                if self._stopped.is_set() or not self._beat():
                    return
                self._stopped.wait(min(0.5, self.interval))  # progress at most twice a second
        finally:
            connection.close()  # this thread's own connection

    def _beat(self) -> bool:
        """False once the job is no longer this run's (the sweep gave it to another run)."""
        try:
            return bool(
                Job.objects.filter(pk=self.job_id, status=Job.Status.RUNNING, attempts=self.attempt).update(
                    heartbeat_at=timezone.now(), progress=self.progress
                )
            )
        except Exception:  # a database hiccup: try again on the next beat, on a new connection
            logger.warning("heartbeat of job %s not written", self.job_id, exc_info=True)
            connection.close()
            return True


_heartbeats: dict[int, _Heartbeat] = {}


@contextlib.contextmanager
def job_heartbeat(job: Job):
    """Keep the claimed job's heartbeat going while the block runs. With tasks run in-process
    (no broker: the embedded default) there is no worker to lose and no sweep, so none."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        yield
        return
    beat = _Heartbeat(job, settings.MASHOV_JOB_HEARTBEAT_SECONDS)
    _heartbeats[job.pk] = beat
    beat.start()
    try:
        yield
    finally:
        _heartbeats.pop(job.pk, None)
        beat.stop()


def job_set_progress(job_id: int, progress: float) -> None:
    progress = max(0.0, min(1.0, progress))
    beat = _heartbeats.get(job_id)
    if beat is not None:
        beat.report(progress)
    else:
        Job.objects.filter(pk=job_id).update(progress=progress)


def job_claim(job_id: int) -> Job | None:
    """Mark a queued job as running, one more attempt; None when it is not queued, so a message
    delivered twice (or a redelivery while another run holds the job) changes nothing."""
    with transaction.atomic():
        # The stored input is left in the database: an import reads it slice by slice
        # (JobInput), other kinds on first use.
        job = Job.objects.select_for_update().defer("input_data").filter(pk=job_id).first()
        if job is None or job.status != Job.Status.QUEUED:
            return None
        job.status = Job.Status.RUNNING
        job.attempts += 1
        job.started_at = job.started_at or timezone.now()
        job.heartbeat_at = timezone.now()
        job.save(update_fields=["status", "attempts", "started_at", "heartbeat_at"])
        return job


def job_finish(
    job_id: int, *, result: dict | None = None, error: dict | None = None, attempt: int | None = None
) -> bool:
    """Record the job's outcome. With `attempt`, only if the job is still that run's: a run the
    sweep gave up on (its heartbeat stopped) does not overwrite the outcome of the next."""
    jobs = Job.objects.filter(pk=job_id)
    if attempt is not None:
        jobs = jobs.filter(status=Job.Status.RUNNING, attempts=attempt)
    return bool(
        jobs.update(
            status=Job.Status.FAILED if error else Job.Status.DONE,
            progress=1.0,
            result=result,
            error=error,
            finished_at=timezone.now(),
            input_data=None,  # the upload is no longer needed once the job has an outcome
        )
    )


def job_recover_stopped(job_id: int, *, stale_before, max_attempts: int) -> str | None:
    """A running job whose heartbeat is older than `stale_before`: queue it again, or fail it
    with the reason once it has had `max_attempts` runs. Returns the new status, or None when
    the job has moved on meanwhile (its worker reported after all, or it finished)."""
    with transaction.atomic():
        job = (
            Job.objects.select_for_update()
            .filter(pk=job_id, status=Job.Status.RUNNING, heartbeat_at__lt=stale_before)
            .first()
        )
        if job is None:
            return None
        job.heartbeat_at = timezone.now()
        if job.attempts >= max_attempts:
            reason = stored_message(STOPPED_REASON_BY_KIND.get(job.kind, STOPPED_REASON), attempts=job.attempts)
            logger.warning("job %s failed: %s", job.pk, reason["message"])
            job.status, job.error, job.result, job.finished_at, job.input_data = (
                Job.Status.FAILED,
                reason,
                None,
                timezone.now(),
                None,
            )
            job.save(update_fields=["status", "error", "result", "finished_at", "input_data", "heartbeat_at"])
            return job.status
        logger.warning("job %s: its worker stopped during run %s; queued again", job.pk, job.attempts)
        job.status, job.progress = Job.Status.QUEUED, 0.0
        job.save(update_fields=["status", "progress", "heartbeat_at"])
        transaction.on_commit(lambda: job_enqueue(job_id))
        return job.status


def jobs_sweep(
    older_than_seconds: float = 60, *, stale_after_seconds: float | None = None, max_attempts: int | None = None
) -> int:
    """Periodic (celery beat). Running jobs whose heartbeat is `stale_after_seconds` old
    (default MASHOV_JOB_STALE_SECONDS) are queued again or failed (job_recover_stopped); queued
    jobs not sent for `older_than_seconds` (a lost message, a broker that was down) are sent
    again. A message sent twice is harmless: job_claim takes a job once per queueing.
    Returns how many jobs it acted on."""
    now = timezone.now()
    stale_after = settings.MASHOV_JOB_STALE_SECONDS if stale_after_seconds is None else stale_after_seconds
    max_attempts = settings.MASHOV_JOB_MAX_ATTEMPTS if max_attempts is None else max_attempts
    stale_before = now - timedelta(seconds=stale_after)
    stopped = list(
        Job.objects.filter(status=Job.Status.RUNNING, heartbeat_at__lt=stale_before).values_list("pk", flat=True)[:500]
    )
    recovered = sum(
        job_recover_stopped(job_id, stale_before=stale_before, max_attempts=max_attempts) is not None
        for job_id in stopped
    )
    unsent = Job.objects.filter(status=Job.Status.QUEUED, heartbeat_at__lt=now - timedelta(seconds=older_than_seconds))
    resend = list(unsent.values_list("pk", flat=True)[:500])
    Job.objects.filter(pk__in=resend, status=Job.Status.QUEUED).update(heartbeat_at=now)
    for job_id in resend:
        job_enqueue(job_id)
    return recovered + len(resend)
