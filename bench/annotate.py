"""Benchmark: N simulated annotators doing next → submit against gunicorn + PostgreSQL.

Prints throughput and p50/p95/p99 latencies of the annotate loop beside the same figures
for a bare Django JSON view on the same stack (the floor) and for two reference rungs
between them (bench/reference_views.py: a DRF view with token authentication, and the same
plus one inserted row), the CPU each part of the stack spent per request in each phase (web
server, all of the server's PostgreSQL processes, the load generator), then checks in SQL
that no item was over-filled and no annotator labeled an item twice. A script, not a test:

    python bench/annotate.py --annotators 50 --seconds 20

The project starts under way (every item holds 0 to votes − 1 earlier votes, the tables and
their statistics are those of a running database); --fresh times a brand-new project on
empty tables instead. It creates (and drops) a scratch database `mashov_bench_annotate` on the PostgreSQL server of
BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/mashov_bench_annotate) and
serves on a free port of 127.0.0.1 only.
"""

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path

import psycopg2

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scratch import (  # noqa: E402 (bench/ is on sys.path when run as a script)
    admin_sql,
    cpu_seconds,
    create_nli_project,
    free_port,
    production_env,
    run_clients,
    start_gunicorn,
    summarise,
    wait_until_serving,
)

# The table of the "write" reference rung (bench/reference_views.py): a foreign key to the
# user, as every claim and vote has.
REFERENCE_WRITE_TABLE = """CREATE TABLE bench_reference_write (
    id bigserial PRIMARY KEY,
    user_id integer NOT NULL REFERENCES auth_user (id) DEFERRABLE INITIALLY DEFERRED,
    value jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now())"""

BENCH_QUEUE = "mashov-bench-annotate"

# Phases, in the order they run: what each simulated annotator requests in a loop.
PHASES = {
    "floor": "floor: GET /healthz/",
    "token": "DRF + token: GET",
    "write": "DRF + token + 1 row",
    "annotate": "next → submit",
}


def delete_queue(broker_url: str) -> None:
    """Drop the consensus tasks the run queued (kombu keeps a Redis queue as a list under its
    name, with a binding set beside it)."""
    import redis

    client = redis.Redis.from_url(broker_url)
    client.delete(BENCH_QUEUE, f"_kombu.binding.{BENCH_QUEUE}")
    client.close()


