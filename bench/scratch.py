"""Helpers the benchmark scripts share: their scratch PostgreSQL databases and the servers
they start on 127.0.0.1."""

import io
import json
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# A `manage.py shell -c` script: an nli_relabel project `BENCH_SLUG` of BENCH_ITEMS items,
# k-of-n consensus with n = BENCH_VOTES, a supervisor and BENCH_ANNOTATORS annotators who
# sign in with tokens. Unless BENCH_FRESH is set, the project is under way: every item
# already holds 0 to n − 1 votes (evenly spread), each from a different annotator.
# Prints {"supervisor": token, "annotators": [[user id, token], ...]}.
NLI_PROJECT_SETUP = """
import json, os, random
from datetime import timedelta
from django.contrib.auth import get_user_model
from django.utils import timezone
from rest_framework.authtoken.models import Token
from annotation.models import Annotation, Assignment, Item, Membership, Project
slug, fresh = os.environ["BENCH_SLUG"], os.environ.get("BENCH_FRESH") == "1"
n_items, n_annotators, votes = (int(os.environ[name]) for name in ("BENCH_ITEMS", "BENCH_ANNOTATORS", "BENCH_VOTES"))
User = get_user_model()
sup = User.objects.create_user("bench-sup")  # token auth only: no password to hash
project = Project.objects.create(slug=slug, name=slug, kind="nli_relabel", language="he",
    settings={"consensus_k": votes // 2 + 1, "consensus_n": votes, "revision_rounds": 0, "claim_ttl": 1800}, created_by=sup)
Membership.objects.create(project=project, user=sup, role="supervisor", status="active")
Item.objects.bulk_create(
    (Item(project=project, external_id=f"i{i}", payload={"premise": f"הנחה מספר {i}", "hypothesis": f"השערה {i}"},
          group=f"g{i // 3}", position=i) for i in range(n_items)), batch_size=5000)
annotators = []
for a in range(n_annotators):
    user = User.objects.create_user(f"bench-ann{a}")
    Membership.objects.create(project=project, user=user, role="annotator", status="active")
    annotators.append((user, Token.objects.create(user=user).key))
rng, earlier = random.Random(7), timezone.now() - timedelta(days=1)
claims = [
    Assignment(project=project, item=item, annotator=annotator, round=item.round, status="submitted",
               claimed_at=earlier, expires_at=earlier, submitted_at=earlier)
    for item in ([] if fresh else Item.objects.filter(project=project).order_by("id"))
    for annotator in rng.sample([user for user, _ in annotators], min(n_annotators, rng.randrange(votes)))
]
claims = Assignment.objects.bulk_create(claims, batch_size=5000)
Annotation.objects.bulk_create(
    (Annotation(assignment=claim, item_id=claim.item_id, annotator_id=claim.annotator_id, round=claim.round,
                value={"label": rng.choice(["entailment", "neutral", "contradiction"])}, created_at=earlier)
     for claim in claims), batch_size=5000)
print(json.dumps({"supervisor": Token.objects.create(user=sup).key, "annotators": [[user.pk, token] for user, token in annotators]}))
"""


def create_nli_project(env: dict, *, slug: str, items: int, annotators: int, votes: int, fresh: bool) -> dict:
    """Create NLI_PROJECT_SETUP's project on env's database; its accounts."""
    parameters = {
        "BENCH_SLUG": slug,
        "BENCH_ITEMS": str(items),
        "BENCH_ANNOTATORS": str(annotators),
        "BENCH_VOTES": str(votes),
        "BENCH_FRESH": "1" if fresh else "",
    }
    output = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", NLI_PROJECT_SETUP],
        cwd=ROOT,
        env={**env, **parameters},
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(output.strip().splitlines()[-1])


def admin_sql(server: str, sql: str) -> None:
    """Run `sql` on the server's maintenance database (CREATE / DROP DATABASE)."""
    import psycopg2

    conn = psycopg2.connect(f"{server}/postgres")
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(sql)
    conn.close()


