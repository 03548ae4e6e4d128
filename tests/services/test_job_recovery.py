"""A job whose worker died is run again or failed with the reason by the sweep; a message
delivered twice never starts a second run beside a live one. (The same on a real worker
killed with SIGKILL: tests/tasks/test_jobs.py.)"""

import threading
from datetime import timedelta

import pytest
from django.utils import timezone


@pytest.fixture
def make_job(db):
    from annotation.models import Job

    def make(kind="agreement", **fields):
        return Job.objects.create(kind=kind, **fields)

    return make


def running(make_job, *, seconds_since_heartbeat: float, attempts: int = 1, kind="agreement"):
    return make_job(
        kind=kind,
        status="running",
        attempts=attempts,
        progress=0.6,
        input_data=b"rows",
        heartbeat_at=timezone.now() - timedelta(seconds=seconds_since_heartbeat),
    )


def test_a_second_message_for_a_running_job_changes_nothing(make_job):
    from annotation.models import Job
    from annotation.services.jobs import job_claim
    from annotation.tasks import run_job

    job = make_job()
    assert job_claim(job.pk).attempts == 1
    run_job(job.pk)  # the same message again, while the first run goes on
    assert Job.objects.filter(pk=job.pk).values_list("status", "attempts").get() == ("running", 1)


def test_the_sweep_queues_again_a_job_whose_heartbeat_stopped(make_job, settings):
    from annotation.models import Job
    from annotation.services.jobs import jobs_sweep

    settings.MASHOV_JOB_STALE_SECONDS = 120
    stopped = running(make_job, seconds_since_heartbeat=121)
    alive = running(make_job, seconds_since_heartbeat=100)
    assert jobs_sweep() == 1
    stopped.refresh_from_db()
    assert (stopped.status, stopped.progress, stopped.attempts, stopped.error) == ("queued", 0.0, 1, None)
    assert bytes(stopped.input_data) == b"rows"  # the next run needs the upload
    assert Job.objects.get(pk=alive.pk).status == "running"
    assert jobs_sweep() == 0  # just queued again: not sent twice in a row


def test_after_max_attempts_the_sweep_fails_the_job_with_the_reason(make_job, settings):
    from annotation.services.jobs import jobs_sweep

    settings.MASHOV_JOB_MAX_ATTEMPTS = 3
    imported = running(make_job, kind="import", seconds_since_heartbeat=600, attempts=3)
    other = running(make_job, seconds_since_heartbeat=600, attempts=3)
    assert jobs_sweep() == 2
    imported.refresh_from_db()
    other.refresh_from_db()
    assert imported.status == other.status == "failed"
    assert imported.result is None and imported.input_data is None and imported.finished_at is not None
    assert imported.error["message"].startswith("the worker running this job stopped 3 times")
    assert "nothing was imported: send the file again" in imported.error["message"]
    assert "import" not in other.error["message"]


def test_a_run_given_up_on_does_not_overwrite_the_next_run(make_job):
    from annotation.models import Job
    from annotation.services.jobs import job_claim, job_finish, jobs_sweep

    job = make_job()
    first = job_claim(job.pk)
    Job.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    assert jobs_sweep() == 1
    second = job_claim(job.pk)
    assert (first.attempts, second.attempts) == (1, 2)
    assert job_finish(job.pk, result={"late": True}, attempt=first.attempts) is False
    assert Job.objects.get(pk=job.pk).status == "running"
    assert job_finish(job.pk, result={"ok": True}, attempt=second.attempts) is True
    assert Job.objects.filter(pk=job.pk).values_list("status", "result").get() == ("done", {"ok": True})


@pytest.mark.postgres
def test_the_heartbeat_reports_progress_from_inside_the_jobs_transaction(transactional_db, make_job, settings):
    """The worker's heartbeat writes on its own connection: progress reported inside a job's
    open transaction is seen by pollers at once, and the job row is not locked meanwhile."""
    from django.db import connection, transaction

    from annotation.models import Job
    from annotation.services.jobs import job_claim, job_heartbeat, job_set_progress
    from tests.conftest import wait_until

    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.MASHOV_JOB_HEARTBEAT_SECONDS = 0.2
    job = job_claim(make_job().pk)
    seen = {}

    def poll():  # another client, on its own connection
        try:
            seen["row"] = wait_until(
                lambda: Job.objects.filter(pk=job.pk, progress=0.7).values_list("heartbeat_at").first(), timeout=5
            )
        finally:
            connection.close()

    with job_heartbeat(job), transaction.atomic():
        job_set_progress(job.pk, 0.7)
        poller = threading.Thread(target=poll)
        poller.start()
        poller.join()
    assert seen["row"][0] > job.heartbeat_at