def measured_phase(processes: int, base: str, tokens: list[str], seconds: float, mode: str, server_group: int):
    """One phase of the benchmark and the CPU each part of the stack spent on it."""
    before = cpu_seconds({"server": server_group})
    samples, errors = run_clients(processes, base, tokens, seconds, mode)
    after = cpu_seconds({"server": server_group})
    return samples, errors, {part: after[part] - before[part] for part in before}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--items", type=int, default=20000)
    parser.add_argument("--votes", type=int, default=5)
    parser.add_argument("--workers", type=int, default=5, help="gunicorn worker processes")
    parser.add_argument("--client-processes", type=int, default=4)
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="time a brand-new project on empty tables instead of one under way (see README: the first minute)",
    )
    parser.add_argument("--keep-db", action="store_true")
    args = parser.parse_args()

    db_url = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/mashov_bench_annotate")
    db_server, db_name = db_url.rsplit("/", 1)
    admin_sql(db_server, f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)')
    admin_sql(db_server, f'CREATE DATABASE "{db_name}"')
    # Completed items are handed to consensus on a Celery queue of the benchmark's own, which
    # no worker reads (the worker's CPU is not in these figures) and which is deleted at the
    # end. Without a broker, consensus would run inside the submit request.
    env = production_env(
        DATABASE_URL=db_url,
        DJANGO_SETTINGS_MODULE="bench.reference_settings",
        CELERY_BROKER_URL=os.environ.get("BENCH_BROKER_URL", "redis://127.0.0.1:6379/14"),
        CELERY_QUEUE=BENCH_QUEUE,
    )
    python = sys.executable
    subprocess.run([python, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    accounts = create_nli_project(
        env, slug="bench", items=args.items, annotators=args.annotators, votes=args.votes, fresh=args.fresh
    )
    tokens = [token for _user_id, token in accounts["annotators"]]
    # Statistics as a running database has them (autovacuum would gather them a minute
    # later, in the middle of a phase): the planner then sees the bulk-loaded items.
    conn = psycopg2.connect(db_url)
    conn.autocommit = True
    with conn.cursor() as cursor:
        cursor.execute(REFERENCE_WRITE_TABLE)
        cursor.execute("VACUUM ANALYZE")
        cursor.execute("SELECT count(*) FROM annotation_annotation")
        prior_annotations = cursor.fetchone()[0]
    conn.close()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = start_gunicorn(env, port, args.workers)
    try:
        wait_until_serving(base)
        # Warm-up, not measured: every gunicorn worker has booted and answered both kinds of
        # request (and opened its database and broker connections) before the floor is
        # timed, so neither phase pays for start-up.
        run_clients(args.client_processes, base, tokens, 3, "floor")
        run_clients(args.client_processes, base, tokens, 3, "annotate")
        phases = {
            mode: measured_phase(args.client_processes, base, tokens, args.seconds, mode, server.pid) for mode in PHASES
        }
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)

    conn = psycopg2.connect(db_url)
    with conn.cursor() as cursor:
        cursor.execute(
            """SELECT count(*) FROM (
                 SELECT a.item_id FROM annotation_annotation a JOIN annotation_item i ON i.id = a.item_id
                 WHERE a.round = i.round GROUP BY a.item_id HAVING count(*) > %s) over_filled""",
            [args.votes],
        )
        over_filled = cursor.fetchone()[0]
        cursor.execute(
            "SELECT count(*) FROM (SELECT 1 FROM annotation_annotation GROUP BY item_id, annotator_id, round HAVING count(*) > 1) d"
        )
        doubles = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM annotation_annotation")
        annotations = cursor.fetchone()[0]
        # Fairness: how much of the work the three busiest annotators got (an even share
        # is 3/N; a tool that hands most tasks to a few people shows a much larger figure).
        cursor.execute("SELECT count(*) FROM annotation_annotation GROUP BY annotator_id ORDER BY count(*) DESC")
        per_annotator = [row[0] for row in cursor.fetchall()]
    conn.close()
    if not args.keep_db:
        admin_sql(db_server, f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)')
    delete_queue(env["CELERY_BROKER_URL"])

    # One row per request kind: the three reference phases, then next and submit.
    rows = []
    for mode, (samples, _errors, cpu) in phases.items():
        kinds = ("next", "submit") if mode == "annotate" else (mode,)
        for kind in kinds:
            name = {"next": "GET next", "submit": "POST submit"}.get(kind, PHASES[mode])
            rows.append({**summarise(name, [t for k, t in samples if k == kind], args.seconds), "mode": mode})
    errors = [error for _samples, phase_errors, _cpu in phases.values() for error in phase_errors]
    floor_p95 = rows[0]["p95_ms"]
    print(
        f"\n{args.annotators} annotators, {args.seconds:.0f} s each phase, {args.items} items × {args.votes} votes"
        f" ({'a brand-new project' if args.fresh else 'a project under way'}), gunicorn {args.workers} workers, {os.cpu_count()} cores"
    )
    print(f"{'what':<22}{'requests':>10}{'req/s':>9}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'p95/floor':>11}")
    for row in rows:
        print(
            f"{row['what']:<22}{row['requests']:>10}{row['per_s']:>9.0f}{row['p50_ms']:>9.1f}{row['p95_ms']:>9.1f}"
            f"{row['p99_ms']:>9.1f}{row['p95_ms'] / floor_p95:>10.2f}x"
        )
    for mode, (_samples, _errors, cpu) in phases.items():
        requests_done = sum(row["requests"] for row in rows if row["mode"] == mode)
        if cpu and requests_done:
            parts = ", ".join(f"{part} {1000 * used / requests_done:.2f}" for part, used in cpu.items())
            print(f"CPU per request, {PHASES[mode]} (ms): {parts}")
    worst_p95 = max(row["p95_ms"] for row in rows if row["mode"] == "annotate")
    print(
        f"annotations stored: {prior_annotations} before the timed phases, {annotations} in all; errors: {len(errors)}; over-filled items: {over_filled}; double labels: {doubles}"
    )
    print(f"p95 ratio to the floor: {worst_p95 / floor_p95:.2f}x (target ≤ 2x)")
    write_p95 = next(row["p95_ms"] for row in rows if row["mode"] == "write")
    print(f"p95 ratio to the smallest authenticated write (DRF + token + 1 row): {worst_p95 / write_p95:.2f}x")
    if per_annotator:
        top3 = sum(per_annotator[:3]) / max(1, sum(per_annotator))
        print(
            f"share of annotations by the 3 busiest annotators: {100 * top3:.1f}% (even share {100 * 3 / args.annotators:.1f}%); "
            f"per annotator min {min(per_annotator)}, max {max(per_annotator)}"
        )
    for error in errors[:5]:
        print("  error:", error)
    return 0 if not (errors or over_filled or doubles) else 1


if __name__ == "__main__":
    sys.exit(main())
