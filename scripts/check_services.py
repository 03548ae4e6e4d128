#!/usr/bin/env python
"""Decide which services `make test` runs the suite against, and say so plainly.

Tries PostgreSQL (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/mashov) and
Redis (CELERY_BROKER_URL, default redis://127.0.0.1:6379/15) with short timeouts.

Output contract (the Makefile evals stdout):
  stdout  shell lines only: `export NAME=value` for a service to use, `unset NAME` for one
          to leave out, so pytest falls back to the embedded default for it.
  stderr  messages for the person at the terminal.
  exit    0, or 1 when MASHOV_REQUIRE_SERVICES=1 and a service is unreachable (CI mode).

Only the server is checked, not the database named in DATABASE_URL: pytest-django creates
its own test database (test_<name>), so we connect to the `postgres` maintenance database.
"""

from __future__ import annotations

import os
import shlex
import sys
from urllib.parse import urlsplit, urlunsplit

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/mashov"
DEFAULT_BROKER_URL = "redis://127.0.0.1:6379/15"
TIMEOUT_SECONDS = 3


def say(message: str) -> None:
    print(message, file=sys.stderr)


def where(url: str, default_port: int) -> str:
    """host:port of a URL, without the credentials, for messages."""
    parts = urlsplit(url)
    return f"{parts.hostname or '127.0.0.1'}:{parts.port or default_port}"


def postgres_problem(url: str) -> str | None:
    """None when the PostgreSQL server at `url` accepts a connection, else the reason."""
    try:
        import psycopg2
    except ImportError:
        return "psycopg2 is not installed in this virtualenv"
    parts = urlsplit(url)
    if parts.scheme not in {"postgres", "postgresql", "pgsql"}:
        return f"DATABASE_URL is not a PostgreSQL URL (scheme {parts.scheme!r})"
    last_error = ""
    # `postgres` exists on every normal server; template1 covers a server where it was dropped.
    for maintenance_db in ("postgres", "template1"):
        dsn = urlunsplit((parts.scheme, parts.netloc, "/" + maintenance_db, parts.query, ""))
        try:
            connection = psycopg2.connect(dsn, connect_timeout=TIMEOUT_SECONDS)
        except psycopg2.Error as error:
            last_error = " ".join(str(error).split())
            if f'database "{maintenance_db}" does not exist' in last_error:
                continue
            return last_error
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
        finally:
            connection.close()
        return None
    return last_error


def redis_problem(url: str) -> str | None:
    """None when the Redis server at `url` answers PING, else the reason."""
    try:
        import redis
    except ImportError:
        return "the redis package is not installed in this virtualenv"
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=TIMEOUT_SECONDS, socket_timeout=TIMEOUT_SECONDS)
        client.ping()
        client.close()
    except (redis.RedisError, ValueError, OSError) as error:
        return " ".join(str(error).split()) or type(error).__name__
    return None


def main() -> int:
    database_url = os.environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL
    broker_url = os.environ.get("CELERY_BROKER_URL") or DEFAULT_BROKER_URL
    required = os.environ.get("MASHOV_REQUIRE_SERVICES", "") == "1"

    pg_where = where(database_url, 5432)
    redis_where = where(broker_url, 6379)
    pg_problem = postgres_problem(database_url)
    redis_down = redis_problem(broker_url)

    problems = []
    if pg_problem:
        # A FATAL error comes from the server itself (unknown role, bad password): say that
        # rather than "unreachable", which would send the reader looking for a dead server.
        state = "answers but refused the connection" if "FATAL" in pg_problem else "is unreachable"
        problems.append(f"PostgreSQL at {pg_where} {state} ({pg_problem})")
    if redis_down:
        problems.append(f"Redis at {redis_where} is unreachable ({redis_down})")

    if problems and required:
        for problem in problems:
            say(f"check_services: {problem}.")
        say("check_services: MASHOV_REQUIRE_SERVICES=1, so a missing service is a failure.")
        return 1

    # A real worker process must share the suite's database. The SQLite test database is
    # in memory, which another process cannot see, so without PostgreSQL the broker is
    # left out too and tasks run in-process.
    use_postgres = pg_problem is None
    use_redis = redis_down is None and use_postgres

    if use_postgres and use_redis:
        say(
            f"check_services: PostgreSQL at {pg_where} and Redis at {redis_where} answer: "
            "running the suite on them with a real Celery worker."
        )
    elif use_postgres:
        say(
            f"check_services: {problems[0]}: running the suite on PostgreSQL at {pg_where} "
            "with in-process tasks; tests that need a real worker are skipped."
        )
    else:
        also = f"; {problems[1]}" if len(problems) > 1 else ""
        say(
            f"check_services: {problems[0]}{also}: running the suite on the embedded default "
            "(SQLite, in-process tasks); concurrency tests that need PostgreSQL and tests "
            "that need a real worker are skipped."
        )

    print(f"export DATABASE_URL={shlex.quote(database_url)}" if use_postgres else "unset DATABASE_URL")
    print(f"export CELERY_BROKER_URL={shlex.quote(broker_url)}" if use_redis else "unset CELERY_BROKER_URL")
    return 0


if __name__ == "__main__":
    sys.exit(main())
