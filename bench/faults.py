"""Benchmark: annotating through crashes — worker kill -9, Redis and PostgreSQL restarts.

Scripted annotators loop next → submit on an nli_relabel project under way (k-of-n
consensus, 5 votes per item; every item already holds 0 to 4 votes) and count every submit
the server acknowledged (201 with the annotation's id); a supervisor asks for agreement
recomputes, so background jobs are in flight. Meanwhile, on a
schedule, the Celery worker is killed with SIGKILL and started again, Redis is killed and
started again (empty: like docker-compose.yml's, it keeps nothing), and PostgreSQL is
restarted. When the load and the faults stop and every server is up, the script lets the
system settle (the beat's sweep runs every minute) and then reads the database: every
acknowledged submit stored exactly once, no item with more votes than it needs, every
complete item decided, no job left queued or running. It prints submits acknowledged /
lost / duplicated / over-filled, items decided vs complete, jobs started / done / failed /
stuck and the faults injected, and exits non-zero if anything was lost, duplicated,
over-filled or stuck. A script, not a test:

    python bench/faults.py [--seconds 120] [--annotators 10] [--settle 360]

It starts every server it harms itself, in a temporary folder, on free ports of 127.0.0.1:
a PostgreSQL instance (initdb with the machine's binaries; as the `postgres` user when run
as root), a redis-server, gunicorn with production settings, a Celery worker and Celery
beat. It stops, kills and restarts only those; the folder is removed at the end (--keep
keeps it, with every server's log).
"""

from __future__ import annotations

import argparse
import glob
import os
import pwd
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import psycopg2
import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scratch import copy_rows, create_nli_project, free_port, production_env, wait_until_serving  # noqa: E402 (bench/ is on sys.path when run as a script)

LABELS = ("entailment", "neutral", "contradiction")
SLUG = "faults"
FAULT_KINDS = ("worker", "redis", "postgres")


def as_postgres_user(command: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: as root, run its tools as the `postgres` user."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def postgres_bindir(given: str | None) -> Path:
    if given:
        return Path(given)
    try:
        found = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=True).stdout.strip()
        if (Path(found) / "initdb").exists():
            return Path(found)
    except (OSError, subprocess.CalledProcessError):
        pass
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parent.parent.name))
    if not versions:
        raise SystemExit("no PostgreSQL server binaries found (initdb); pass --pg-bin")
    return Path(versions[-1]).parent


class PrivatePostgres:
    """A PostgreSQL instance of the script's own, in `folder`, on `port` of 127.0.0.1."""

    def __init__(self, bindir: Path, folder: Path, port: int):
        self.bindir, self.data, self.port = bindir, folder / "pg", port
        self.log = folder / "postgres.log"
        self.url = f"postgres://postgres@127.0.0.1:{port}/mashov"

    def _pg_ctl(self, *args: str) -> None:
        subprocess.run(
            as_postgres_user([str(self.bindir / "pg_ctl"), "-D", str(self.data), *args]),
            check=True,
            stdout=subprocess.DEVNULL,
        )

    def create(self) -> None:
        subprocess.run(
            as_postgres_user(
                [
                    str(self.bindir / "initdb"),
                    "-D",
                    str(self.data),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--locale=C.UTF-8",
                    "--no-sync",
                ]
            ),
            check=True,
            stdout=subprocess.DEVNULL,
        )
        self.start()
        subprocess.run(
            as_postgres_user(
                [str(self.bindir / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "mashov"]
            ),
            check=True,
        )

    def start(self) -> None:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.data.parent}"
        self._pg_ctl("start", "-w", "-t", "60", "-l", str(self.log), "-o", options)

    def stop(self, mode: str) -> None:
        self._pg_ctl("stop", "-w", "-m", mode)


class Service:
    """A process group the script started (redis-server, gunicorn, the worker, beat): killed
    and started again on demand, started again if it exits by itself (as docker-compose's
    `restart: unless-stopped` would), and counted when it does."""

    def __init__(self, name: str, command: list[str], env: dict, log: Path):
        self.name, self.command, self.env, self.log = name, command, env, log
        self.process: subprocess.Popen | None = None
        self.down = False  # deliberately, during a fault
        self.unexpected_exits = 0

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                self.command, cwd=ROOT, env=self.env, start_new_session=True, stdout=log, stderr=subprocess.STDOUT
            )
        self.down = False

    def kill(self, sig: int = signal.SIGKILL) -> None:
        self.down = True
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        if self.process is not None:
            # The whole group: a prefork pool child can outlive its parent for a moment.
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def restart_if_exited(self) -> None:
        if not self.down and self.process is not None and self.process.poll() is not None:
            self.unexpected_exits += 1
            self.start()


