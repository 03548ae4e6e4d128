"""What Mashov's processes load at start (bench/footprint.py measures the memory).

A web process: the app, its URLs and its task modules, but not scipy's statistics and sparse
matrices, scikit-learn or the aggregation's pandas stack, which cost every process that
imports them tens of MiB and are used only where intervals, correlations, agreement and
aggregation are computed (imported there, on first use). The web master loads what a request
would otherwise load in each worker on its first call (config/preload.py), then forks its
workers with no database or broker connection open; serving any page then imports nothing
more. A Celery worker skips Django's system checks, which imported the URLconf and every
view, and loads the installed kinds before its pool forks (config/celery.py). Beat loads
the broker and the schedule only (config/beat.py)."""

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from config.web_worker import private_kib
from tests.test_scale_out import collect_static

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("scipy", "scipy.stats", "scipy.sparse", "sklearn", "pandas", "pyarrow", "crowdkit", "nltk", "transformers")

PROBE = f"""
import sys
import django
django.setup()
import config.wsgi
from config.preload import warm_web
warm_web()
import annotation.tasks
import api.urls
from django.db import connections
print(sorted(name for name in {HEAVY!r} if name in sys.modules))
print([c.alias for c in connections.all(initialized_only=True) if c.connection is not None])
import threading
print(threading.active_count())
"""


def run_probe(code: str, **env) -> list[str]:
    # Not this process's CELERY_SKIP_CHECKS: config/celery.py set it here, and the probe's
    # process must set it (or not) itself.
    inherited = {name: value for name, value in os.environ.items() if name != "CELERY_SKIP_CHECKS"}
    environment = {**inherited, "DJANGO_SETTINGS_MODULE": "config.settings.test", **env}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=180
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip().splitlines()


def test_a_web_master_loads_no_heavy_library_and_opens_no_connection_or_thread():
    heavy, connected, threads = run_probe(PROBE)[-3:]
    assert heavy == "[]"
    assert connected == "[]"
    # A thread started in the master would not exist in the forked workers.
    assert threads == "1"


BEAT_PROBE = """
import json, sys
from config.beat import app
app.loader.init_worker()  # what `celery beat` does before it schedules
from django.apps import apps
from django.conf import settings
print(json.dumps({
    "apps_ready": apps.ready,
    "loaded": sorted(name for name in ("numpy", "annotation.tasks", "annotation.models", "rest_framework")
                     if name in sys.modules),
    "schedule": {name: entry["task"] for name, entry in app.conf.beat_schedule.items()},
    "settings": {name: entry["task"] for name, entry in settings.CELERY_BEAT_SCHEDULE.items()},
    "queue": app.amqp.router.route({}, "annotation.tasks.sweep_jobs")["queue"].name,
    "broker": app.conf.broker_url,
}))
"""


def test_beat_loads_the_schedule_and_the_broker_but_no_django_app_or_task():
    found = json.loads(run_probe(BEAT_PROBE, CELERY_BROKER_URL="redis://127.0.0.1:6379/9", CELERY_QUEUE="rounds")[-1])
    assert found["apps_ready"] is False
    assert found["loaded"] == []
    assert found["schedule"] == found["settings"] == {"sweep-stalled-jobs": "annotation.tasks.sweep_jobs"}
    # Where the worker of the rounds' queue reads it, as the project's app routes it.
    assert found["queue"] == "rounds"
    assert found["broker"] == "redis://127.0.0.1:6379/9"


WORKER_PROBE = """
import json, sys
from config.celery import app
from celery import signals
# What `celery worker` does before its pool forks: Django set up, the tasks imported, then
# the worker's own start-up hooks.
app.loader.init_worker()
signals.worker_init.send(sender=None)
from django.apps import apps
from django.conf import settings
print(json.dumps({
    "apps_ready": apps.ready,
    "tasks": "annotation.tasks.sweep_jobs" in app.tasks,
    "kinds": all(path.rpartition(".")[0] in sys.modules for path in settings.MASHOV_KINDS),
    "loaded": sorted(name for name in ("annotation.views", "api.views", "api.urls", "config.urls",
                                       "drf_spectacular.generators")
                     if name in sys.modules),
}))
"""


