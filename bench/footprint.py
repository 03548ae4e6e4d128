"""Benchmark: what Mashov needs at rest — memory of the running stack, and disk.

The product brief's comparison: doccano needs 1.2 GB at rest. This starts the services of
docker-compose.yml that run the Mashov image, with their commands from that file (gunicorn
with config/gunicorn.py and --web-workers workers, the rounds' and the jobs' Celery workers,
Celery beat) on a migrated scratch database, lets them idle, and prints each one's resident
memory: RSS, and PSS, which splits pages shared between processes (the forked workers share
most of their code) so that the total is what the stack really occupies. PostgreSQL and
Redis are the machine's shared servers; their PSS is printed apart.

Then it generates an nli_relabel project (--walk-items items, 3 votes each), requests every
URL of the URLconf that takes no argument or the project's slug as its supervisor,
--walk-rounds times over, and prints what each web worker kept: its private memory (USS)
before, after the first walk, after the last, and after --rest seconds without a request
(config/web_worker.py replaces a worker left idle with the master's pages copied), with the
stack's memory after the walk and after the rest. Last, unless --skip-disk, it installs
requirements.txt into a fresh virtualenv and prints its size beside the project's own files.
A script, not a test:

    python bench/footprint.py [--idle 10] [--web-workers 5] [--walk-items 2000] [--rest 30] [--skip-disk]

It creates (and drops) the scratch database `mashov_bench_footprint` on --server, collects
the static files into the project's staticfiles/ (as the image's build does), serves on a
free port of 127.0.0.1 only, and removes its virtualenv at the end.
"""

from __future__ import annotations

import argparse
import json
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

from scratch import admin_sql, create_nli_project, free_port, production_env, wait_until_serving  # noqa: E402 (bench/ is on sys.path when run as a script)

from config.web_worker import private_kib  # noqa: E402


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


def compose_commands(scratch: Path) -> dict[str, list[str]]:
    """docker-compose.yml's commands of the services that run the Mashov image, as run here:
    one web (one replica's memory), the bench's queues, errors-only logs; not the one-shot
    migrate, which has exited before the stack is at rest."""
    import yaml

    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    queues = {"mashov": "mashov-bench-footprint", "mashov-jobs": "mashov-bench-footprint-jobs"}
    commands = {}
    for name, service in services.items():
        if "build" not in service or service.get("restart") == "no":  # PostgreSQL, Redis: the machine's own
            continue
        command = list(service["command"])
        for option, value in (("-l", lambda _v: "error"), ("--schedule", lambda _v: str(scratch / "beat-schedule"))):
            if option in command:
                at = command.index(option) + 1
                command[at] = value(command[at])
        if "-Q" in command:
            at = command.index("-Q") + 1
            command[at] = ",".join(queues[queue] for queue in command[at].split(","))
        commands[name] = [sys.executable, "-m", *command]
    return commands


# A `manage.py shell -c` script: every URL of the project's URLconf that takes no argument or
# only the project's slug, and a session of the project's supervisor.
SUPERVISOR_URLS = """
import json, os
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import NoReverseMatch, URLResolver, get_resolver, reverse
def names(resolver, namespace=""):
    for pattern in resolver.url_patterns:
        if isinstance(pattern, URLResolver):
            yield from names(pattern, f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace)
        elif pattern.name:
            yield namespace + pattern.name
urls = set()
for name in set(names(get_resolver())) - {"logout"}:
    for kwargs in ({}, {"slug": os.environ["BENCH_SLUG"]}):
        try:
            urls.add(reverse(name, kwargs=kwargs))
        except NoReverseMatch:
            pass
client = Client()
client.force_login(get_user_model().objects.get(username="bench-sup"))
print(json.dumps({"session": client.cookies[settings.SESSION_COOKIE_NAME].value, "urls": sorted(urls)}))
"""


def web_workers_memory(master: int) -> dict[int, int]:
    """The private memory (KiB) of each of the web master's workers, by pid."""
    workers = sorted(set(processes(lambda group, _command: group == master)) - {master})
    return {pid: private_kib(pid) for pid in workers}


def walk_supervisor_pages(env: dict, base: str, master: int, items: int, rounds: int) -> dict:
    """Generate a project, request every page of it as its supervisor `rounds` times, and
    return the web workers' private memory (KiB, by pid) before, after the first walk and
    after the last."""
    import requests

    slug = "footprint"
    create_nli_project(env, slug=slug, items=items, annotators=10, votes=3, fresh=False)
    output = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", SUPERVISOR_URLS],
        cwd=ROOT,
        env={**env, "BENCH_SLUG": slug},
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    found = json.loads(output.strip().splitlines()[-1])
    session = requests.Session()
    session.cookies.set("sessionid", found["session"])
    memory = {"before": web_workers_memory(master)}
    statuses: dict[int, list[str]] = {}
    for walk in range(rounds):
        for url in found["urls"]:
            status = session.get(base + url, timeout=600).status_code
            if walk == 0:
                statuses.setdefault(status, []).append(url)
        time.sleep(1)
        memory["after the first walk" if walk == 0 else "after the last walk"] = web_workers_memory(master)
    return {"memory": memory, "statuses": statuses, "items": items, "rounds": rounds}


def installed_size_mib(venv: Path) -> float:
    """requirements.txt installed into a fresh virtualenv at `venv`: its size."""
    python = sys.executable
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
    return tree_size_mib(venv)