def wait_for_redis(port: int) -> None:
    import redis

    client = redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=1)
    for _ in range(100):
        try:
            client.ping()
            client.close()
            return
        except redis.RedisError:
            time.sleep(0.1)
    raise RuntimeError("redis-server did not answer")


class Tally:
    """What the clients saw; lists and Counters are appended to from many threads (each
    append is atomic under the GIL)."""

    def __init__(self):
        self.acknowledged: list[tuple[int, int, int, int, str]] = []  # (annotation, assignment, item, annotator, label)
        self.answer_lost = 0  # a retried submit answered "already submitted": stored, its 201 lost in a fault
        self.conflicts = 0  # other 409s (the item was filled by others meanwhile)
        self.errors: Counter = Counter()  # "submit 500", "next connection" …
        self.jobs_requested: list[int] = []


def annotator_loop(base: str, user_id: int, token: str, stop: threading.Event, tally: Tally, retry_for: float) -> None:
    """next → submit until `stop`; a submit whose answer is lost (connection refused or
    reset, 5xx) is sent again until it is answered, as a browser's user would press again."""
    session = requests.Session()
    session.headers["Authorization"] = f"Token {token}"
    rng = random.Random(user_id)
    while not stop.is_set():
        try:
            response = session.get(f"{base}/api/projects/{SLUG}/next/", timeout=30)
        except requests.RequestException:
            tally.errors["next: no answer"] += 1
            time.sleep(0.2)
            continue
        if response.status_code == 204:
            time.sleep(0.2)
            continue
        if response.status_code != 200:
            tally.errors[f"next: {response.status_code}"] += 1
            time.sleep(0.2)
            continue
        body = response.json()
        assignment, item = body["assignment"], body["item"]["id"]
        # Mostly the item's "true" label, so that most items are accepted.
        label = LABELS[item % 3] if rng.random() < 0.8 else rng.choice(LABELS)
        give_up, failed_before = time.monotonic() + retry_for, False
        while time.monotonic() < give_up:
            try:
                response = session.post(
                    f"{base}/api/assignments/{assignment}/submit/", json={"value": {"label": label}}, timeout=30
                )
            except requests.RequestException:
                tally.errors["submit: no answer"] += 1
                failed_before = True
                time.sleep(0.2)
                continue
            if response.status_code >= 500:
                tally.errors[f"submit: {response.status_code}"] += 1
                failed_before = True
                time.sleep(0.2)
                continue
            if response.status_code == 201:
                tally.acknowledged.append((response.json()["id"], assignment, item, user_id, label))
            elif response.status_code == 409 and failed_before:
                tally.answer_lost += 1
            elif response.status_code == 409:
                tally.conflicts += 1
            else:
                tally.errors[f"submit: {response.status_code}"] += 1
            break
        else:
            tally.errors["submit: given up"] += 1


def supervisor_loop(base: str, token: str, stop: threading.Event, every: float, tally: Tally) -> None:
    while not stop.wait(every):
        request_agreement(base, token, tally)


def request_agreement(base: str, token: str, tally: Tally) -> None:
    try:
        response = requests.post(
            f"{base}/api/projects/{SLUG}/agreement/", headers={"Authorization": f"Token {token}"}, timeout=30
        )
    except requests.RequestException:
        tally.errors["agreement: no answer"] += 1
        return
    if response.status_code == 202:
        tally.jobs_requested.append(response.json()["job"])
    else:
        tally.errors[f"agreement: {response.status_code}"] += 1


def scalar(url: str, sql: str) -> int:
    """One figure read on a connection of its own (PostgreSQL may have restarted since the last)."""
    conn = psycopg2.connect(url)
    try:
        with conn.cursor() as cursor:
            cursor.execute(sql)
            return cursor.fetchone()[0]
    finally:
        conn.close()


def annotations_stored(url: str) -> int:
    return scalar(url, "SELECT count(*) FROM annotation_annotation")