def copy_rows(cursor, table, columns, rows):
    """Bulk-load tab-separated text rows with COPY (far faster than INSERTs at 100K rows)."""
    buffer = io.StringIO()
    for row in rows:
        buffer.write("\t".join(row))
        buffer.write("\n")
    buffer.seek(0)
    cursor.copy_expert(f"COPY {table} ({', '.join(columns)}) FROM STDIN", buffer)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def production_env(**extra) -> dict:
    """The environment of a production process serving 127.0.0.1 over plain HTTP."""
    import os

    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "SECRET_KEY": secrets.token_urlsafe(60),
        "PLAIN_HTTP": "1",
        "SECURE_HSTS_SECONDS": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
        "LOG_LEVEL": "ERROR",
        **extra,
    }


def wait_until_serving(base: str, attempts: int = 150) -> None:
    """Until `base`/healthz/ answers 200 (gunicorn has booted its workers)."""
    import requests

    for _ in range(attempts):
        try:
            if requests.get(f"{base}/healthz/", timeout=1).status_code == 200:
                return
        except requests.RequestException:
            time.sleep(0.2)
    raise RuntimeError(f"{base} did not answer")


# The simulated annotators (bench/annotate.py, bench/scale.py --loop): each a thread with a
# session of its own, requesting in a loop with no pause until its deadline.

LABELS = ("entailment", "neutral", "contradiction")


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, int(round(q / 100 * (len(ordered) - 1)))))
    return ordered[index]


def annotator_loop(base: str, token: str, deadline: float, mode: str, out: list, errors: list, slug: str) -> None:
    """One annotator until `deadline`: `mode` "floor", "token" or "write" requests one of the
    reference views (bench/reference_views.py); "annotate" does next → submit on project
    `slug`. Appends (kind, seconds) to `out`, failures to `errors`."""
    import random

    import requests

    session = requests.Session()
    session.headers["Authorization"] = f"Token {token}"
    while time.monotonic() < deadline:
        started = time.perf_counter()
        try:
            if mode == "floor":
                response = session.get(f"{base}/healthz/", timeout=30)
                ok = response.status_code == 200
            elif mode == "token":
                response = session.get(f"{base}/bench/token/", timeout=30)
                ok = response.status_code == 200
            elif mode == "write":
                response = session.post(
                    f"{base}/bench/write/", json={"value": {"label": random.choice(LABELS)}}, timeout=30
                )
                ok = response.status_code == 201
            else:
                response = session.get(f"{base}/api/projects/{slug}/next/", timeout=30)
                if response.status_code == 204:
                    out.append(("next-empty", time.perf_counter() - started))
                    time.sleep(0.05)
                    continue
                ok = response.status_code == 200
                if ok:
                    out.append(("next", time.perf_counter() - started))
                    assignment = response.json()["assignment"]
                    started = time.perf_counter()
                    response = session.post(
                        f"{base}/api/assignments/{assignment}/submit/",
                        json={"value": {"label": random.choice(LABELS)}},
                        timeout=30,
                    )
                    ok = response.status_code == 201
                    mode_name = "submit"
                else:
                    mode_name = "next"
        except requests.RequestException as exc:
            errors.append(repr(exc))
            continue
        if not ok:
            errors.append(f"{response.status_code} {response.text[:200]}")
        else:
            out.append((mode_name if mode == "annotate" else mode, time.perf_counter() - started))