def test_a_celery_worker_starts_without_the_urlconf_or_the_views():
    """Celery's Django fixup runs the system checks at start, and their URL checks import every
    view: config/celery.py skips them (migrate runs them first), and loads the installed kinds
    in the main process before its pool forks."""
    found = json.loads(run_probe(WORKER_PROBE)[-1])
    # The kinds, which nearly every task reads, are loaded before the pool forks (shared).
    assert found == {"apps_ready": True, "tasks": True, "kinds": True, "loaded": []}


# A web worker as gunicorn forks it: the app and the master's preload loaded, then pages
# served. The pytest process cannot stand for it: the suite has long imported what a page
# would import.
PAGES_PROBE = """
import json, os, sys
import django
django.setup()
import config.wsgi
from config.preload import warm_web
warm_web()
from django.contrib.auth import get_user_model
from django.test import Client, override_settings
client = Client()
client.force_login(get_user_model().objects.get(username=os.environ["PROBE_USER"]))
before = set(sys.modules)
answered = {}
for page in json.loads(os.environ["PROBE_PAGES"]):
    for live_items in (5000, 10):  # figures computed per request, then read as stored
        with override_settings(MASHOV_FIGURES_LIVE_ITEMS=live_items):
            answered[page] = client.get(page).status_code
print(json.dumps({"answered": answered, "imported": sorted(set(sys.modules) - before)}))
"""


@pytest.mark.django_db(transaction=True)
def test_serving_any_supervisor_page_after_the_preload_imports_nothing(make_user, settings):
    """What a page needs is in the master: a worker's first call of a page loads no module
    (the project page imported its kind's report sections, an API error DRF's exception
    handler, the revisions page its kind's links)."""
    from annotation.models import Job, Membership
    from annotation.services.aggregation import aggregation_compute_job
    from annotation.services.projects import project_create
    from tests.api.test_large_project_pages import PAGES, generated

    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        pytest.skip("the probe reads the test's committed rows from the stack's PostgreSQL")
    admin, supervisor = make_user("root", staff=True), make_user("sup")
    annotators = [make_user(f"a{i}") for i in range(3)]
    project = project_create(actor=admin, slug="walk", name="walk", kind="nli_relabel", language="he")
    Membership.objects.create(project=project, user=supervisor, role="supervisor", status="active")
    Membership.objects.bulk_create(
        Membership(project=project, user=a, role="annotator", status="active") for a in annotators
    )
    generated(project, annotators, 60)
    aggregation_compute_job(Job.objects.create(kind="aggregation", project=project, status="running"))
    pages = ["/", "/api/schema/", "/api/docs/", *(page.format(slug="walk", deep="0.0") for page in PAGES)]
    # An API error (GET of a POST-only view) and the revisions, as the supervisor reads them.
    pages += ["/api/auth/token/", "/api/projects/walk/revisions/", "/p/walk/revisions/"]
    found = json.loads(
        run_probe(
            PAGES_PROBE,
            DATABASE_URL=url.rsplit("/", 1)[0] + "/" + settings.DATABASES["default"]["NAME"],
            ALLOWED_HOSTS="testserver",
            PROBE_USER="sup",
            PROBE_PAGES=json.dumps(pages),
        )[-1]
    )
    assert found["answered"] == {page: 405 if page == "/api/auth/token/" else 200 for page in pages}
    assert found["imported"] == []


