"""Benchmark: what Mashov needs at rest — memory of the running stack, and disk.

The product brief's comparison: doccano needs 1.2 GB at rest. This starts the processes of
docker-compose.yml's stack with its defaults (gunicorn with one worker, a Celery worker with
one process per core, Celery beat) on a migrated scratch database, lets them idle, and
prints each one's resident memory: RSS, and PSS, which splits pages shared between processes
(the forked workers share most of their code) so that the total is what the stack really
occupies. PostgreSQL and Redis are the machine's shared servers; their PSS is printed
apart. Then it installs requirements.txt into a fresh virtualenv and prints its size beside
the project's own files. A script, not a test:

    python bench/footprint.py [--idle 10]

It creates (and drops) the scratch database `mashov_bench_footprint` on --server, serves
on a free port of 127.0.0.1 only, and removes its virtualenv at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scratch import admin_sql, free_port, production_env, wait_until_serving  # noqa: E402 (bench/ is on sys.path when run as a script)


def memory_kib(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process, from /proc/<pid>/smaps_rollup."""
    rss = pss = 0
    with open(f"/proc/{pid}/smaps_rollup") as handle:
        for line in handle:
            if line.startswith("Rss:"):
                rss = int(line.split()[1])
            elif line.startswith("Pss:"):
                pss = int(line.split()[1])
    return rss, pss


def processes(match) -> list[int]:
    """Pids whose (process group, command line) satisfy `match`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                command = handle.read().replace(b"\0", b" ").decode(errors="replace")
            if match(os.getpgid(int(pid)), command):
                found.append(int(pid))
        except (OSError, ProcessLookupError):
            continue
    return found


def group_memory(pids: list[int]) -> tuple[int, float, float]:
    """(processes, RSS MiB summed, PSS MiB summed)."""
    rss = pss = 0
    for pid in pids:
        try:
            one_rss, one_pss = memory_kib(pid)
        except OSError:
            continue
        rss += one_rss
        pss += one_pss
    return len(pids), rss / 1024, pss / 1024


def tree_size_mib(path: Path, skip: tuple[str, ...] = ()) -> float:
    total = 0
    for folder, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if d not in skip]
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                pass
    return total / 2**20


class SkipDisk(Exception):
    pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle", type=float, default=10, help="seconds the stack idles before it is measured")
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--database", default="mashov_bench_footprint")
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/13")
    parser.add_argument("--web-workers", type=int, default=5, help="gunicorn workers (WEB_CONCURRENCY)")
    parser.add_argument("--skip-disk", action="store_true", help="skip the fresh virtualenv's install")
    args = parser.parse_args()

    admin_sql(args.server, f"DROP DATABASE IF EXISTS {args.database}")
    admin_sql(args.server, f"CREATE DATABASE {args.database}")
    scratch = Path(tempfile.mkdtemp(prefix="mashov-footprint-"))
    port = free_port()
    env = production_env(
        DATABASE_URL=f"{args.server}/{args.database}",
        CELERY_BROKER_URL=args.broker,
        CELERY_QUEUE="mashov-bench-footprint",
        GUNICORN_BIND=f"127.0.0.1:{port}",
        GUNICORN_ACCESS_LOG="",
        WEB_CONCURRENCY=str(args.web_workers),
    )
    python = sys.executable
    commands = {
        f"web (gunicorn, {args.web_workers} workers)": [python, "-m", "gunicorn", "-c", "config/gunicorn.py"],
        "worker (celery, 1 process per core)": [python, "-m", "celery", "-A", "config", "worker", "-l", "error"],
        "beat (celery)": [
            python,
            "-m",
            "celery",
            "-A",
            "config.beat",
            "beat",
            "-l",
            "error",
            "--schedule",
            str(scratch / "beat-schedule"),
        ],
    }
    started: dict[str, subprocess.Popen] = {}
    rows = []
    try:
        subprocess.run([python, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
        for name, command in commands.items():
            started[name] = subprocess.Popen(
                command, cwd=ROOT, env=env, start_new_session=True, stdout=subprocess.DEVNULL
            )
        wait_until_serving(f"http://127.0.0.1:{port}")
        time.sleep(args.idle)
        for name, process in started.items():
            assert process.poll() is None, f"{name} exited"
            rows.append((name, *group_memory(processes(lambda group, _command, p=process: group == p.pid))))
        services = [
            (
                "PostgreSQL (the machine's server, all its processes)",
                processes(lambda _g, command: command.startswith("postgres")),
            ),
            ("Redis (the machine's server)", processes(lambda _g, command: command.startswith("redis-server"))),
        ]
        service_rows = [(name, *group_memory(pids)) for name, pids in services]
    finally:
        for process in started.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in started.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        admin_sql(args.server, f"DROP DATABASE IF EXISTS {args.database}")
        # The worker declared its queue on the broker; nothing was sent to it.
        import redis

        broker = redis.Redis.from_url(args.broker)
        broker.delete(env["CELERY_QUEUE"], f"_kombu.binding.{env['CELERY_QUEUE']}")
        broker.close()

    venv_mib = None
    try:
        if args.skip_disk:
            raise SkipDisk
        venv = scratch / "venv"
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [
                str(venv / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "-r",
                str(ROOT / "requirements.txt"),
            ],
            check=True,
        )
        venv_mib = tree_size_mib(venv)
    except SkipDisk:
        pass
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    project_mib = tree_size_mib(ROOT, skip=(".git", ".venv", "node_modules", "__pycache__", "staticfiles"))

    print(f"\nAt rest after {args.idle:.0f} s idle, {os.cpu_count()} cores (MiB; PSS counts shared pages once)")
    print(f"{'process group':<54}{'processes':>10}{'RSS':>8}{'PSS':>8}")
    for name, count, rss, pss in rows:
        print(f"{name:<54}{count:>10}{rss:>8.0f}{pss:>8.0f}")
    print(
        f"{'Mashov in all':<54}{sum(r[1] for r in rows):>10}{sum(r[2] for r in rows):>8.0f}{sum(r[3] for r in rows):>8.0f}"
    )
    for name, count, rss, pss in service_rows:
        print(f"{name:<54}{count:>10}{rss:>8.0f}{pss:>8.0f}")
    if venv_mib is not None:
      print(
        f"\nDisk: requirements.txt installed in a fresh virtualenv {venv_mib:.0f} MiB; the project's files {project_mib:.1f} MiB"
    )
    print("reference: doccano, 1.2 GB at rest (the product brief)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
