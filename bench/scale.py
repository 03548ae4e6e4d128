"""Benchmark: the supervisor's pages and reports, the deferred work, the exports and the
import on a large `nli_relabel` project.

Builds the project quickly — items, assignments, annotations, consensus outcomes and
decisions generated inside PostgreSQL (INSERT … SELECT over generate_series, no row through
Python) into the real tables with their secondary indexes and foreign keys dropped during
the load and rebuilt after it, then VACUUM ANALYZE — runs the project's aggregation job once
(as the worker would after the rounds closed; it stores the figures the pages read), then
times each page in-process with Django's test client, signed in as the project's
supervisor: median seconds of --repeat, the number of queries and how much the process's
resident memory grew. Then an incremental aggregation after --changed items changed, the
exports (JSONL and CSV, `status=all`, every byte read) and an import of --import-items new
items. A script, not a test:

    python bench/scale.py --items 1000000 [--votes 3] [--repeat 3] [--keep] [--reuse]
        [--skip-job] [--only pages,job,incremental,figures,export,import] [--open-percent 5]

Items: 90 % accepted by a 2-of-3 rule, 5 % removed (failed their round, so they wait in the
adjudication queue), 5 % open with one vote (--open-percent: the last of every hundred
items open, fewer accepted). It creates the scratch database
`mashov_bench_scale` on --server and drops it unless --keep; --reuse times an existing one.
Each step prints the load average beside it (the machine may be shared). Built once with
`--keep --skip-job`, the job is best timed in a process of its own (`--reuse --keep
--only job`: its peak memory), then `--reuse --only pages,incremental`. The pages read
the figures the job stores; `--reuse --keep --only figures --repeat 1` stores them alone,
without the aggregation methods' run (at 1M items a quarter of an hour instead of about
an hour; the adjudication queue then shows no methods' labels, which it reads per page
anyway).

The annotate loop (`--loop db1,db2`: projects built with `--keep`, one after another):
gunicorn as the image runs it (config/gunicorn.py: the app preloaded in the master, workers
that replace themselves when idle with its pages copied, the access log) with the
production settings over plain HTTP, on 127.0.0.1 (--web-workers 5), a Celery worker
(its default concurrency: one process a core) and beat, and --loop-annotators simulated
annotators (20) doing next → submit on the open items for --seconds (40; build with
`--open-percent 40` so that the smaller project does not run dry). After a warm-up and
once the worker is idle, the phase is timed; then the worker is left to finish what the
phase queued — consensus, the aggregation jobs, what the debounce left to beat's sweep —
until no task is queued or taken, no job queued or running and no project's aggregation
behind its changes. Printed per project and side by side with the ratio of the last to
the first: cycles/s, p95 of next and submit, the CPU per cycle of the web, of the
PostgreSQL backends of that database, and of the worker during the phase and until idle,
each task's CPU (bench/loop_worker.py), the jobs the phase left and the web workers that
replaced themselves, with the load average:

    python bench/scale.py --items 10000 --open-percent 40 --keep --only build --database loop10k
    python bench/scale.py --items 1000000 --open-percent 40 --keep --only build --database loop1m
    python bench/scale.py --loop loop10k,loop1m --broker redis://127.0.0.1:6379/14

Run the loop within MASHOV_AGGREGATION_FULL_SECONDS (an hour) of the build's aggregation
job, or the first run of a large project is a full one.
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import math
import os
import re
import resource
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from export import payload_of  # noqa: E402 (bench/ is on sys.path)
from scratch import (  # noqa: E402
    admin_sql,
    cpu_seconds,
    free_port,
    process_cpu,
    production_env,
    run_clients,
    start_celery,
    start_production_gunicorn,
    stop_process,
    summarise,
    wait_until_serving,
    web_workers_replaced,
)

LABELS = ("entailment", "neutral", "contradiction")
SLUG = "scale"
NOW = "2025-01-01 00:00:00+00"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--votes", type=int, default=3)
    parser.add_argument("--annotators", type=int, default=30)
    parser.add_argument(
        "--open-percent",
        type=int,
        default=5,
        help="share of the items left open with one vote (what the loop annotates)",
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--import-items", type=int, default=10_000)
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--database", default="mashov_bench_scale")
    parser.add_argument("--keep", action="store_true", help="leave the database for another run")
    parser.add_argument("--reuse", action="store_true", help="time an existing database (built with --keep)")
    parser.add_argument(
        "--only",
        default="",
        help="comma-separated steps: pages, job, incremental, figures, export, import; build: none after the build",
    )
    parser.add_argument(
        "--skip-job", action="store_true", help="build without running the aggregation job (time it with --only job)"
    )
    parser.add_argument("--changed", type=int, default=100, help="items changed before an incremental aggregation")
    parser.add_argument(
        "--loop", default="", help="comma-separated built databases (--keep) to run the annotate loop on, in order"
    )
    parser.add_argument("--seconds", type=float, default=40, help="the loop phase's length")
    parser.add_argument("--loop-annotators", dest="annotators_loop", type=int, default=20)
    parser.add_argument("--web-workers", type=int, default=5, help="gunicorn worker processes")
    parser.add_argument("--client-processes", type=int, default=4)
    parser.add_argument("--idle-timeout", type=float, default=600, help="seconds to wait for the worker to finish")
    parser.add_argument(
        "--broker", default=os.environ.get("BENCH_BROKER_URL", "redis://127.0.0.1:6379/14"), help="Redis for Celery"
    )
    return parser.parse_args()


def peak_rss_mib() -> float:
    """This process's peak resident size so far (a step run in a fresh process: its peak)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def load_average() -> str:
    return "/".join(f"{value:.1f}" for value in os.getloadavg())


