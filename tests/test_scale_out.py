"""Past one machine, as docker-compose.yml deploys it: two web processes (gunicorn, production
settings) and two Celery workers, one on the rounds' queue and one on the jobs' queue, all
on one PostgreSQL database and one Redis. Many annotators at once, each sending its `next`
to one web and its `submit` to the other: no item gets more votes or live claims than its
overlap, nobody labels an item twice, every item is decided exactly once (one consensus
outcome, one decision), the consensus steps run on the rounds' worker and the aggregation
jobs on the jobs' worker only."""

import os
import secrets
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import ROOT, start_worker, stop_worker, wait_until
from tests.services.test_concurrency import (
    ITEMS,
    VOTES,
    assert_every_item_completed,
    assert_no_overfill_no_doubles,
    http_annotator,
    make_crowd,
    run_threads,
)

pytestmark = [pytest.mark.postgres, pytest.mark.worker]

ANNOTATORS = 24
GUNICORN_WORKERS = 2


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Web:
    def __init__(self, env: dict[str, str], log: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log
        self.log = open(log, "w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind", f"127.0.0.1:{self.port}",
             "--workers", str(GUNICORN_WORKERS), "--timeout", "120"],
            cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip

    def wait_ready(self, timeout: float = 90.0) -> None:
        import requests

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"gunicorn exited during start-up:\n{self.log_path.read_text()[-3000:]}")
            try:
                if requests.get(f"{self.url}/healthz/", timeout=5).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.3)
        raise AssertionError(f"gunicorn did not answer within {timeout:.0f} s:\n{self.log_path.read_text()[-3000:]}")

    def stop(self) -> None:
        """SIGTERM to the gunicorn master this test started (it stops its own workers)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)  # its own session: the master and its workers
                self.process.wait()
        self.log.close()
        self.log_path.unlink(missing_ok=True)


def collect_static(env: dict[str, str]) -> None:
    """As the image's build does: the manifest storage names each static file by its hash,
    and a production page fails without the manifest (a fresh clone has none)."""
    collected = subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert collected.returncode == 0, collected.stderr


def production_env(**extra: str) -> dict[str, str]:
    """The environment of a compose container (production settings, plain HTTP) on the test
    database and broker, plus `extra`."""
    from django.conf import settings
    from django.db import connection

    db = connection.settings_dict
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "VIRTUAL_ENV", "PYTHONPATH", "TMPDIR")
    env = {
        **{key: value for key, value in os.environ.items() if key in keep},
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "PLAIN_HTTP": "1",
        "ALLOWED_HOSTS": "127.0.0.1",
        "DATABASE_URL": f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "LOG_LEVEL": "WARNING",
        **extra,
    }
    if db.get("PASSWORD"):
        env["PGPASSWORD"] = db["PASSWORD"]
    return env


@pytest.fixture
def deployment(transactional_db):
    """Two gunicorn web processes and two workers (rounds' queue, jobs' queue) with
    production settings on the test database, as the compose file's services run."""
    suffix = uuid.uuid4().hex[:8]
    rounds, jobs = f"mashov-rounds-{suffix}", f"mashov-jobs-{suffix}"
    env = production_env(CELERY_QUEUE=rounds, CELERY_JOBS_QUEUE=jobs)
    started: list = []
    try:
        webs = [Web(env, ROOT / "tests" / f".web-{suffix}-{index}.log") for index in range(2)]
        started += webs
        workers = []
        for queue in (rounds, jobs):
            workers.append(start_worker(queue, env=env))
            started.append(workers[-1])
        for web in webs:
            web.wait_ready()
        yield {"webs": webs, "rounds": rounds, "jobs": jobs}
    finally:
        for process in reversed(started):
            process.stop() if isinstance(process, Web) else stop_worker(process)


def tasks_run_by(queue: str) -> Counter:
    """The tasks the worker reading `queue` has run (its own count, from `celery inspect stats`)."""
    from config.celery import app

    stats = app.control.inspect(timeout=3.0).stats() or {}
    totals = Counter()
    for name, figures in stats.items():
        if name.startswith(f"{queue}@"):
            totals.update(figures.get("total", {}))
    return totals


def test_two_webs_and_two_workers_on_one_database_never_overfill_and_decide_once(deployment, make_user):
    from django.db.models import Count
    from rest_framework.authtoken.models import Token

    from annotation.models import ConsensusOutcome, Decision, Item, Job

    project, users = make_crowd(make_user, annotators=ANNOTATORS, items=ITEMS, slug="scale-out")
    tokens = {user.pk: Token.objects.create(user=user).key for user in users}
    webs = deployment["webs"]
    statuses: Counter = Counter()
    # next on one web, submit on the other: no state of a claim lives in a web process.
    annotate = http_annotator(project, tokens, [web.url for web in webs], statuses)

    started = time.monotonic()
    errors = run_threads(annotate, [(user, index) for index, user in enumerate(users)])
    elapsed = time.monotonic() - started
    print(f"\n{ANNOTATORS} annotators on two webs: {dict(statuses)} in {elapsed:.2f}s")
    assert errors == [], errors[0]
    assert_no_overfill_no_doubles(project, VOTES)
    assert statuses["submit 201"] == ITEMS * VOTES
    for web in webs:  # both webs took a share of the claims and of the votes
        assert statuses[f"next on {web.url}"] > 0 and statuses[f"submit on {web.url}"] > 0
    assert_every_item_completed(project, VOTES)

    # The rounds' worker decides every item; the aggregation that follows runs on the jobs' worker.
    wait_until(lambda: not Item.objects.filter(project=project).exclude(status="accepted").exists(), timeout=90)
    wait_until(lambda: Job.objects.filter(project=project, kind="aggregation", status="done").exists(), timeout=90)
    outcomes = ConsensusOutcome.objects.filter(item__project=project)
    assert outcomes.count() == ITEMS
    assert not outcomes.values("item_id", "round").annotate(n=Count("id")).filter(n__gt=1).exists()
    decisions = Decision.objects.filter(item__project=project)
    assert decisions.count() == ITEMS, list(decisions.values("item_id", "method", "status"))
    assert set(decisions.values_list("status", flat=True)) == {"accepted"}

    on_rounds, on_jobs = tasks_run_by(deployment["rounds"]), tasks_run_by(deployment["jobs"])
    assert on_rounds["annotation.tasks.compute_consensus"] >= ITEMS
    # Each consensus run asks for the aggregation itself once its decision commits: no
    # second task per closed round (the jobs it queued ran, above).
    assert on_rounds["annotation.tasks.request_aggregation"] == 0
    assert on_rounds["annotation.tasks.run_job"] == 0
    assert set(on_jobs) == {"annotation.tasks.run_job"}, on_jobs