def sockets_to(pid: int, ports: set[int]) -> list[int]:
    """Remote ports among `ports` of the TCP connections process `pid` holds open."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table in ("tcp", "tcp6"):
        with open(f"/proc/{pid}/net/{table}") as handle:
            for line in list(handle)[1:]:
                fields = line.split()
                remote_port = int(fields[2].rsplit(":", 1)[1], 16)
                if fields[9] in inodes and remote_port in ports:
                    found.append(remote_port)
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def gunicorn_serving(tmp_path, workers: int, **extra_env):
    """gunicorn as the image runs it (config/gunicorn.py) on the test database: (process, port)."""
    from django.conf import settings

    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        pytest.skip("the stack's database is PostgreSQL")
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "SECRET_KEY": secrets.token_urlsafe(60),
        "PLAIN_HTTP": "1",
        "ALLOWED_HOSTS": "127.0.0.1",
        # The test database: migrated, and empty for any process but this test's.
        "DATABASE_URL": url.rsplit("/", 1)[0] + "/" + settings.DATABASES["default"]["NAME"],
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "GUNICORN_ACCESS_LOG": "",
        "WEB_CONCURRENCY": str(workers),
        **extra_env,
    }
    collect_static(env)
    with open(tmp_path / "gunicorn.log", "w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.py"],
            cwd=ROOT,
            env=env,
            start_new_session=True,
            stderr=log,
        )
    try:
        yield server, port
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def get_when_serving(url: str, **kwargs):
    """GET `url`, retried while gunicorn is still booting."""
    import requests

    for _ in range(300):
        try:
            return requests.get(url, timeout=30, **kwargs)
        except requests.ConnectionError:
            time.sleep(0.2)
    raise AssertionError(f"{url} never answered")


@pytest.mark.django_db
def test_the_gunicorn_master_forks_its_workers_holding_no_database_or_broker_connection(tmp_path):
    """config/gunicorn.py preloads the app: its workers must each open their own connections."""
    with gunicorn_serving(tmp_path, workers=2) as (server, port):
        # A token lookup: a database read in whichever worker answers.
        answers = [
            get_when_serving(
                f"http://127.0.0.1:{port}/api/projects/", headers={"Authorization": "Token nope"}
            ).status_code
            for _ in range(6)
        ]
        assert answers == [401] * 6, (tmp_path / "gunicorn.log").read_text()[-2000:]
        assert sockets_to(server.pid, {5432, 6379}) == []
        # The master forks its workers one after another: on a busy machine the first can
        # answer every request before the second exists, so wait for both.
        for _ in range(150):
            workers = children(server.pid)
            if len(workers) == 2:
                break
            time.sleep(0.2)
        assert len(workers) == 2
        assert sockets_to(server.pid, {5432, 6379}) == []
        # The workers do hold theirs (the connection outlives the request: DB_CONN_MAX_AGE).
        assert any(5432 in sockets_to(pid, {5432}) for pid in workers)


# Pages that copy the master's objects into the worker that serves them: the sign-in page (a
# template, a session), an API error (DRF, a database read), a page not found.
PAGES_NO_SIGN_IN_NEEDS = ("/login/", "/api/projects/", "/no-such-page/")


@pytest.mark.django_db
@pytest.mark.parametrize("margin_mib, replaced", [(1, True), (1000, False)])
def test_a_web_worker_left_idle_with_the_masters_pages_copied_is_replaced_by_a_fresh_one(
    tmp_path, margin_mib, replaced
):
    """config/web_worker.py: what serving pages copied stays with a worker until it ends; a
    worker idle for GUNICORN_RECYCLE_IDLE_SECONDS with more than GUNICORN_RECYCLE_MIB copied
    ends, and the master forks one that shares its pages again. One that copied less stays."""
    with gunicorn_serving(
        tmp_path, workers=1, GUNICORN_RECYCLE_IDLE_SECONDS="1", GUNICORN_RECYCLE_MIB=str(margin_mib)
    ) as (server, port):
        get_when_serving(f"http://127.0.0.1:{port}/healthz/")
        (forked,) = children(server.pid)
        fresh_kib = private_kib(forked)
        for page in PAGES_NO_SIGN_IN_NEEDS * 3:
            assert get_when_serving(f"http://127.0.0.1:{port}{page}").status_code in (200, 401, 404)
        served_kib = private_kib(forked)
        assert served_kib - fresh_kib > 1024  # the pages did copy more than the smaller margin
        for _ in range(50 if replaced else 15):  # the idle wait (1 s), then the fork of a new worker
            time.sleep(0.2)
            now = children(server.pid)
            if now and now != [forked]:
                break
        log = (tmp_path / "gunicorn.log").read_text()[-2000:]
        if not replaced:
            assert now == [forked], log
            return
        (new,) = now
        assert new != forked, log
        assert private_kib(new) < served_kib - 1024
        # It serves, from the master's pages again.
        assert get_when_serving(f"http://127.0.0.1:{port}/healthz/").status_code == 200


def children(pid: int) -> list[int]:
    return sorted(int(child) for child in os.listdir("/proc") if child.isdigit() and parent(int(child)) == pid)


def parent(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return int(handle.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return 0