def rss_mib() -> float:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


LOADED = (
    "annotation_item",
    "annotation_assignment",
    "annotation_annotation",
    "annotation_consensusoutcome",
    "annotation_decision",
)


def _secondary_indexes(cur) -> list[str]:
    """Drop the loaded tables' indexes and constraints other than the primary keys (unique
    constraints, foreign keys, plain and partial indexes); return the statements that
    recreate them exactly. Building an index once over the loaded rows is several times
    faster than maintaining it row by row, and checking a foreign key once as a join far
    faster than a trigger per row; what is recreated is what the migrations made."""
    recreate: list[str] = []
    for table in LOADED:
        cur.execute(
            "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint"
            " WHERE conrelid = %s::regclass AND contype IN ('u', 'x', 'f') ORDER BY contype DESC, conname",
            [table],
        )
        for name, definition in cur.fetchall():
            cur.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
            recreate.append(f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}')
        cur.execute(
            "SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid) FROM pg_index"
            " WHERE indrelid = %s::regclass"
            " AND NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conindid = indexrelid AND conrelid = indrelid)",
            [table],
        )
        for name, definition in cur.fetchall():
            cur.execute(f"DROP INDEX {name}")
            recreate.append(definition)
    # Unique constraints before the foreign keys that may need them.
    return sorted(recreate, key=lambda statement: "FOREIGN KEY" in statement)