def print_rows(rows, service_rows) -> None:
    print(f"{'process group (docker-compose.yml service)':<54}{'processes':>10}{'RSS':>8}{'PSS':>8}")
    for name, count, rss, pss in rows:
        print(f"{name:<54}{count:>10}{rss:>8.0f}{pss:>8.0f}")
    total = (sum(r[1] for r in rows), sum(r[2] for r in rows), sum(r[3] for r in rows))
    print(f"{'Mashov in all':<54}{total[0]:>10}{total[1]:>8.0f}{total[2]:>8.0f}")
    for name, count, rss, pss in service_rows:
        print(f"{name:<54}{count:>10}{rss:>8.0f}{pss:>8.0f}")


def print_walk(walk: dict, walked, rested, service_rows) -> None:
    statuses = walk["statuses"]
    print(
        f"\nEvery supervisor page of a {walk['items']:,}-item project, {walk['rounds']} times over:"
        f" {len(sum(statuses.values(), []))} URLs,"
        + ", ".join(f" {len(urls)} answered {status}" for status, urls in sorted(statuses.items()))
    )
    for status, urls in sorted(statuses.items()):
        if status >= 500:
            print(f"  {status}: {' '.join(urls)}")
    print("web workers: private memory (USS), MiB, worker by worker (pid)")
    for stage, workers in walk["memory"].items():
        print(f"  {stage:<28}" + "  ".join(f"{kib / 1024:5.1f} ({pid})" for pid, kib in workers.items()))
    before = walk["memory"]["before"]
    kept = [
        (kib - before[pid]) / 1024
        for workers in walk["memory"].values()
        for pid, kib in workers.items()
        if pid in before
    ]
    print(f"most a worker kept: {max(kept):.1f} MiB")
    print("\nAfter the walk")
    print_rows(walked, service_rows)
    if rested:
        print(f"\n{list(walk['memory'])[-1].capitalize()}")
        print_rows(rested, service_rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle", type=float, default=10, help="seconds the stack idles before it is measured")
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--database", default="mashov_bench_footprint")
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/13")
    parser.add_argument("--web-workers", type=int, default=5, help="gunicorn workers (WEB_CONCURRENCY)")
    parser.add_argument(
        "--walk-items", type=int, default=2000, help="items of the project whose pages are walked (0: no walk)"
    )
    parser.add_argument("--walk-rounds", type=int, default=3, help="times every supervisor page is requested")
    parser.add_argument(
        "--rest",
        type=float,
        default=30,
        help="seconds without a request after the walk before the stack is measured again",
    )
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
        CELERY_JOBS_QUEUE="mashov-bench-footprint-jobs",
        GUNICORN_BIND=f"127.0.0.1:{port}",
        GUNICORN_ACCESS_LOG="",
        WEB_CONCURRENCY=str(args.web_workers),
    )
    commands = compose_commands(scratch)
    started: dict[str, subprocess.Popen] = {}
    rows, walked, rested, walk = [], [], [], None
    try:
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
        # As the image does at build: the pages' static files and whitenoise's manifest.
        subprocess.run(
            [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"], cwd=ROOT, env=env, check=True
        )
        for name, command in commands.items():
            started[name] = subprocess.Popen(
                command, cwd=ROOT, env=env, start_new_session=True, stdout=subprocess.DEVNULL
            )
        wait_until_serving(f"http://127.0.0.1:{port}")
        time.sleep(args.idle)
        for name, process in started.items():
            assert process.poll() is None, f"{name} exited"
            rows.append((name, *group_memory(processes(lambda group, _command, p=process: group == p.pid))))
        if args.walk_items:
            base = f"http://127.0.0.1:{port}"
            walk = walk_supervisor_pages(env, base, started["web"].pid, args.walk_items, args.walk_rounds)
            for name, process in started.items():
                walked.append((name, *group_memory(processes(lambda group, _command, p=process: group == p.pid))))
            if args.rest:
                time.sleep(args.rest)
                walk["memory"][f"after {args.rest:.0f} s at rest"] = web_workers_memory(started["web"].pid)
                for name, process in started.items():
                    rested.append((name, *group_memory(processes(lambda group, _command, p=process: group == p.pid))))
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
        for queue in (env["CELERY_QUEUE"], env["CELERY_JOBS_QUEUE"]):
            broker.delete(queue, f"_kombu.binding.{queue}")
        broker.close()

    venv_mib = None
    try:
        if not args.skip_disk:
            venv_mib = installed_size_mib(scratch / "venv")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    project_mib = tree_size_mib(ROOT, skip=(".git", ".venv", "node_modules", "__pycache__", "staticfiles"))

    print(f"\nAt rest after {args.idle:.0f} s idle, {os.cpu_count()} cores (MiB; PSS counts shared pages once)")
    print(f"load average {os.getloadavg()[0]:.1f} (PSS does not depend on it)")
    print_rows(rows, service_rows)
    if walk is not None:
        print_walk(walk, walked, rested, service_rows)
    if venv_mib is not None:
        print(f"\nDisk: requirements.txt installed in a fresh virtualenv {venv_mib:.0f} MiB", end="")
        print(f"; the project's files {project_mib:.1f} MiB")
    print("reference: doccano, 1.2 GB at rest (the product brief)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
