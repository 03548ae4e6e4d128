"""Settings come from the environment; production refuses to start without a real key and
passes Django's deployment checks with one."""

import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def manage(*args, **env):
    # A clean environment: browser tests set DJANGO_ALLOW_ASYNC_UNSAFE in this process.
    dropped = ("SECRET_KEY", "DJANGO_SETTINGS_MODULE", "DEBUG", "DJANGO_ALLOW_ASYNC_UNSAFE")
    base = {k: v for k, v in os.environ.items() if k not in dropped}
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env={**base, **env}, capture_output=True, text=True, timeout=120
    )


def test_production_refuses_to_start_without_a_real_secret_key():
    for key in (None, "short", "django-insecure-" + "x" * 60):
        env = {"DJANGO_SETTINGS_MODULE": "config.settings.production"}
        if key is not None:
            env["SECRET_KEY"] = key
        result = manage("check", **env)
        assert result.returncode != 0
        assert "SECRET_KEY must be set" in result.stderr


def test_production_passes_the_deployment_checks():
    # A shared cache for login throttling: production's deployment checks refuse one per process.
    result = manage(
        "check",
        "--deploy",
        DJANGO_SETTINGS_MODULE="config.settings.production",
        SECRET_KEY=secrets.token_urlsafe(60),
        CACHE_URL="redis://127.0.0.1:6379/1",
    )
    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


def test_embedded_default_without_database_url_or_broker_is_sqlite_and_in_process():
    code = (
        "import django, os; django.setup(); from django.conf import settings; "
        "print(settings.DATABASES['default']['ENGINE'], settings.CELERY_TASK_ALWAYS_EAGER)"
    )
    base = {
        k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE")
    }
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**base, "DJANGO_SETTINGS_MODULE": "config.settings.local"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stdout.split() == ["django.db.backends.sqlite3", "True"], result.stderr


def test_the_embedded_default_migrates_and_loads_the_demo(tmp_path):
    """`make run`'s steps before serving, on a SQLite file with tasks in-process: every
    migration applies (an index PostgreSQL alone can build is left out there) and the demo
    loads with its logins."""
    embedded = {"DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "CELERY_BROKER_URL": ""}
    migrated = manage("migrate", "--noinput", **embedded)
    assert migrated.returncode == 0, migrated.stderr[-3000:]
    demo = manage("load_demo", **embedded)
    assert demo.returncode == 0, demo.stderr[-3000:]
    assert "annotator1" in demo.stdout
    assert manage("makemigrations", "--check", "--dry-run", **embedded).returncode == 0


def test_a_job_staleness_shorter_than_three_heartbeats_is_refused():
    result = manage("check", MASHOV_JOB_HEARTBEAT_SECONDS="60", MASHOV_JOB_STALE_SECONDS="120")
    assert result.returncode != 0
    assert "MASHOV_JOB_STALE_SECONDS must be at least 3" in result.stderr
    assert manage("check", MASHOV_JOB_HEARTBEAT_SECONDS="40", MASHOV_JOB_STALE_SECONDS="120").returncode == 0


def settings_of(code: str, **env) -> list[str]:
    """What `code` prints once Django is set up with the test settings and `env`."""
    dropped = ("DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE", "CELERY_JOBS_QUEUE", "DATABASE_REPLICA_URL")
    base = {k: v for k, v in os.environ.items() if k not in dropped}
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); " + code],
        cwd=ROOT,
        env={**base, "DJANGO_SETTINGS_MODULE": "config.settings.test", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_jobs_go_to_their_own_queue_when_one_is_named():
    code = (
        "from config.celery import app; route = app.amqp.router.route; "
        "print(*(route({}, name)['queue'].name for name in ('annotation.tasks.run_job', "
        "'annotation.tasks.compute_consensus', 'annotation.tasks.request_aggregation', 'annotation.tasks.sweep_jobs')))"
    )
    assert settings_of(code, CELERY_QUEUE="rounds") == ["rounds"] * 4
    assert settings_of(code, CELERY_QUEUE="rounds", CELERY_JOBS_QUEUE="jobs") == ["jobs", "rounds", "rounds", "rounds"]


def test_a_replica_url_adds_the_replica_alias_and_only_then():
    code = "from django.conf import settings; print(sorted(settings.DATABASES))"
    assert settings_of(code) == ["['default']"]
    replica = settings_of(code, DATABASE_REPLICA_URL="postgres://reader@replica:5432/mashov")
    assert replica == ["['default',", "'replica']"]


def test_production_allows_loopback_webhooks_only_on_a_plain_http_run():
    """Behind TLS a webhook may not reach services listening on the host's loopback, unless
    the operator says so; a local plain-HTTP run (a receiver beside it) may."""
    code = (
        "import django; django.setup(); from django.conf import settings; print(settings.MASHOV_WEBHOOK_ALLOW_LOOPBACK)"
    )
    base = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "PLAIN_HTTP", "SECRET_KEY")}
    base = {k: v for k, v in base.items() if k != "MASHOV_WEBHOOK_ALLOW_LOOPBACK"}
    production = {"DJANGO_SETTINGS_MODULE": "config.settings.production", "SECRET_KEY": secrets.token_urlsafe(60)}
    for extra, expected in (
        ({}, "False"),
        ({"PLAIN_HTTP": "1"}, "True"),
        ({"MASHOV_WEBHOOK_ALLOW_LOOPBACK": "1"}, "True"),
        ({"PLAIN_HTTP": "1", "MASHOV_WEBHOOK_ALLOW_LOOPBACK": "0"}, "False"),
    ):
        result = subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            env={**base, **production, **extra},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.stdout.split()[-1:] == [expected], (extra, result.stderr)