def build(project, users, n_items: int, votes: int, open_percent: int = 5) -> dict[str, float]:
    """Items, claims, votes, outcomes and decisions of `project`, generated inside
    PostgreSQL (INSERT … SELECT over generate_series: no row passes through Python) with
    the secondary indexes and foreign keys dropped during the load and rebuilt after it,
    then VACUUM ANALYZE. Returns the seconds of each phase."""
    from django.db import connection

    assert votes <= len(users), "each of an item's votes comes from a different annotator"
    step = next(s for s in (7, 11, 13, 17, 19, 23, 29, 31, 1) if math.gcd(s, len(users)) == 1)
    phases: dict[str, float] = {}
    started = time.perf_counter()

    def phase(name: str) -> None:
        nonlocal started
        phases[name] = time.perf_counter() - started
        print(f"  build: {name} {phases[name]:.1f} s", flush=True)
        started = time.perf_counter()

    k_needed = votes // 2 + 1
    with connection.cursor() as wrapper:
        cur = wrapper.cursor
        cur.execute("SET maintenance_work_mem = '512MB'")
        cur.execute("SET work_mem = '256MB'")
        cur.execute("SET temp_buffers = '256MB'")  # the generated votes stay in memory (before any temp table)
        cur.execute("SELECT setseed(0.7)")
        cur.execute("CREATE TEMP TABLE bench_users (a int PRIMARY KEY, user_id int, skill float8)")
        cur.executemany(
            "INSERT INTO bench_users VALUES (%s, %s, %s)",
            [(a, u.pk, 0.65 + 0.30 * a / max(1, len(users) - 1)) for a, u in enumerate(users)],
        )
        cur.execute("CREATE TEMP TABLE bench_payloads (k int PRIMARY KEY, payload jsonb)")
        cur.executemany("INSERT INTO bench_payloads VALUES (%s, %s)", [(k, payload_of(k)) for k in range(97)])
        cur.execute("CREATE TEMP TABLE bench_labels (k int PRIMARY KEY, label text)")
        cur.executemany("INSERT INTO bench_labels VALUES (%s, %s)", list(enumerate(LABELS)))
        # Every item's truth and first annotator; its votes from `votes` different
        # annotators (first + j·step mod n, step prime to n), each right with its
        # annotator's skill (0.65 … 0.95), else a uniformly random label.
        cur.execute(
            "CREATE TEMP TABLE bench_items AS SELECT i, floor(random() * 3)::int AS truth,"
            " floor(random() * %s)::int AS first FROM generate_series(0, %s) AS i",
            [len(users), n_items - 1],
        )
        cur.execute(
            "CREATE TEMP TABLE bench_votes AS"
            " SELECT b.i, j, u.user_id,"
            "  CASE WHEN random() < u.skill THEN b.truth ELSE floor(random() * 3)::int END AS label"
            " FROM bench_items b CROSS JOIN generate_series(0, %s) AS j"
            " JOIN bench_users u ON u.a = (b.first + j * %s) %% %s",
            [votes - 1, step, len(users)],
        )
        # Items: `open_percent` % open with one vote (the last ones of every hundred), the
        # rest accepted by the k-of-n rule (or removed when no label reached k), every 20th
        # (offset 1) removed outright.
        cur.execute(
            "CREATE TEMP TABLE bench_outcomes AS"
            " SELECT i, c[1] AS c0, c[2] AS c1, c[3] AS c2, greatest(c[1], c[2], c[3]) AS top,"
            "  CASE WHEN c[1] >= c[2] AND c[1] >= c[3] THEN 0 WHEN c[2] >= c[3] THEN 1 ELSE 2 END AS mode"
            " FROM (SELECT i, ARRAY[count(*) FILTER (WHERE label = 0), count(*) FILTER (WHERE label = 1),"
            "  count(*) FILTER (WHERE label = 2)]::int[] AS c FROM bench_votes GROUP BY i) AS counted"
        )
        cur.execute(
            "CREATE TEMP TABLE bench_status AS"
            " SELECT b.i, b.truth, o.c0, o.c1, o.c2, o.top, CASE WHEN b.i %% 100 >= %(closed)s THEN 'open'"
            "  WHEN o.top >= %(k)s AND b.i %% 20 <> 1 THEN 'accepted' ELSE 'removed' END AS status,"
            "  CASE WHEN b.i %% 100 < %(closed)s AND o.top >= %(k)s AND b.i %% 20 <> 1 THEN m.label ELSE '' END AS gold"
            " FROM bench_items b JOIN bench_outcomes o USING (i) JOIN bench_labels m ON m.k = o.mode",
            {"k": k_needed, "closed": 100 - open_percent},
        )
        cur.execute("ANALYZE bench_status; ANALYZE bench_votes")
        phase("votes generated")

        recreate = _secondary_indexes(cur)
        phase(f"{len(recreate)} indexes and constraints dropped")
        cur.execute(
            'INSERT INTO annotation_item (id, project_id, external_id, payload, reference_label, gold_label, "group",'
            " split, status, round, position, shuffle_key, created_at, computed, flags, in_sample, derived_group, priority)"
            " SELECT s.i + 1, %(project)s, 's' || lpad(s.i::text, 7, '0'), p.payload, t.label, s.gold,"
            "  'g' || (s.i / 3), CASE WHEN s.i %% 10 = 0 THEN 'dev' ELSE 'train' END, s.status, 1, s.i,"
            "  (s.i * 0.6180339887) %% 1, %(now)s, '{}', '[]', true, '', 0"
            " FROM bench_status s JOIN bench_payloads p ON p.k = s.i %% 97 JOIN bench_labels t ON t.k = s.truth"
            " ORDER BY s.i",
            {"project": project.pk, "now": NOW},
        )
        phase(f"{n_items:,} items")
        # One claim and one vote per (item, j); open items hold only their first vote.
        # Ids i·votes + j + 1: a vote's id is its claim's.
        claims = (
            " FROM bench_votes v JOIN bench_status s USING (i) JOIN bench_labels m ON m.k = v.label"
            " WHERE v.j = 0 OR s.status <> 'open' ORDER BY v.i, v.j"
        )
        cur.execute(
            "INSERT INTO annotation_assignment (id, project_id, item_id, annotator_id, round, status, claimed_at,"
            " expires_at, submitted_at)"
            " SELECT v.i * %(votes)s + v.j + 1, %(project)s, v.i + 1, v.user_id, 1, 'submitted', %(now)s, %(now)s,"
            "  %(now)s::timestamptz + make_interval(mins => (v.i * 7 + v.j) %% 60, secs => (v.i * 13 + v.j * 29) %% 60)"
            + claims,
            {"project": project.pk, "now": NOW, "votes": votes},
        )
        assignments = cur.rowcount
        phase(f"{assignments:,} assignments")
        cur.execute(
            "INSERT INTO annotation_annotation (id, assignment_id, item_id, annotator_id, round, value, created_at,"
            " review_required)"
            " SELECT v.i * %(votes)s + v.j + 1, v.i * %(votes)s + v.j + 1, v.i + 1, v.user_id, 1,"
            "  jsonb_build_object('label', m.label), %(now)s, false" + claims,
            {"now": NOW, "votes": votes},
        )
        phase(f"{cur.rowcount:,} annotations")
        cur.execute(
            "INSERT INTO annotation_consensusoutcome (item_id, round, outcome, gold, votes, n_votes, agreement,"
            " label_changed, computed_at)"
            " SELECT s.i + 1, 1, CASE WHEN s.status = 'accepted' THEN 'accepted' ELSE 'failed' END, s.gold,"
            "  jsonb_strip_nulls(jsonb_build_object('entailment', nullif(s.c0, 0), 'neutral', nullif(s.c1, 0),"
            "  'contradiction', nullif(s.c2, 0))), %(votes)s, round(s.top::numeric / %(votes)s, 4),"
            "  s.gold <> '' AND s.gold <> t.label, %(now)s"
            " FROM bench_status s JOIN bench_labels t ON t.k = s.truth WHERE s.status <> 'open' ORDER BY s.i",
            {"now": NOW, "votes": votes},
        )
        cur.execute(
            "INSERT INTO annotation_decision (item_id, round, method, rank, value, status, comment, override, created_at)"
            " SELECT s.i + 1, 1, 'k_of_n', 1, CASE WHEN s.gold <> '' THEN to_jsonb(s.gold) END, s.status, '', false,"
            "  %(now)s FROM bench_status s WHERE s.status <> 'open' ORDER BY s.i",
            {"now": NOW},
        )
        phase("outcomes and decisions")
        for statement in recreate:
            cur.execute(statement)
        phase(f"{len(recreate)} indexes and constraints rebuilt")
        for table in ("annotation_item", "annotation_assignment", "annotation_annotation"):
            cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
        cur.execute(
            "DROP TABLE bench_users, bench_payloads, bench_labels, bench_items, bench_votes, bench_outcomes, bench_status"
        )
    connection.close()
    with connection.cursor() as cur:
        for table in LOADED:
            cur.execute(f"VACUUM ANALYZE {table}")
    phase("VACUUM ANALYZE")
    return phases


