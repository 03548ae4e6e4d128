"""Jobs on a real Celery worker process and Redis (docs/jobs.md
"Tasks"): large imports run on the worker, a task run twice changes nothing, a broker
that is down never makes the request do the work, and a worker killed mid-job gets it back."""

import contextlib
import io
import json
import os
import signal
import threading
import time

import pytest

from tests.conftest import NOTHING_HELD_OUT, wait_until

pytestmark = [pytest.mark.worker, pytest.mark.postgres]

ROWS = 5000


def jsonl(rows: int, *, bad: dict[int, dict] | None = None, prefix: str = "r") -> bytes:
    lines = []
    for n in range(1, rows + 1):
        record = {
            "id": f"{prefix}{n}",
            "premise": f"הספר מונח על השולחן {n}.",
            "hypothesis": "یک کتاب هست.",
            "label": "ecn"[n % 3],
            "group": f"q{n // 4}",
        }
        if bad and n in bad:
            record.update(bad[n])
            record = {k: v for k, v in record.items() if v is not None}
        lines.append(json.dumps(record, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode("utf-8")


def upload(data: bytes, name: str = "big.jsonl"):
    handle = io.BytesIO(data)
    handle.name = name
    return handle


@pytest.fixture
def import_client(transactional_db, settings, make_user, client_for):
    """A supervisor's client on a project whose imports above 100 rows become jobs."""
    from annotation.services.projects import project_create

    settings.MASHOV_IMPORT_JOB_ROWS = 100
    admin = make_user("jobs-admin", staff=True)
    sup = make_user("jobs-sup")
    project = project_create(actor=admin, slug="jobs", name="Jobs", kind="nli_relabel", language="he")
    from annotation.models import Membership

    Membership.objects.create(project=project, user=sup, role="supervisor", status="active")
    client = client_for(sup)

    def send(data: bytes):
        started = time.monotonic()
        response = client.post(f"/api/projects/{project.slug}/import/", {"file": upload(data), "format": "jsonl"})
        return response, time.monotonic() - started

    return project, client, send


@pytest.fixture
def big_import(import_client, celery_worker):
    """import_client, with the suite's worker running the jobs."""
    return import_client


def job_json(client, job_id: int) -> dict:
    response = client.get(f"/api/jobs/{job_id}/")
    assert response.status_code == 200, response.content
    return response.json()


def poll_until_finished(client, job_id: int, timeout: float = 90.0) -> tuple[dict, list[str]]:
    seen: list[str] = []

    def finished():
        body = job_json(client, job_id)
        if not seen or seen[-1] != body["status"]:
            seen.append(body["status"])
        return body if body["status"] in ("done", "failed") else None

    return wait_until(finished, timeout=timeout, interval=0.1), seen


def test_large_import_runs_as_a_job_on_the_worker(big_import):
    from annotation.models import Item, Job

    project, client, send = big_import
    response, elapsed = send(jsonl(ROWS))
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["created"] == 0 and isinstance(body["job"], int)
    first = job_json(client, body["job"])
    # The request only stored the job: a 5,000-row import cannot have finished already.
    assert first["status"] in ("queued", "running"), first
    assert first["result"] is None

    final, seen = poll_until_finished(client, body["job"])
    assert final["status"] == "done", final
    assert final["progress"] == 1.0
    assert final["result"] == {"created": ROWS, "skipped": 0, **NOTHING_HELD_OUT}
    assert final["error"] is None
    assert seen[0] in ("queued", "running") and seen[-1] == "done"
    assert Item.objects.filter(project=project).count() == ROWS
    item = Item.objects.get(project=project, external_id="r7")
    assert item.payload == {"premise": "הספר מונח על השולחן 7.", "hypothesis": "یک کتاب هست."}
    job = Job.objects.get(pk=body["job"])
    assert job.attempts == 1 and job.started_at is not None and job.finished_at >= job.started_at
    assert job.input_data is None  # the upload is dropped once the job has an outcome


def test_large_import_with_bad_rows_fails_and_stores_nothing(big_import):
    from annotation.models import Item

    project, client, send = big_import
    data = jsonl(ROWS, bad={17: {"hypothesis": None}, 4000: {"label": "maybe"}, 4999: {"id": "r3"}})
    response, _ = send(data)
    assert response.status_code == 202, response.content
    final, _ = poll_until_finished(client, response.json()["job"])
    assert final["status"] == "failed", final
    assert final["result"] is None
    errors = final["error"]["errors"]
    assert {(e["row"], e["field"]) for e in errors} == {(17, "hypothesis"), (4000, "label"), (4999, "id")}
    assert Item.objects.filter(project=project).count() == 0


def test_running_a_finished_job_again_changes_nothing(big_import):
    from annotation.models import Item, Job
    from annotation.tasks import run_job

    project, client, send = big_import
    response, _ = send(jsonl(500, prefix="twice"))
    job_id = response.json()["job"]
    final, _ = poll_until_finished(client, job_id)
    assert final["status"] == "done"
    before = Job.objects.filter(pk=job_id).values().get()
    run_job(job_id)  # a redelivered message, run here
    run_job.apply(args=[job_id])  # and through Celery's own call path
    assert Job.objects.filter(pk=job_id).values().get() == before
    assert Item.objects.filter(project=project).count() == 500
    assert job_json(client, job_id) == final


def test_broker_down_keeps_the_request_fast_and_the_sweep_enqueues_later(big_import, settings, monkeypatch):
    from annotation.models import Item, Job
    from annotation.services.jobs import jobs_sweep
    from config.celery import app

    project, client, send = big_import
    real_url = app.conf.broker_url

    def use_broker(url: str):
        settings.CELERY_BROKER_URL = url
        # Celery reads the CELERY_BROKER_URL environment variable before its own conf.
        monkeypatch.setenv("CELERY_BROKER_URL", url)
        app.conf.broker_url = url
        # The app caches its connection and producer pools, built for the broker of the time;
        # drop the caches (kombu keeps one pool per broker URL, so the real one is reused).
        app._pool = None
        app.amqp._producer_pool = None

    use_broker("redis://127.0.0.1:6399/0")  # nothing listens there
    try:
        response, elapsed = send(jsonl(ROWS, prefix="down"))
        assert response.status_code == 202, response.content
        assert elapsed < 5.0, f"the import request took {elapsed:.1f}s with the broker down"
        job_id = response.json()["job"]
        time.sleep(1.0)
        assert job_json(client, job_id)["status"] == "queued"
        assert Item.objects.filter(project=project).count() == 0
        assert Job.objects.get(pk=job_id).attempts == 0
    finally:
        use_broker(real_url)

    assert jobs_sweep(older_than_seconds=0) >= 1
    final, _ = poll_until_finished(client, job_id)
    assert final["status"] == "done" and final["result"] == {"created": ROWS, "skipped": 0, **NOTHING_HELD_OUT}
    assert Item.objects.filter(project=project).count() == ROWS


def _active_task_pid(app, worker_name_prefix: str, job_id: int) -> int | None:
    replies = app.control.inspect(timeout=1.0).active() or {}
    for name, tasks in replies.items():
        if not name.startswith(worker_name_prefix):
            continue
        for task in tasks:
            if task.get("name") == "annotation.tasks.run_job" and list(task.get("args") or []) == [job_id]:
                return task.get("worker_pid")
    return None


@contextlib.contextmanager
def holding_item(project, external_id: str):
    """Hold an uncommitted item with this id (in its own connection and transaction) until the
    block ends: an import of a file with that id waits on the row's unique-index entry, so a
    test can kill its worker mid-run deterministically."""
    from django.db import connection, transaction

    from annotation.models import Item

    holding, release = threading.Event(), threading.Event()

    def hold():
        try:
            with transaction.atomic():
                Item.objects.create(project=project, external_id=external_id, payload={})
                holding.set()
                release.wait(timeout=180)
                transaction.set_rollback(True)
        finally:
            connection.close()

    blocker = threading.Thread(target=hold, daemon=True)
    blocker.start()
    assert holding.wait(timeout=10)
    try:
        yield
    finally:
        release.set()
        blocker.join(timeout=30)


def lock_waiters() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
        )
        return cursor.fetchone()[0]


def heartbeat_older_than(job_id: int, seconds: float) -> bool:
    from django.utils import timezone

    from annotation.models import Job

    return (timezone.now() - Job.objects.get(pk=job_id).heartbeat_at).total_seconds() > seconds


def test_pool_process_killed_mid_job_is_run_again_once_by_the_sweep(big_import, celery_worker):
    """SIGKILL the pool process that runs a job. The message acks_late puts back reaches a
    fresh pool process, which leaves the job alone (it is running: a second copy must not
    start beside a live one); the sweep sees the heartbeat stop, queues the job again, and it
    finishes exactly once."""
    from annotation.models import Item, Job
    from annotation.services.jobs import jobs_sweep
    from config.celery import app

    project, client, send = big_import
    with holding_item(project, "kill1"):
        response, _ = send(jsonl(ROWS, prefix="kill"))
        job_id = response.json()["job"]
        wait_until(lambda: lock_waiters() >= 1, timeout=60)
        job = Job.objects.get(pk=job_id)
        assert (job.status, job.attempts) == ("running", 1)
        pid = wait_until(lambda: _active_task_pid(app, f"{celery_worker.queue}@", job_id), timeout=20)
        os.kill(pid, signal.SIGKILL)

        wait_until(lambda: heartbeat_older_than(job_id, 2.0), timeout=60)
        # The redelivered message has had its chance by now and changed nothing.
        assert (Job.objects.get(pk=job_id).status, Job.objects.get(pk=job_id).attempts) == ("running", 1)
        assert jobs_sweep(stale_after_seconds=2.0) == 1
        wait_until(lambda: Job.objects.get(pk=job_id).attempts == 2, timeout=60)

    final, _ = poll_until_finished(client, job_id, timeout=120)
    assert final["status"] == "done", final
    assert final["result"] == {"created": ROWS, "skipped": 0, **NOTHING_HELD_OUT}
    assert Item.objects.filter(project=project).count() == ROWS
    assert Job.objects.get(pk=job_id).attempts == 2
    assert celery_worker.process.poll() is None  # the worker itself carried on


@pytest.fixture
def dying_worker(import_client, settings):
    """A worker of its own (its own queue, which the app publishes to meanwhile), with a
    heartbeat every half second; the test kills it with SIGKILL. Yields (worker, start_another)."""
    from config.celery import app
    from tests.conftest import TEST_QUEUE, start_worker, stop_worker

    queue = f"{TEST_QUEUE}-dies"
    # Celery reads the Django setting first, then its own conf.
    settings.CELERY_TASK_DEFAULT_QUEUE = app.conf.task_default_queue = queue
    started = []

    def start(**env):
        started.append(start_worker(queue, concurrency=1, env={"MASHOV_JOB_HEARTBEAT_SECONDS": "0.5", **env}))
        return started[-1]

    try:
        yield start(), start
    finally:
        app.conf.task_default_queue = TEST_QUEUE
        for worker in started:
            stop_worker(worker)
        with app.connection_for_write() as conn:
            conn.default_channel.queue_delete(queue)


def kill_worker_mid_import(project, send, worker) -> int:
    """Start a large import, SIGKILL the whole worker (main process and pool) while the import's
    transaction is open, and return the job's id once the interrupted statement is gone."""
    from annotation.models import Job

    with holding_item(project, "dead1"):
        response, _ = send(jsonl(ROWS, prefix="dead"))
        assert response.status_code == 202, response.content
        job_id = response.json()["job"]
        wait_until(lambda: lock_waiters() >= 1, timeout=60)
        claimed = Job.objects.get(pk=job_id)
        assert (claimed.status, claimed.attempts) == ("running", 1)
        # The heartbeat goes on while the import's transaction is open (progress too: the
        # share of the file read, which its first batch's write, held here, follows).
        wait_until(lambda: Job.objects.get(pk=job_id).heartbeat_at > claimed.heartbeat_at, timeout=10)
        assert Job.objects.get(pk=job_id).progress > 0
        os.killpg(worker.process.pid, signal.SIGKILL)  # its own session: main process and pool
        worker.process.wait(timeout=10)
    # Released: the dead run's statement proceeds, finds its client gone and rolls back.
    wait_until(lambda: lock_waiters() == 0, timeout=30)
    return job_id


def test_worker_killed_mid_import_is_run_again_once_a_worker_is_up(import_client, dying_worker):
    from annotation.models import Item, Job
    from annotation.services.jobs import jobs_sweep

    project, client, send = import_client
    worker, start_another = dying_worker
    job_id = kill_worker_mid_import(project, send, worker)
    assert Job.objects.get(pk=job_id).status == "running"  # nobody else would ever end it

    start_another()
    up = time.monotonic()
    wait_until(lambda: heartbeat_older_than(job_id, 2.0), timeout=30)
    assert jobs_sweep(stale_after_seconds=2.0) == 1
    final, seen = poll_until_finished(client, job_id, timeout=120)
    assert final["status"] == "done", final
    assert final["result"] == {"created": ROWS, "skipped": 0, **NOTHING_HELD_OUT}
    assert time.monotonic() - up < 300
    assert Item.objects.filter(project=project).count() == ROWS
    assert Job.objects.get(pk=job_id).attempts == 2


def test_worker_killed_mid_import_too_often_fails_saying_nothing_was_stored(import_client, dying_worker):
    from annotation.models import Item, Job
    from annotation.services.jobs import jobs_sweep

    project, client, send = import_client
    worker, _ = dying_worker
    job_id = kill_worker_mid_import(project, send, worker)
    assert Item.objects.filter(project=project).count() == 0

    wait_until(lambda: heartbeat_older_than(job_id, 2.0), timeout=30)
    assert jobs_sweep(stale_after_seconds=2.0, max_attempts=1) == 1
    final = job_json(client, job_id)
    assert final["status"] == "failed" and final["result"] is None
    assert "worker running this job stopped 1 times" in final["error"]["message"]
    assert "nothing was imported" in final["error"]["message"]
    assert Item.objects.filter(project=project).count() == 0
    job = Job.objects.get(pk=job_id)
    assert job.input_data is None and job.finished_at is not None
    assert jobs_sweep(stale_after_seconds=0) == 0  # a failed job stays failed