def client_process(base: str, tokens: list[str], seconds: float, mode: str, slug: str):
    import threading

    out: list = []
    errors: list = []
    deadline = time.monotonic() + seconds
    threads = [
        threading.Thread(target=annotator_loop, args=(base, token, deadline, mode, out, errors, slug))
        for token in tokens
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return out, errors


def run_clients(
    processes: int, base: str, tokens: list[str], seconds: float, mode: str, slug: str = "bench"
) -> tuple[list, list]:
    """Threads spread over a few processes, so the client's GIL is not the bottleneck."""
    import multiprocessing

    chunks = [tokens[i::processes] for i in range(processes)]
    with multiprocessing.Pool(processes) as pool:
        results = pool.starmap(client_process, [(base, chunk, seconds, mode, slug) for chunk in chunks if chunk])
    samples = [sample for part, _ in results for sample in part]
    errors = [error for _, part in results for error in part]
    return samples, errors


def summarise(name: str, latencies: list[float], seconds: float) -> dict:
    import statistics

    return {
        "what": name,
        "requests": len(latencies),
        "per_s": len(latencies) / seconds,
        "p50_ms": 1000 * percentile(latencies, 50),
        "p95_ms": 1000 * percentile(latencies, 95),
        "p99_ms": 1000 * percentile(latencies, 99),
        "mean_ms": 1000 * statistics.fmean(latencies) if latencies else float("nan"),
    }


def process_cpu(pid: int | str) -> tuple[str, int, float] | None:
    """(name, process group, CPU seconds: user + system, its own and that of its finished
    children) of a process, from /proc; None when it is gone. A backend or worker that
    exits moves its CPU to its parent (postmaster, gunicorn arbiter, Celery's main process)
    instead of vanishing from a sum over a process group."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            name, rest = handle.read().rsplit(")", 1)
    except OSError:
        return None
    fields = rest.split()
    return name.split("(", 1)[-1], int(fields[2]), sum(int(value) for value in fields[11:15]) / CLOCK_TICKS


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(groups: dict[str, int], *, postgres: bool = True) -> dict[str, float]:
    """CPU time used so far by each process group of `groups` (part name → group id: a server
    started in a session of its own), by every PostgreSQL process when `postgres`, and by
    this script's finished children (the client pools), read from /proc: where the cores
    went in a phase. Empty where /proc is missing."""
    import resource

    used = {**dict.fromkeys(groups, 0.0), **({"postgres": 0.0} if postgres else {})}
    try:
        pids = [pid for pid in os.listdir("/proc") if pid.isdigit()]
    except FileNotFoundError:
        return {}
    part_of = {group: part for part, group in groups.items()}
    for pid in pids:
        found = process_cpu(pid)
        if found is None:
            continue
        name, group, seconds = found
        if group in part_of:
            used[part_of[group]] += seconds
        elif postgres and name == "postgres":
            used["postgres"] += seconds
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    used["client"] = children.ru_utime + children.ru_stime
    return used


def start_gunicorn(env: dict, port: int, workers: int, log_level: str = "error") -> subprocess.Popen:
    """gunicorn serving the project on 127.0.0.1:`port`, in a session of its own (its
    process group id is its pid: cpu_seconds sums its workers by it)."""
    return subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind", f"127.0.0.1:{port}",
         "--workers", str(workers), "--log-level", log_level],
        cwd=ROOT, env=env, start_new_session=True,
    )  # fmt: skip


# The production configuration the image runs (`gunicorn -c config/gunicorn.py`: the app
# preloaded in the master, RecyclingWorker, the access log), with what the command line
# gives overriding the file: the address (the file's 0.0.0.0:8000 would open the bench to
# the network and could collide with another server) and the number of workers.
PRODUCTION_GUNICORN_CONFIG = "config/gunicorn.py"


def production_gunicorn_arguments(port: int, workers: int) -> list[str]:
    """gunicorn's arguments (after `python -m gunicorn`) serving as the image does, on
    127.0.0.1:`port` with `workers` workers."""
    return ["-c", PRODUCTION_GUNICORN_CONFIG, "--bind", f"127.0.0.1:{port}", "--workers", str(workers)]


def start_production_gunicorn(env: dict, port: int, workers: int, log_path: Path) -> subprocess.Popen:
    """gunicorn as the image runs it (production_gunicorn_arguments), in a session of its own
    (cpu_seconds sums its workers by its pid), its log and access log in `log_path`."""
    with open(log_path, "w") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "gunicorn", *production_gunicorn_arguments(port, workers)],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip


# config/web_worker.py's line when a worker ends itself (the master forks a fresh one).
WEB_WORKER_REPLACED = "replaced by a fresh one"


def web_workers_replaced(log_path: Path, offset: int) -> int:
    """How many web workers ended themselves, idle with the master's pages copied, since
    `offset` of gunicorn's log."""
    with open(log_path, errors="replace") as log:
        log.seek(offset)
        return log.read().count(WEB_WORKER_REPLACED)


def start_celery(env: dict, arguments: list[str], log_path: Path) -> subprocess.Popen:
    """`celery -A …` (a worker or beat) in a session of its own, logging to `log_path`."""
    with open(log_path, "w") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "celery", *arguments],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip


def stop_process(process: subprocess.Popen, timeout: float = 30) -> None:
    """SIGTERM, then SIGKILL if it has not exited within `timeout` seconds."""
    import signal

    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