class Timings:
    def __init__(self, repeat: int):
        self.repeat = repeat
        self.rows: list[tuple] = []

    def page(self, name: str, client, url: str, *, check=None) -> None:
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        seconds, queries, grew = [], 0, 0.0
        for _ in range(self.repeat):
            gc.collect()
            before = rss_mib()
            with CaptureQueriesContext(connection) as captured:
                started = time.perf_counter()
                response = client.get(url)
                body = b"".join(response.streaming_content) if response.streaming else response.content
                seconds.append(time.perf_counter() - started)
            assert response.status_code == 200, (url, response.status_code, body[:500])
            if check is not None:
                check(body)
            queries = len(captured)
            del body, response
            gc.collect()
            grew = max(grew, rss_mib() - before)
        self.rows.append((name, statistics.median(seconds), min(seconds), queries, grew))
        print(
            f"  {name:<44}{statistics.median(seconds):>8.3f} s  {queries:>5} queries  +{grew:.0f} MiB"
            f"  load {load_average()}",
            flush=True,
        )

    def step(self, name: str, action) -> object:
        seconds, cpu, value = [], [], None
        for _ in range(self.repeat):
            started, started_cpu = time.perf_counter(), time.process_time()
            value = action()
            seconds.append(time.perf_counter() - started)
            cpu.append(time.process_time() - started_cpu)
        self.rows.append((name, statistics.median(seconds), min(seconds), None, None))
        # This process's CPU beside the wall time: on a shared machine the wall time
        # swings with the others' load, the CPU much less (PostgreSQL's is not in it).
        print(
            f"  {name:<44}{statistics.median(seconds):>8.3f} s  {statistics.median(cpu):>8.3f} s CPU"
            f"  peak RSS {peak_rss_mib():.0f} MiB  load {load_average()}",
            flush=True,
        )
        return value


def aggregation_job(project) -> None:
    """The project's aggregation job as the worker runs it after a round closes and its
    full run is due: every method over every vote, then the stored figures. Run it in a
    process of its own (`--only job`) for its peak memory."""
    from annotation.models import Job
    from annotation.services.aggregation import aggregation_compute_job

    job = Job.objects.create(kind="aggregation", project=project, status="running")
    started, started_cpu = time.perf_counter(), time.process_time()
    aggregation_compute_job(job)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - started_cpu
    # The tables the job filled, analysed as autovacuum would on a live server (the build's
    # ANALYZE saw them empty): without, the planner read every aggregate for 100 items' ids.
    from django.db import connection

    with connection.cursor() as cur:
        for table in ("annotation_itemaggregate", "annotation_itemfigures", "annotation_annotatorcompetence"):
            cur.execute(f"ANALYZE {table}")
    print(
        f"aggregation job, full run (stores the figures the pages read): {elapsed:.1f} s,"
        f" {cpu:.1f} s CPU in this process, peak RSS {peak_rss_mib():.0f} MiB,"
        f" load {load_average()}",
        flush=True,
    )


def aggregation_steps(project, timings, changed: int) -> None:
    """The deferred work a closed round leaves once the project's full run is done: an
    incremental aggregation run after `changed` items got one vote edited each (it updates
    the stored figures by those items), and the stored figures alone by the changed items.
    Needs the full run first (the build's job, or `--only job`)."""
    from django.conf import settings
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotation.models import Annotation
    from annotation.services.aggregation import aggregation_changes_record, aggregation_compute_for_project
    from annotation.services.figures import project_figures_store

    # The hourly full run is the job above, timed on its own; here the runs in between.
    settings.MASHOV_AGGREGATION_FULL_SECONDS = 10**9
    edited = list(
        Annotation.objects.filter(item__project=project)
        .order_by("item_id")
        .values_list("pk", "item_id", "value")[: changed * 3 : 3]
    )
    turn = {"n": 0}

    def incremental():
        turn["n"] += 1
        for pk, _item_id, value in edited:
            label = LABELS[(LABELS.index(value["label"]) + turn["n"]) % 3]
            Annotation.objects.filter(pk=pk).update(value={"label": label})
        # As the request records them, without the job it would also start in-process.
        aggregation_changes_record(project.pk, [item_id for _pk, item_id, _value in edited])
        with CaptureQueriesContext(connection) as captured:
            result = aggregation_compute_for_project(project)
        assert result["full"] is False, result
        return len(captured)

    queries = timings.step(f"aggregation + figures, incremental ({len(edited)} items changed)", incremental)
    print(f"    {queries} queries per incremental run", flush=True)
    changed_ids = sorted({item_id for _pk, item_id, _value in edited})

    def figures_incremental():
        with CaptureQueriesContext(connection) as captured:
            project_figures_store(project, changed_ids)
        return len(captured)

    queries = timings.step(f"stored figures alone, incremental ({len(changed_ids)} items)", figures_incremental)
    print(f"    {queries} queries per incremental figures run", flush=True)


# The annotate loop on built projects (--loop): the stack as production runs it — gunicorn,
# a Celery worker and beat — with N annotators doing next → submit on the open items, then
# the worker left to finish what the phase queued (consensus, aggregation, the sweep).