def pending(url: str) -> int:
    """Work still to do: complete items without their round's outcome, jobs queued or running."""
    return scalar(
        url,
        "SELECT (SELECT count(*) FROM annotation_item WHERE status = 'complete')"
        " + (SELECT count(*) FROM annotation_job WHERE status IN ('queued', 'running'))",
    )


def verdict(url: str, tally: Tally, votes: int) -> dict:
    """Read the database after the settle: every figure of the final table."""
    conn = psycopg2.connect(url)
    figures: dict = {}
    try:
        with conn.cursor() as cursor:
            cursor.execute(
                "CREATE TEMP TABLE acked (id bigint, assignment_id bigint, item_id bigint, annotator_id integer, label text)"
            )
            copy_rows(
                cursor,
                "acked",
                ("id", "assignment_id", "item_id", "annotator_id", "label"),
                ([str(value) for value in row] for row in tally.acknowledged),
            )
            # Lost: acknowledged but not stored as acknowledged (missing, or another row).
            cursor.execute(
                """SELECT count(*) FROM acked k LEFT JOIN annotation_annotation a ON a.id = k.id
                   WHERE a.id IS NULL OR a.assignment_id <> k.assignment_id OR a.item_id <> k.item_id
                      OR a.annotator_id <> k.annotator_id OR a.value->>'label' <> k.label"""
            )
            figures["lost"] = cursor.fetchone()[0]
            cursor.execute(
                """SELECT (SELECT count(*) FROM (SELECT 1 FROM annotation_annotation GROUP BY item_id, annotator_id, round
                                                 HAVING count(*) > 1) d)
                        + (SELECT count(*) FROM (SELECT 1 FROM annotation_annotation GROUP BY assignment_id HAVING count(*) > 1) d)"""
            )
            figures["duplicated"] = cursor.fetchone()[0]
            cursor.execute(
                """SELECT count(*) FILTER (WHERE n > %s), count(*) FILTER (WHERE n >= %s) FROM (
                     SELECT i.id, count(a.id) AS n FROM annotation_item i
                     JOIN annotation_annotation a ON a.item_id = i.id AND a.round = i.round GROUP BY i.id) per_item""",
                [votes, votes],
            )
            figures["over_filled"], figures["complete"] = cursor.fetchone()
            cursor.execute(
                """SELECT count(*) FROM annotation_item i JOIN annotation_consensusoutcome o
                   ON o.item_id = i.id AND o.round = i.round"""
            )
            figures["decided"] = cursor.fetchone()[0]
            cursor.execute(
                """SELECT count(*) FROM annotation_item i
                   WHERE (SELECT count(*) FROM annotation_annotation a WHERE a.item_id = i.id AND a.round = i.round) >= %s
                     AND NOT EXISTS (SELECT 1 FROM annotation_consensusoutcome o WHERE o.item_id = i.id AND o.round = i.round)""",
                [votes],
            )
            figures["undecided"] = cursor.fetchone()[0]
            cursor.execute("SELECT status, count(*) FROM annotation_job GROUP BY status")
            figures["jobs"] = dict(cursor.fetchall())
            cursor.execute("SELECT count(*) FROM annotation_job WHERE attempts > 1")
            figures["jobs_rerun"] = cursor.fetchone()[0]
            cursor.execute("SELECT count(*) FROM annotation_job WHERE id = ANY(%s)", [tally.jobs_requested])
            figures["jobs_missing"] = len(set(tally.jobs_requested)) - cursor.fetchone()[0]
    finally:
        conn.rollback()
        conn.close()
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120, help="seconds of load and faults")
    parser.add_argument("--annotators", type=int, default=10)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="start from a brand-new project instead of one under way (items holding 0 to votes − 1 votes)",
    )
    parser.add_argument("--votes", type=int, default=5, help="votes per item (k = votes // 2 + 1)")
    parser.add_argument("--fault-every", type=float, default=6, help="seconds between two faults")
    parser.add_argument(
        "--faults",
        default="worker,redis,worker,postgres",
        help="the faults, in the order they repeat: worker (kill -9, then start), redis (kill, then start), postgres (stop, then start)",
    )
    parser.add_argument("--down", type=float, default=2, help="seconds a killed server stays down")
    parser.add_argument(
        "--pg-stop", choices=("immediate", "fast"), default="immediate", help="pg_ctl stop mode of a PostgreSQL restart"
    )
    parser.add_argument(
        "--job-every",
        type=float,
        default=4,
        help="seconds between two agreement recomputes (one more just before each worker kill)",
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=360,
        help="at most this many seconds for queued work to drain once the faults stop",
    )
    parser.add_argument("--web-workers", type=int, default=4, help="gunicorn worker processes")
    parser.add_argument("--worker-processes", type=int, default=2, help="Celery worker pool size")
    parser.add_argument("--pg-bin", help="folder of initdb and pg_ctl (default: pg_config --bindir)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (data, logs of every server)")
    args = parser.parse_args()
    pattern = [name.strip() for name in args.faults.split(",") if name.strip()]
    unknown = set(pattern) - set(FAULT_KINDS)
    if unknown or not pattern:
        parser.error(f"--faults: unknown fault {', '.join(sorted(unknown))}; choose among {', '.join(FAULT_KINDS)}")
    if args.annotators < args.votes:
        parser.error("--annotators must be at least --votes (an item's votes come from different annotators)")

    folder = Path(tempfile.mkdtemp(prefix="mashov-faults-"))
    if os.geteuid() == 0:
        postgres_user = pwd.getpwnam("postgres")
        os.chown(folder, postgres_user.pw_uid, postgres_user.pw_gid)
    pg = PrivatePostgres(postgres_bindir(args.pg_bin), folder, free_port())
    redis_port, web_port = free_port(), free_port()
    env = production_env(
        DATABASE_URL=pg.url,
        CELERY_BROKER_URL=f"redis://127.0.0.1:{redis_port}/0",
        CACHE_URL=f"redis://127.0.0.1:{redis_port}/1",
        LOG_LEVEL="WARNING",
    )
    python = sys.executable
    services = {
        "redis": Service(
            "redis",
            [
                "redis-server",
                "--port",
                str(redis_port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(folder),
            ],
            env,
            folder / "redis.log",
        ),
        "web": Service(
            "web",
            [
                python,
                "-m",
                "gunicorn",
                "config.wsgi:application",
                "--bind",
                f"127.0.0.1:{web_port}",
                "--workers",
                str(args.web_workers),
                "--log-level",
                "warning",
            ],
            env,
            folder / "web.log",
        ),
        "worker": Service(
            "worker",
            [
                python,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "-l",
                "warning",
                "--concurrency",
                str(args.worker_processes),
            ],
            env,
            folder / "worker.log",
        ),
        "beat": Service(
            "beat",
            [
                python,
                "-m",
                "celery",
                "-A",
                "config.beat",
                "beat",
                "-l",
                "warning",
                "--schedule",
                str(folder / "beat-schedule"),
            ],
            env,
            folder / "beat.log",
        ),
    }
    base = f"http://127.0.0.1:{web_port}"
    injected: Counter = Counter()
    tally = Tally()
    stop_load, stop_watch = threading.Event(), threading.Event()
    lock = threading.Lock()  # a fault and the watchdog never act on a service at once
    pg_created = False
    try:
        pg.create()
        pg_created = True
        services["redis"].start()
        wait_for_redis(redis_port)
        subprocess.run([python, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
        accounts = create_nli_project(
            env, slug=SLUG, items=args.items, annotators=args.annotators, votes=args.votes, fresh=args.fresh
        )
        prior_annotations = annotations_stored(pg.url)
        for name in ("web", "worker", "beat"):
            services[name].start()
        wait_until_serving(base)

        def watchdog() -> None:
            while not stop_watch.wait(1):
                with lock:
                    for service in services.values():
                        service.restart_if_exited()

        def inject(kind: str) -> None:
            with lock:
                if kind == "worker":
                    # Jobs in flight when the worker dies: ask for two just before.
                    request_agreement(base, accounts["supervisor"], tally)
                    request_agreement(base, accounts["supervisor"], tally)
                    time.sleep(0.3)
                    services["worker"].kill(signal.SIGKILL)
                    time.sleep(args.down)
                    services["worker"].start()
                elif kind == "redis":
                    services["redis"].kill(signal.SIGKILL)
                    time.sleep(args.down)
                    services["redis"].start()
                    wait_for_redis(redis_port)
                else:
                    pg.stop(args.pg_stop)
                    time.sleep(args.down)
                    pg.start()
            injected[kind] += 1

        threads = [threading.Thread(target=watchdog, daemon=True)]
        threads += [
            threading.Thread(target=annotator_loop, args=(base, user_id, token, stop_load, tally, 60))
            for user_id, token in accounts["annotators"]
        ]
        threads.append(
            threading.Thread(
                target=supervisor_loop, args=(base, accounts["supervisor"], stop_load, args.job_every, tally)
            )
        )
        for thread in threads:
            thread.start()
        started = time.monotonic()
        next_fault, turn = started + args.fault_every, 0
        while time.monotonic() - started < args.seconds:
            if time.monotonic() >= next_fault:
                inject(pattern[turn % len(pattern)])
                turn += 1
                next_fault += args.fault_every
            time.sleep(0.1)
        loaded = time.monotonic() - started
        stop_load.set()
        for thread in threads[1:]:
            thread.join()
        print(f"load and faults over after {loaded:.0f} s; settling (at most {args.settle:.0f} s)…", flush=True)

        settle_started = time.monotonic()
        quiet_polls = 0
        while time.monotonic() - settle_started < args.settle:
            quiet_polls = quiet_polls + 1 if pending(pg.url) == 0 else 0
            if quiet_polls >= 2:
                break
            time.sleep(5)
        settled = time.monotonic() - settle_started
        stop_watch.set()
        threads[0].join()
        figures = verdict(pg.url, tally, args.votes)
        stored = annotations_stored(pg.url) - prior_annotations
    finally:
        stop_load.set()
        stop_watch.set()
        for service in services.values():
            service.kill(signal.SIGTERM)
        if pg_created:
            try:
                pg.stop("immediate")
            except subprocess.CalledProcessError:
                pass  # already down (interrupted during a restart)
        if args.keep:
            print(f"kept: {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)

    acknowledged = len(tally.acknowledged)
    jobs = figures["jobs"]
    stuck_jobs = jobs.get("queued", 0) + jobs.get("running", 0)
    print(
        f"\n{args.annotators} annotators for {loaded:.0f} s, {args.items:,} items × {args.votes} votes (nli_relabel, "
        f"{args.votes // 2 + 1} of {args.votes}); gunicorn {args.web_workers} workers, Celery {args.worker_processes} processes + beat; "
        f"settled in {settled:.0f} s"
    )
    rows = [
        (
            "faults injected",
            ", ".join(f"{injected[kind]} {kind}" for kind in FAULT_KINDS)
            + f" (down {args.down:g} s; PostgreSQL stop -m {args.pg_stop})",
        ),
        ("submits acknowledged (201)", f"{acknowledged:,}"),
        ("  lost", f"{figures['lost']:,}"),
        ("  duplicated", f"{figures['duplicated']:,}"),
        ("  over-filled items", f"{figures['over_filled']:,}"),
        ("stored, answer lost (retry got 409)", f"{tally.answer_lost:,} (stored during the run: {stored:,})"),
        ("items complete / decided", f"{figures['complete']:,} / {figures['decided']:,}"),
        ("  complete, not decided (stuck)", f"{figures['undecided']:,}"),
        ("jobs started (202) / in database", f"{len(tally.jobs_requested):,} / {sum(jobs.values()):,}"),
        (
            "  done / failed",
            f"{jobs.get('done', 0):,} / {jobs.get('failed', 0):,} (run more than once: {figures['jobs_rerun']:,})",
        ),
        ("  stuck (queued / running)", f"{stuck_jobs:,} ({jobs.get('queued', 0)} / {jobs.get('running', 0)})"),
        ("  requested but missing", f"{figures['jobs_missing']:,}"),
        ("failed requests (retried)", ", ".join(f"{what} ×{n}" for what, n in sorted(tally.errors.items())) or "none"),
        ("other 409s (item filled meanwhile)", f"{tally.conflicts:,}"),
        (
            "servers that exited by themselves",
            ", ".join(f"{s.name} ×{s.unexpected_exits}" for s in services.values() if s.unexpected_exits) or "none",
        ),
    ]
    width = max(len(what) for what, _ in rows)
    for what, value in rows:
        print(f"{what:<{width}}  {value}")
    bad = (
        figures["lost"]
        + figures["duplicated"]
        + figures["over_filled"]
        + figures["undecided"]
        + stuck_jobs
        + figures["jobs_missing"]
    )
    print(
        "PASS: nothing lost, duplicated, over-filled or stuck"
        if not bad
        else "FAIL: see lost / duplicated / over-filled / stuck above"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
