"""Which settings each way of starting Mashov loads when DJANGO_SETTINGS_MODULE is not set
(WSGI, ASGI and the Celery app: production, which refuses a weak key; manage.py: local), and
docker-compose.yml's environment passing Django's deployment checks. Each case runs in a
fresh interpreter with a clean environment, as a server would start."""

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent.parent
# Anything here that would choose or loosen the settings is dropped from the child's environment.
DROPPED = (
    "DJANGO_SETTINGS_MODULE",
    "SECRET_KEY",
    "DEBUG",
    "DJANGO_ALLOW_ASYNC_UNSAFE",
    "PLAIN_HTTP",
    "SECURE_HSTS_SECONDS",
)
PRINT_SETTINGS = "from django.conf import settings; print(settings.SETTINGS_MODULE, settings.DEBUG)"
ENTRY_POINTS = {
    "wsgi": "import config.wsgi",
    "asgi": "import config.asgi",
    # The worker and beat import the app as `celery -A config` does; its configuration is
    # read from the Django settings on first use.
    "celery": "from config import celery_app; celery_app.conf.broker_url",
}


def run(args: list[str], **env) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in DROPPED}
    return subprocess.run(args, cwd=ROOT, env={**clean, **env}, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_servers_and_the_celery_app_default_to_production(entry):
    result = run(
        [sys.executable, "-c", f"{ENTRY_POINTS[entry]}; {PRINT_SETTINGS}"], SECRET_KEY=secrets.token_urlsafe(60)
    )
    assert result.stdout.split() == ["config.settings.production", "False"], result.stderr


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_servers_and_the_celery_app_refuse_to_start_without_a_strong_key(entry):
    result = run([sys.executable, "-c", f"{ENTRY_POINTS[entry]}; {PRINT_SETTINGS}"])
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr, result.stderr


def test_manage_py_defaults_to_local():
    result = run([sys.executable, "manage.py", "shell", "-v", "0", "-c", PRINT_SETTINGS])
    assert result.stdout.split() == ["config.settings.local", "True"], result.stderr


def compose_web_environment(**shell) -> dict[str, str]:
    """docker-compose.yml's web environment as `docker compose` interpolates it from `shell`,
    on top of the image's own ENV lines (the Dockerfile)."""
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    image_env = dict(re.findall(r"^\s*(?:ENV\s+)?([A-Z_]+)=(\S+?)\s*\\?$", (ROOT / "Dockerfile").read_text(), re.M))

    def interpolate(value: str) -> str:
        def one(match: re.Match) -> str:
            name, operator, operand = match.groups()
            if shell.get(name):
                return shell[name]
            assert operator != ":?", f"docker compose would refuse to start without {name}"
            return operand or ""

        return re.sub(r"\$\{(\w+)(?:(:-|:\?)([^}]*))?\}", one, str(value))

    web = {key: interpolate(value) for key, value in compose["services"]["web"]["environment"].items()}
    return {"DJANGO_SETTINGS_MODULE": image_env["DJANGO_SETTINGS_MODULE"], **web}


def test_compose_defaults_pass_the_deployment_checks():
    env = compose_web_environment(SECRET_KEY=secrets.token_urlsafe(50))
    assert env["DJANGO_SETTINGS_MODULE"] == "config.settings.production"
    result = run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"], **env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_compose_plain_http_switch_turns_off_the_https_redirect_and_secure_cookies():
    env = compose_web_environment(SECRET_KEY=secrets.token_urlsafe(50), PLAIN_HTTP="1")
    code = "import django; django.setup(); from django.conf import settings as s; print(s.SECURE_SSL_REDIRECT, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE)"
    result = run([sys.executable, "-c", code], **env)
    assert result.stdout.split() == ["False", "False", "False"], result.stderr
    # ... and Django's deployment checks say so.
    check = run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"], **env)
    assert check.returncode != 0
    for warning in ("security.W008", "security.W012", "security.W016"):
        assert warning in check.stderr + check.stdout


def test_compose_defaults_redirect_pages_to_https_but_not_the_health_check():
    """The web service's health check asks http://127.0.0.1:8000/healthz/ from inside the container."""
    env = compose_web_environment(SECRET_KEY=secrets.token_urlsafe(50))
    code = (
        "import django; django.setup(); from django.test import Client; c = Client(HTTP_HOST='127.0.0.1');"
        "print(c.get('/healthz/').status_code, c.get('/login/').status_code, c.get('/login/')['Location'])"
    )
    result = run([sys.executable, "-c", code], **env)
    assert result.stdout.split() == ["200", "301", "https://127.0.0.1/login/"], result.stderr


# Login throttling counts failures in the default cache: a per-process cache lets every
# gunicorn worker count its own (two workers passed 20 wrong passwords for a limit of 10).
PRINT_CACHE = (
    "import django; django.setup(); from django.conf import settings as s; "
    "print(s.CACHES['default']['BACKEND'], s.CACHES['default'].get('LOCATION', '-'))"
)
PRODUCTION = {"DJANGO_SETTINGS_MODULE": "config.settings.production"}


@pytest.mark.parametrize(
    ("broker", "cache"),
    [
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/1"),
        ("redis://127.0.0.1:6379", "redis://127.0.0.1:6379/1"),
        ("redis://:pw@redis.internal:6380/13?socket_timeout=2", "redis://:pw@redis.internal:6380/14?socket_timeout=2"),
        ("rediss://redis.internal:6379/15", "rediss://redis.internal:6379/14"),
    ],
)
def test_production_without_cache_url_shares_the_brokers_redis_on_another_database(broker, cache):
    env = {**PRODUCTION, "SECRET_KEY": secrets.token_urlsafe(50), "CELERY_BROKER_URL": broker}
    result = run([sys.executable, "-c", PRINT_CACHE], **{**env, "CACHE_URL": ""})
    assert result.stdout.split() == ["django.core.cache.backends.redis.RedisCache", cache], result.stderr


def test_production_cache_url_wins_over_the_broker():
    env = {
        **PRODUCTION,
        "SECRET_KEY": secrets.token_urlsafe(50),
        "CELERY_BROKER_URL": "redis://a:6379/0",
        "CACHE_URL": "redis://b:6379/3",
    }
    result = run([sys.executable, "-c", PRINT_CACHE], **env)
    assert result.stdout.split() == ["django.core.cache.backends.redis.RedisCache", "redis://b:6379/3"], result.stderr


@pytest.mark.parametrize("broker", ["", "amqp://guest@rabbit//"])
def test_production_with_a_per_process_cache_fails_the_deployment_checks(broker):
    env = {**PRODUCTION, "SECRET_KEY": secrets.token_urlsafe(50), "CELERY_BROKER_URL": broker, "CACHE_URL": ""}
    result = run([sys.executable, "manage.py", "check", "--deploy"], **env)
    assert result.returncode != 0
    assert "mashov.E001" in result.stderr and "CACHE_URL" in result.stderr, result.stdout + result.stderr
    # The plain check (no --deploy) stays quiet: development and tests use process memory.
    assert run([sys.executable, "manage.py", "check"], **env).returncode == 0