LOOP_QUEUE = f"mashov-bench-loop-{os.getpid()}"
TASK_DONE = re.compile(r"Task (\S+)\[[^\]]+\] succeeded in ([0-9.]+)s")
TASK_CPU = re.compile(r"task-cpu (\S+) ([0-9.]+)")


class DatabaseBackendsCpu:
    """The CPU of the PostgreSQL backends serving one database (pg_stat_activity's
    `datname`), sampled every `every` seconds on a thread: each backend's CPU since it was
    first seen (from its start, for one that connects later). Other databases' backends —
    the server is shared — are not in it; a backend that exits between two samples loses
    its last fraction of a second (the web's and the worker's connections are persistent)."""

    def __init__(self, server: str, database: str, every: float = 0.2):
        self.server, self.database, self.every = server, database, every
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.started = False

    def _sample(self, cursor) -> None:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", [self.database])
        with self.lock:
            for (pid,) in cursor.fetchall():
                found = process_cpu(pid)
                if found is None:
                    continue
                self.first.setdefault(pid, found[2] if not self.started else 0.0)
                self.last[pid] = found[2]
            self.started = True

    def _run(self) -> None:
        import psycopg2

        conn = psycopg2.connect(f"{self.server}/postgres")
        conn.autocommit = True
        with conn.cursor() as cursor:
            while not self.stopping.is_set():
                self._sample(cursor)
                self.stopping.wait(self.every)
            self._sample(cursor)
        conn.close()

    def start(self) -> DatabaseBackendsCpu:
        self.thread.start()
        while not self.started:
            time.sleep(0.01)
        return self

    def used(self) -> float:
        with self.lock:
            return sum(self.last[pid] - self.first[pid] for pid in self.last)

    def stop(self) -> float:
        self.stopping.set()
        self.thread.join()
        return self.used()


def loop_accounts(cursor, count: int) -> list[str]:
    """Tokens of the project's first `count` annotators (made now if they have none)."""
    import secrets

    cursor.execute(
        "SELECT m.user_id FROM annotation_membership m JOIN auth_user u ON u.id = m.user_id"
        " JOIN annotation_project p ON p.id = m.project_id"
        " WHERE p.slug = %s AND m.role = 'annotator' AND m.status = 'active' ORDER BY u.username LIMIT %s",
        [SLUG, count],
    )
    tokens = []
    for (user_id,) in cursor.fetchall():
        cursor.execute(
            "INSERT INTO authtoken_token (key, user_id, created) VALUES (%s, %s, now())"
            " ON CONFLICT (user_id) DO UPDATE SET key = authtoken_token.key RETURNING key",
            [secrets.token_hex(20), user_id],
        )
        tokens.append(cursor.fetchone()[0])
    assert len(tokens) == count, f"the project has {len(tokens)} annotators, not {count}"
    return tokens


def worker_idle(cursor, broker, worker_pid: int) -> bool:
    """Nothing left for the worker: no task in the queue or taken and unacknowledged, no job
    queued or running, no project whose aggregation change count is ahead of the runs (a
    change the debounce held back is run by the sweep, up to a minute later)."""
    if any(broker.llen(key) for key in broker.scan_iter(f"{LOOP_QUEUE}*") if broker.type(key) == b"list"):
        return False
    if broker.hlen("unacked"):
        return False
    cursor.execute(
        "SELECT (SELECT count(*) FROM annotation_job WHERE status IN ('queued', 'running'))"
        " + (SELECT count(*) FROM annotation_project WHERE aggregation_requested > aggregation_done)"
    )
    return cursor.fetchone()[0] == 0


def wait_until_idle(cursor, broker, groups: dict[str, int], timeout: float) -> tuple[float, dict[str, float]]:
    """Poll every second until the worker is idle (`worker_idle`) and spent no CPU over the
    last two seconds; returns (when it first was, monotonic; the CPU of the parts then)."""
    deadline = time.monotonic() + timeout
    quiet: list[tuple[float, dict[str, float]]] = []
    while time.monotonic() < deadline:
        now, used = time.monotonic(), cpu_seconds(groups, postgres=False)
        if worker_idle(cursor, broker, groups["worker"]) and (
            not quiet or used["worker"] - quiet[-1][1]["worker"] < 0.02
        ):
            quiet.append((now, used))
            if len(quiet) == 3:
                return quiet[0]
        else:
            quiet = []
        time.sleep(1)
    raise RuntimeError(f"the worker was still busy after {timeout:.0f} s")


def annotate_loop(args, database: str) -> dict:
    """The loop phase on the built database `database` (module docstring): its figures."""
    import psycopg2
    import redis

    url = f"{args.server}/{database}"
    conn = psycopg2.connect(url)
    conn.autocommit = True
    cursor = conn.cursor()
    tokens = loop_accounts(cursor, args.annotators_loop)
    broker = redis.Redis.from_url(args.broker)
    # No collected static files in a checkout: the production settings' warning, once per process.
    env = production_env(
        DATABASE_URL=url, CELERY_BROKER_URL=args.broker, CELERY_QUEUE=LOOP_QUEUE, PYTHONWARNINGS="ignore::UserWarning"
    )
    folder = Path(tempfile.mkdtemp(prefix="mashov-bench-loop-"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    web = start_production_gunicorn(env, port, args.web_workers, folder / "web.log")
    worker = start_celery(
        env,
        ["-A", "bench.loop_worker", "worker", "-Q", LOOP_QUEUE, "-n", f"{LOOP_QUEUE}@%h", "-l", "info",
         "--without-gossip", "--without-mingle"],
        folder / "worker.log",
    )  # fmt: skip
    beat = start_celery(
        env, ["-A", "config.beat", "beat", "-l", "warning", "--schedule", str(folder / "beat-schedule")],
        folder / "beat.log",
    )  # fmt: skip
    groups = {"web": web.pid, "worker": worker.pid, "beat": beat.pid}
    try:
        wait_until_serving(base)
        for _ in range(300):
            if "ready." in (folder / "worker.log").read_text():
                break
            time.sleep(0.2)
        # Warm-up, not measured: every web worker has answered, the worker's processes have
        # run consensus and an aggregation; then what the warm-up queued is done.
        run_clients(args.client_processes, base, tokens, 3, "annotate", SLUG)
        wait_until_idle(cursor, broker, groups, args.idle_timeout)
        cursor.execute("SELECT count(*), count(*) FILTER (WHERE status = 'open') FROM annotation_item")
        items, open_before = cursor.fetchone()
        log_offset = (folder / "worker.log").stat().st_size
        web_log_offset = (folder / "web.log").stat().st_size
        recycled_before = web_workers_replaced(folder / "web.log", 0)
        cursor.execute("SELECT now()")
        phase_start_db = cursor.fetchone()[0]
        backends = DatabaseBackendsCpu(args.server, database).start()
        load_start = load_average()
        before = cpu_seconds(groups, postgres=False)
        started = time.monotonic()
        samples, errors = run_clients(args.client_processes, base, tokens, args.seconds, "annotate", SLUG)
        ended = time.monotonic()
        at_end, pg_at_end, load_end = cpu_seconds(groups, postgres=False), backends.used(), load_average()
        recycled_in_phase = web_workers_replaced(folder / "web.log", web_log_offset)
        idle_at, at_idle = wait_until_idle(cursor, broker, groups, args.idle_timeout)
        pg_at_idle, load_idle = backends.stop(), load_average()
        recycled_until_idle = web_workers_replaced(folder / "web.log", web_log_offset)
        # Per task: runs, wall seconds, CPU seconds in the pool process (bench/loop_worker.py).
        tasks = collections.defaultdict(lambda: [0, 0.0, 0.0])
        with open(folder / "worker.log") as log:
            log.seek(log_offset)
            logged = log.read()
        for match in TASK_DONE.finditer(logged):
            tasks[match[1]][0] += 1
            tasks[match[1]][1] += float(match[2])
        for match in TASK_CPU.finditer(logged):
            tasks[match[1]][2] += float(match[2])
        cursor.execute(
            "SELECT kind, count(*), sum(extract(epoch FROM finished_at - started_at)),"
            " count(*) FILTER (WHERE (result ->> 'full')::boolean), sum((result ->> 'items')::int)"
            " FROM annotation_job WHERE created_at >= %s GROUP BY kind ORDER BY kind",
            [phase_start_db],
        )
        jobs = cursor.fetchall()
        # Never two aggregation jobs of one project at once: overlapping runs of the phase.
        cursor.execute(
            "SELECT count(*) FROM annotation_job a JOIN annotation_job b ON a.project_id = b.project_id"
            " AND a.id < b.id AND a.kind = 'aggregation' AND b.kind = 'aggregation'"
            " AND a.started_at < b.finished_at AND b.started_at < a.finished_at WHERE a.created_at >= %s",
            [phase_start_db],
        )
        overlapping = cursor.fetchone()[0]
        cursor.execute(
            "SELECT count(*) FILTER (WHERE status = 'open'), count(*) FILTER (WHERE status = 'deciding') FROM annotation_item"
        )
        open_after, deciding_after = cursor.fetchone()
    finally:
        for process in (web, worker, beat):
            stop_process(process)
        for key in broker.scan_iter(f"{LOOP_QUEUE}*"):
            broker.delete(key)
        broker.delete(f"_kombu.binding.{LOOP_QUEUE}")
        broker.close()
        conn.close()
        shutil.rmtree(folder, ignore_errors=True)
    cycles = sum(1 for kind, _ in samples if kind == "submit")
    seconds = ended - started

    def per_cycle(used: float) -> float:
        return 1000 * used / max(1, cycles)

    return {
        "database": database,
        "items": items,
        "open": (open_before, open_after, deciding_after),
        "cycles": cycles,
        "cycles_per_s": cycles / seconds,
        "next_p95": summarise("next", [t for k, t in samples if k == "next"], seconds)["p95_ms"],
        "submit_p95": summarise("submit", [t for k, t in samples if k == "submit"], seconds)["p95_ms"],
        "empty_nexts": sum(1 for kind, _ in samples if kind == "next-empty"),
        "errors": errors,
        "web_ms": per_cycle(at_end["web"] - before["web"]),
        "web_idle_ms": per_cycle(at_idle["web"] - before["web"]),
        "postgres_ms": per_cycle(pg_at_end),
        "postgres_idle_ms": per_cycle(pg_at_idle),
        "worker_phase_ms": per_cycle(at_end["worker"] - before["worker"]),
        "worker_ms": per_cycle(at_idle["worker"] - before["worker"]),
        "beat_ms": per_cycle(at_idle["beat"] - before["beat"]),
        "idle_after_s": idle_at - ended,
        "load": (load_start, load_end, load_idle),
        "tasks": dict(tasks),
        "jobs": jobs,
        "overlapping": overlapping,
        "web_recycled": (recycled_before, recycled_in_phase, recycled_until_idle),
    }


LOOP_ROWS = (
    ("cycles/s (next → submit pairs)", "cycles_per_s", "{:.0f}"),
    ("next p95 ms", "next_p95", "{:.1f}"),
    ("submit p95 ms", "submit_p95", "{:.1f}"),
    ("web CPU per cycle (the phase), ms", "web_ms", "{:.2f}"),
    ("web CPU per cycle (until idle: workers replaced), ms", "web_idle_ms", "{:.2f}"),
    ("PostgreSQL CPU per cycle (the phase), ms", "postgres_ms", "{:.2f}"),
    ("PostgreSQL CPU per cycle (until idle), ms", "postgres_idle_ms", "{:.2f}"),
    ("worker CPU per cycle (the phase), ms", "worker_phase_ms", "{:.2f}"),
    ("worker CPU per cycle incl. deferred work, ms", "worker_ms", "{:.2f}"),
    ("beat CPU per cycle, ms", "beat_ms", "{:.3f}"),
    ("worker idle after the phase, s", "idle_after_s", "{:.0f}"),
)


def loop_main(args) -> int:
    """--loop: the annotate loop on each database of the list, one after another, then the
    figures side by side and the ratio of the last to the first."""
    results = []
    for database in args.loop.split(","):
        print(
            f"annotate loop on {database}: {args.annotators_loop} annotators, {args.seconds:.0f} s, load {load_average()}",
            flush=True,
        )
        result = annotate_loop(args, database)
        results.append(result)
        open_before, open_after, deciding = result["open"]
        print(
            f"  {result['items']:,} items, open {open_before:,} → {open_after:,} (deciding {deciding});"
            f" {result['cycles']:,} cycles, {result['empty_nexts']} empty nexts, {len(result['errors'])} errors;"
            f" load start/end/idle {' '.join(result['load'])}",
            flush=True,
        )
        for name, (count, wall, cpu) in sorted(result["tasks"].items()):
            print(
                f"    task {name}: {count} runs, {wall:.2f} s wall, {cpu:.2f} s CPU"
                f" ({1000 * cpu / max(1, count):.1f} ms a run, {1000 * cpu / max(1, result['cycles']):.2f} ms a cycle)",
                flush=True,
            )
        for kind, count, wall, full, job_items in result["jobs"]:
            print(
                f"    job {kind}: {count} ({full or 0} full), {wall or 0:.1f} s wall, {job_items or 0} items read",
                flush=True,
            )
        print(f"    aggregation runs of one project overlapping: {result['overlapping']}", flush=True)
        before_phase, in_phase, until_idle = result["web_recycled"]
        print(
            f"    web workers replaced (idle with the master's pages copied): {before_phase} before the phase,"
            f" {in_phase} in it, {until_idle} until the worker was idle",
            flush=True,
        )
        if result["empty_nexts"]:
            print("    the project ran out of open items: build it with a larger --open-percent", flush=True)
        for error in result["errors"][:3]:
            print("    error:", error, flush=True)
    first, last = results[0], results[-1]
    header = " | ".join(f"{r['items']:,} items" for r in results)
    print(f"\n| {args.annotators_loop} annotators, {args.seconds:.0f} s | {header} | ratio |")
    print("|---|" + "---|" * (len(results) + 1))
    for name, key, fmt in LOOP_ROWS:
        ratio = last[key] / first[key] if first[key] else float("nan")
        print(f"| {name} | {' | '.join(fmt.format(r[key]) for r in results)} | {ratio:.2f}× |")
    print(f"| load average (1/5/15 min) at the end of the phase | {' | '.join(r['load'][1] for r in results)} | |")
    return 0 if not any(r["errors"] or r["overlapping"] for r in results) else 1


def main() -> int:
    args = parse_args()
    if args.loop:
        return loop_main(args)
    url = f"{args.server}/{args.database}"
    if not args.reuse:
        admin_sql(args.server, f"DROP DATABASE IF EXISTS {args.database}")
        admin_sql(args.server, f"CREATE DATABASE {args.database}")
    os.environ["DATABASE_URL"] = url
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.local"
    # DEBUG off, as the web and the worker run: with it on, Django keeps the text of the
    # last 9,000 statements, and a first run's bulk inserts doubled its peak memory.
    os.environ["DEBUG"] = "false"
    import django

    django.setup()
    from django.conf import settings

    settings.ALLOWED_HOSTS = ["*"]
    settings.MASHOV_IMPORT_JOB_ROWS = 10**9  # the import in the request, as the worker runs it
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client

    from annotation.models import Item, Membership, Project

    User = get_user_model()
    only = set(filter(None, args.only.split(",")))
    try:
        if not args.reuse:
            started = time.perf_counter()
            call_command("migrate", verbosity=0)
            supervisor = User.objects.create_user("bench-sup")
            users = [User.objects.create_user(f"coder{i:02d}") for i in range(args.annotators)]
            project = Project.objects.create(
                slug=SLUG, name=SLUG, kind="nli_relabel", language="he", created_by=supervisor,
                settings={"consensus_k": args.votes // 2 + 1, "consensus_n": args.votes, "revision_rounds": 0, "claim_ttl": 1800},
            )  # fmt: skip
            Membership.objects.create(project=project, user=supervisor, role="supervisor", status="active")
            Membership.objects.bulk_create(
                Membership(project=project, user=u, role="annotator", status="active") for u in users
            )
            build(project, users, args.items, args.votes, args.open_percent)
            print(
                f"built {args.items:,} items × {args.votes} votes in {time.perf_counter() - started:.1f} s"
                f" (load {load_average()})",
                flush=True,
            )
            if not args.skip_job:
                aggregation_job(project)
        else:
            call_command("migrate", verbosity=0)  # a database kept by an older checkout
        project = Project.objects.get(slug=SLUG)
        supervisor = User.objects.get(username="bench-sup")
        n_items = Item.objects.filter(project=project).count()
        client = Client()
        client.force_login(supervisor)
        timings = Timings(args.repeat)
        print(f"\n{n_items:,} items; load average {load_average()}; median of {args.repeat}", flush=True)

        def wanted(name: str) -> bool:
            return not only or name in only

        if wanted("pages"):
            timings.page("project page /p/{slug}/", client, f"/p/{SLUG}/")
            timings.page("annotator quality API", client, f"/api/projects/{SLUG}/annotators/")
            timings.page("annotator quality page", client, f"/p/{SLUG}/annotators/")
            timings.page("dashboard", client, f"/p/{SLUG}/dashboard/")
            timings.page("report API", client, f"/api/projects/{SLUG}/report/")
            timings.page("adjudication page", client, f"/p/{SLUG}/adjudication/")
            timings.page("adjudication API", client, f"/api/projects/{SLUG}/adjudication/")
            timings.page("review queue API", client, f"/api/projects/{SLUG}/reviews/pending/")
            timings.page("item browser, first page", client, f"/console/p/{SLUG}/items/")
            deep = (
                Item.objects.filter(project=project)
                .order_by("position", "id")
                .values_list("position", "id")[n_items // 2]
            )
            timings.page(
                "item browser, a deep page (keyset)", client, f"/console/p/{SLUG}/items/?after={deep[0]}.{deep[1]}"
            )
            timings.page(
                "item browser, a deep page (page=N)", client, f"/console/p/{SLUG}/items/?page={n_items // 100}"
            )
            timings.page("item browser, filtered (status=removed)", client, f"/console/p/{SLUG}/items/?status=removed")
            deep_page = max(2, n_items // 1000)  # 1,000 at 1M: 20,000 waiting items, 50,000 removed ones before it
            timings.page(
                f"item browser, status=removed&page={deep_page}",
                client,
                f"/console/p/{SLUG}/items/?status=removed&page={deep_page}",
            )
            timings.page(f"adjudication page {deep_page}", client, f"/p/{SLUG}/adjudication/?page={deep_page}")
            # An annotator who adjudicates without supervising: the queue less the items
            # they voted on, its count and pages read for them.
            Membership.objects.filter(project=project, user__username="coder00").update(adjudicator=True)
            judge = Client()
            judge.force_login(User.objects.get(username="coder00"))
            timings.page("adjudication page, an adjudicator", judge, f"/p/{SLUG}/adjudication/")
            timings.page("adjudication API, an adjudicator", judge, f"/api/projects/{SLUG}/adjudication/")
            timings.page(
                f"adjudication page {deep_page}, an adjudicator", judge, f"/p/{SLUG}/adjudication/?page={deep_page}"
            )

        def lines(expected: int):
            def check(body: bytes) -> None:
                assert body.count(b"\n") >= expected, body.count(b"\n")

            return check

        if only and "job" in only:  # the build runs it unless --skip-job
            aggregation_job(project)
        if wanted("incremental"):
            aggregation_steps(project, timings, args.changed)
        if only and "figures" in only:
            from annotation.services.figures import project_figures_store

            timings.step("stored figures alone, every item", lambda: project_figures_store(project))

        if wanted("export"):
            timings.page(
                "export JSONL, every item",
                client,
                f"/api/projects/{SLUG}/export/?format=jsonl&status=all",
                check=lines(n_items),
            )
            timings.page(
                "export CSV, every item",
                client,
                f"/api/projects/{SLUG}/export/?format=csv&status=all",
                check=lines(n_items),
            )
        if wanted("import"):
            from annotation.services.imports import items_import

            rows = "".join(
                json.dumps({"id": f"imp{i}", **json.loads(payload_of(i)), "label": LABELS[i % 3]}, ensure_ascii=False)
                + "\n"
                for i in range(args.import_items)
            ).encode()

            def import_once():
                target = Project.objects.create(slug=f"imp-{time.monotonic_ns()}", name="imp", kind="nli_relabel", language="he",
                                                settings={"consensus_k": 2, "consensus_n": 3})  # fmt: skip
                result = items_import(project=target, data=rows, fmt="jsonl", filename="i.jsonl", user=supervisor)
                assert result.created == args.import_items, result
                return result

            timings.step(f"import {args.import_items:,} items (JSONL)", import_once)
    finally:
        from django.db import connection

        connection.close()
        if not args.keep:
            admin_sql(args.server, f"DROP DATABASE IF EXISTS {args.database}")

    print(f"\n| {n_items:,} items × ~{args.votes} votes | median s | best s | queries | memory kept |")
    print("|---|---|---|---|---|")
    for name, median, best, queries, grew in timings.rows:
        print(
            f"| {name} | {median:.3f} | {best:.3f} | {'' if queries is None else queries} | {'' if grew is None else f'{grew:.0f} MiB'} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
