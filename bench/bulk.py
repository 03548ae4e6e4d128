"""Benchmark: the bulk paths — import and export — beside PostgreSQL's own floor.

On an `nli_relabel` project of --items items × --votes votes (built with COPY and its
aggregation job run, as bench/scale.py builds it), in-process, median of --repeat:

- import of --import-items new items from JSONL (`items_import` with the file handled in
  the call, as the worker's half of a large import runs it): wall seconds and this
  process's CPU seconds, split into reading + validation, the database checks, the rows
  and their COPY text built and handed to the streamed COPY (on a version that COPYs each
  batch in turn: and that COPY), the wait for the COPY's end, and the commit (its deferred
  key checks); the CPU seconds of the import's PostgreSQL backend (read from /proc: the
  server must be local), and how far this process's peak memory rose above what it held
  before (the file);
- the floor: the same rows' COPY text loaded by PostgreSQL into a bare copy of the item
  table (no index, no constraint), then with the item table's indexes and foreign keys
  added one by one, and the time to build that COPY text in Python;
- with --import-process bytes|file|job (step `import`): the same import in a process of its
  own (`nice -n 10`, a fresh interpreter), which reports its peak resident memory
  (VmHWM) before and after the import, and its wall and CPU seconds. `bytes`: the file
  read whole and handed to `items_import` (the API's request, with its job threshold
  raised); `file`: the open file handed over (what the API hands on from its upload);
  `job`: the file stored as an import job's input (by this process) and run by
  `items_import_job` there, as the worker runs a large import;
- the reads alone (`reads`), then the JSONL and CSV exports of every item (`status=all`,
  every byte read), wall and CPU, items/s, and this process's resident memory before,
  after a tenth of the items, at the end, and at its peak (a streamed export stays flat);
  with --explain, the plan of each chunk's facts query (it must be an index
  lookup, never a hash join over a whole table).

    python bench/bulk.py [--items 10000] [--votes 5] [--repeat 3] [--keep] [--reuse] [--only import,floor,reads,export]

The wall time on a shared machine swings with the others' load; the CPU seconds much
less (PostgreSQL's are not in them). It creates the scratch database `mashov_bench_bulk`
on --server and drops it unless --keep.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from export import payload_of  # noqa: E402 (bench/ is on sys.path)
from scale import LABELS, SLUG, build  # noqa: E402
from scratch import admin_sql  # noqa: E402

FLOOR_TABLE = "bench_bulk_floor"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--votes", type=int, default=5)
    parser.add_argument("--annotators", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--import-items", type=int, default=10_000)
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--database", default="mashov_bench_bulk")
    parser.add_argument("--keep", action="store_true", help="leave the database for another run")
    parser.add_argument("--reuse", action="store_true", help="time an existing database (built with --keep)")
    parser.add_argument("--only", default="", help="comma-separated steps: import, floor, reads, export")
    parser.add_argument("--formats", default="jsonl,csv", help="the exports timed: jsonl, csv or both")
    parser.add_argument("--explain", action="store_true", help="print the plans of one export chunk's queries")
    parser.add_argument(
        "--import-process",
        default="",
        help="time the import in a process of its own, the file handed over as bytes, file or job",
    )
    parser.add_argument(
        "--profile", type=int, default=0, help="print the N functions of most own CPU time of one import and one export"
    )
    parser.add_argument("--child-import", default="", help=argparse.SUPPRESS)  # the process of its own: file path
    parser.add_argument("--child-target", default="", help=argparse.SUPPRESS)  # project slug or job:<id>
    return parser.parse_args()


def rss_mib(field: str = "VmRSS") -> float:
    """This process's resident memory (VmRSS), or its peak since the last reset (VmHWM)."""
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    return 0.0


def reset_peak() -> None:
    """Start VmHWM again from the present resident size (Linux: clear_refs 5)."""
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")


def median_of(repeat: int, action) -> tuple[float, float, object]:
    """Median wall and CPU seconds of `repeat` runs of `action`, and its last value."""
    walls, cpus, value = [], [], None
    for _ in range(repeat):
        started, started_cpu = time.perf_counter(), time.process_time()
        value = action()
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - started_cpu)
    return statistics.median(walls), statistics.median(cpus), value


def import_file(n: int, first: int = 0) -> bytes:
    return "".join(
        json.dumps({"id": f"imp{i}", **json.loads(payload_of(i)), "label": LABELS[i % 3]}, ensure_ascii=False) + "\n"
        for i in range(first, first + n)
    ).encode()


def time_import(args, report) -> None:
    from django.db import connection

    from annotation.models import Project
    from annotation.services import imports

    data = import_file(args.import_items)

    def backend_cpu() -> float:
        """CPU seconds of this connection's PostgreSQL backend so far (the server is local)."""
        connection.ensure_connection()
        with open(f"/proc/{connection.connection.get_backend_pid()}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    parts: dict[str, list[float]] = {}

    def timed(name, function):
        def wrapper(*a, **k):
            started = time.perf_counter()
            try:
                return function(*a, **k)
            finally:
                parts.setdefault(name, []).append(time.perf_counter() - started)

        return wrapper

    # (owner, attribute): module functions, and the writer's batch (its rows and COPY text
    # built, and handed to the streamed COPY) and the wait for the COPY's end.
    timed_parts = [(imports, "_validate_batch"), (imports, "check_against_project"), (imports._RowWriter, "write")]
    try:
        from annotation import copy_stream
    except ImportError:  # a version that COPYs each batch in turn (its time is in `write`)
        pass
    else:
        timed_parts.append((copy_stream.CopyStream, "close"))
    originals = {(owner, name): getattr(owner, name) for owner, name in timed_parts}
    for (owner, name), function in originals.items():
        setattr(owner, name, timed(name, function))
    try:
        server_cpu: list[float] = []
        connection.commit = timed("commit", connection.commit)  # the atomic block's, with the deferred key checks

        def once():
            target = Project.objects.create(slug=f"imp-{time.monotonic_ns()}", name="imp", kind="nli_relabel", language="he",
                                            settings={"consensus_k": 2, "consensus_n": 3})  # fmt: skip
            reset_peak()
            before = rss_mib()
            server_before = backend_cpu()
            result = imports.items_import(project=target, data=data, fmt="jsonl", filename="i.jsonl")
            server_cpu.append(backend_cpu() - server_before)
            assert result.created == args.import_items, result
            return rss_mib("VmHWM") - before

        wall, cpu, grown = median_of(args.repeat, once)
        runs = {name: list(times) for name, times in parts.items()}  # before a profiled run adds to them
        if args.profile:
            profiled(args.profile, f"import of {args.import_items:,} items", once)
    finally:
        for (owner, name), function in originals.items():
            setattr(owner, name, function)
        connection.__dict__.pop("commit", None)
    # Per run: the sum over its batches; then the median of the runs.
    split = {name: statistics.median(_per_run(times, args.repeat)) for name, times in runs.items()}
    report(
        f"import {args.import_items:,} items (JSONL, {len(data) / 1e6:.0f} MB)",
        wall,
        cpu,
        f"{args.import_items / wall:,.0f} items/s; reading+validation {split['_validate_batch']:.3f} s, database checks"
        f" {split['check_against_project']:.3f} s, rows and COPY text built and handed over {split['write']:.3f} s"
        f" (sums over the batches), the wait for the COPY's end {split.get('close', 0.0):.3f} s, the commit"
        f" {split['commit']:.3f} s; PostgreSQL's CPU (the import's backend) {statistics.median(server_cpu):.3f} s;"
        f" peak memory +{grown:.0f} MiB over the file held",
    )


def time_import_in_process(args, report) -> None:
    """The import of --import-items rows in a process of its own, `nice -n 10`, one run per
    way of handing the file over (--import-process): peak resident memory before and after
    the import (the process's VmHWM: the interpreter and Django in the first), wall and CPU
    seconds."""
    import subprocess
    import tempfile

    from annotation.models import Job, Project

    with tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False) as handle:
        for start in range(0, args.import_items, 100_000):
            handle.write(import_file(min(100_000, args.import_items - start), first=start))
        path = handle.name
    size = os.path.getsize(path)
    try:
        for mode in args.import_process.split(","):
            target = Project.objects.create(slug=f"proc-{time.monotonic_ns()}", name="imp", kind="nli_relabel",
                                            language="he", settings={"consensus_k": 2, "consensus_n": 3})  # fmt: skip
            where = target.slug
            if mode == "job":
                job = Job.objects.create(kind="import", project=target, status="running",
                                         params={"format": "jsonl", "filename": "i.jsonl"}, input_data=b"")  # fmt: skip
                store_job_input(job.pk, path)
                where = f"job:{job.pk}"
            command = ["nice", "-n", "10", sys.executable, __file__, "--reuse", "--keep", "--database", args.database,
                       "--server", args.server, "--child-import", path, "--child-target", where,
                       "--import-process", mode, "--import-items", str(args.import_items)]  # fmt: skip
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode:
                raise SystemExit(f"the import's process failed:\n{done.stderr[-3000:]}")
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            report(
                f"import {args.import_items:,} items in its own process, file as {mode}",
                figures["wall"],
                figures["cpu"],
                f"{size / 1e6:.0f} MB; peak resident {figures['before']:.0f} MiB before the import,"
                f" {figures['after']:.0f} MiB after (+{figures['after'] - figures['before']:.0f})",
            )
    finally:
        os.unlink(path)


def store_job_input(job_id: int, path: str) -> None:
    """The file as the job's stored input, appended 64 MiB at a time: a bytea travels to
    PostgreSQL as hex text, and one statement of a 460 MB file (the million rows) is past
    the server's 1 GB limit on a single allocation."""
    from django.db import connection

    from annotation.models import Job

    with open(path, "rb") as handle, connection.cursor() as cursor:
        while piece := handle.read(64 << 20):
            cursor.execute(
                f"UPDATE {Job._meta.db_table} SET input_data = input_data || %s WHERE id = %s", [piece, job_id]
            )


def child_import(args) -> int:
    """The process of its own of `time_import_in_process`: one import, its figures as JSON."""
    from annotation.models import Job, Project
    from annotation.services import imports

    def peak_mib() -> float:
        # VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec, so a process started
        # by this script would start at this script's own size; VmHWM is the new image's.
        return rss_mib("VmHWM")

    mode = args.import_process
    # The stored file is read by the import (its fetch is part of what the import holds).
    job = Job.objects.defer("input_data").get(pk=int(args.child_target.split(":")[1])) if mode == "job" else None
    project = None if job else Project.objects.get(slug=args.child_target)
    before = peak_mib()
    started, started_cpu = time.perf_counter(), time.process_time()
    if job is not None:
        result = imports.items_import_job(job)
        assert "errors" not in result, result["errors"][:3]
        created = result["created"]
    else:
        with open(args.child_import, "rb") as handle:
            data = handle.read() if mode == "bytes" else handle
            created = imports.items_import(project=project, data=data, fmt="jsonl", filename="i.jsonl").created
    figures = {"wall": time.perf_counter() - started, "cpu": time.process_time() - started_cpu}
    assert created == args.import_items, created
    print(json.dumps({**figures, "before": before, "after": peak_mib()}), flush=True)
    return 0


def profiled(top: int, name: str, action) -> None:
    """One more run of `action` under cProfile: the `top` functions by their own time, then
    by their cumulative time (a profiled run is slower; compare shares, not seconds)."""
    import cProfile
    import pstats

    profile = cProfile.Profile()
    profile.runcall(action)
    for order in ("tottime", "cumulative"):
        print(f"\n  profile of one {name}, by {order}:")
        pstats.Stats(profile, stream=sys.stdout).strip_dirs().sort_stats(order).print_stats(top)


def _per_run(times: list[float], runs: int) -> list[float]:
    size = len(times) // runs
    return [sum(times[i * size : (i + 1) * size]) for i in range(runs)]


def copy_text(n: int) -> tuple[str, str, float]:
    """The COPY text the import writes for `n` new items of a fresh project, its columns,
    and the CPU seconds spent building it."""
    from unittest import mock

    from django.db import connection

    from annotation.kinds.registry import get_kind
    from annotation.models import Project
    from annotation.services import imports

    project = Project.objects.create(slug=f"floor-{time.monotonic_ns()}", name="floor", kind="nli_relabel",
                                     language="he", settings={})  # fmt: skip
    kind = get_kind(project.kind)
    captured = {}

    class Capture:
        def copy_expert(self, sql, buffer):
            captured["sql"], captured["text"] = sql, buffer.getvalue()

    class Cursor:
        cursor = Capture()

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    rows = []
    for i in range(n):
        payload = json.loads(payload_of(i))
        rows.append({"project_id": project.pk, "external_id": f"f{i}", "payload": payload,
                     "reference_label": LABELS[i % 3], "group": "", "derived_group": kind.derived_group(payload),
                     "split": "", "author_id": None, "position": i + 1})  # fmt: skip
    with mock.patch.object(connection, "cursor", Cursor):
        started = time.process_time()
        imports.items_copy(rows)
        built = time.process_time() - started
    columns = captured["sql"].split("(", 1)[1].split(")", 1)[0]
    return captured["text"], columns, built


def time_floor(args, report) -> None:
    """COPY of the import's rows into a bare table shaped like the item table, then with
    each of the item table's indexes and foreign keys: what PostgreSQL itself needs."""
    from django.db import connection

    text, columns, built = copy_text(args.import_items)
    report(f"Python: the COPY text of {args.import_items:,} items", built, built, f"{len(text) / 1e6:.1f} MB")
    raw = connection.cursor().cursor.connection  # psycopg2's, outside Django's transaction handling
    cursor = raw.cursor()
    # The item table's own indexes, read from the catalogue (so the floor follows the
    # model), each added in turn after the primary key.
    cursor.execute(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'annotation_item'"
        " AND indexname <> 'annotation_item_pkey' ORDER BY indexname"
    )
    indexes = [
        (
            f"+ {name}",
            definition.replace(f"INDEX {name} ON", "INDEX ON").replace("public.annotation_item ", f"{FLOOR_TABLE} "),
        )
        for name, definition in cursor.fetchall()
    ]
    pieces = [
        ("bare table (no index, no constraint)", None),
        ("+ primary key", f"ALTER TABLE {FLOOR_TABLE} ADD PRIMARY KEY (id)"),
        *indexes,
        ("+ foreign keys (checked at commit)", f"ALTER TABLE {FLOOR_TABLE} "
         "ADD FOREIGN KEY (project_id) REFERENCES annotation_project(id) DEFERRABLE INITIALLY DEFERRED, "
         "ADD FOREIGN KEY (author_id) REFERENCES auth_user(id) DEFERRABLE INITIALLY DEFERRED, "
         f"ADD FOREIGN KEY (probe_of_id) REFERENCES {FLOOR_TABLE}(id) DEFERRABLE INITIALLY DEFERRED"),
    ]  # fmt: skip
    cursor.execute(f"DROP TABLE IF EXISTS {FLOOR_TABLE}")
    cursor.execute(f"CREATE TABLE {FLOOR_TABLE} (LIKE annotation_item INCLUDING DEFAULTS INCLUDING IDENTITY)")
    raw.commit()
    try:
        for name, sql in pieces:
            if sql:
                cursor.execute(f"TRUNCATE {FLOOR_TABLE}")
                cursor.execute(sql)
                raw.commit()

            def load():
                cursor.execute(f"TRUNCATE {FLOOR_TABLE}")
                raw.commit()
                started = time.perf_counter()
                cursor.copy_expert(f"COPY {FLOOR_TABLE} ({columns}) FROM STDIN", io.StringIO(text))
                raw.commit()
                return time.perf_counter() - started

            seconds = statistics.median(load() for _ in range(args.repeat))
            report(f"PostgreSQL COPY {args.import_items:,} rows, {name}", seconds, None, "")
    finally:
        cursor.execute(f"DROP TABLE IF EXISTS {FLOOR_TABLE}")
        raw.commit()


def time_export(args, report, n_items: int) -> None:
    from annotation.models import Project
    from annotation.selectors.exports import chunks_with_facts
    from annotation.services.exports import export_prepare, export_stream

    project = Project.objects.get(slug=SLUG)

    def reads():
        spec = export_prepare(project=project, fmt="jsonl", status="all")
        from annotation.selectors.exports import export_items_queryset

        return sum(len(chunk) for chunk, _facts in chunks_with_facts(project, export_items_queryset(spec)))

    # The reads alone (items and each chunk's facts, no record built or encoded): what
    # the database and decoding cost, beside which the records' Python is the rest.
    if not args.only or "reads" in args.only.split(","):
        wall, cpu, _ = median_of(args.repeat, reads)
        report("export reads only (items and facts)", wall, cpu, f"{n_items / wall:,.0f} items/s")
    for fmt in args.formats.split(",") if not args.only or "export" in args.only.split(",") else ():

        def once(fmt=fmt):
            spec = export_prepare(project=project, fmt=fmt, status="all")
            size = lines = 0
            reset_peak()
            before, at_tenth = rss_mib(), None
            for chunk in export_stream(spec):
                size += len(chunk)
                lines += chunk.count(b"\n")
                if at_tenth is None and lines >= n_items // 10:
                    at_tenth = rss_mib()
            assert lines >= n_items, (fmt, lines)
            return size, before, at_tenth, rss_mib(), rss_mib("VmHWM")

        wall, cpu, (size, before, at_tenth, after, peak) = median_of(args.repeat, once)
        if args.profile:
            profiled(args.profile, f"{fmt.upper()} export", once)
        report(
            f"export {fmt.upper()}, every item",
            wall,
            cpu,
            f"{n_items / wall:,.0f} items/s, {size / 1e6:.1f} MB; resident {before:.0f} MiB before,"
            f" {at_tenth:.0f} at {n_items // 10:,} items, {after:.0f} at the end, peak {peak:.0f}",
        )


def explain_chunk(n_items: int) -> None:
    """EXPLAIN ANALYZE of one export chunk's facts queries, the chunk in the middle."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotation.models import Item, Project
    from annotation.selectors import exports

    project = Project.objects.get(slug=SLUG)
    start = n_items // 2
    ids = list(
        Item.objects.filter(project=project)
        .order_by("position", "id")
        .values_list("id", flat=True)[start : start + exports.CHUNK_SIZE]
    )
    items = Item.objects.filter(project=project, id__in=ids).order_by("position", "id")
    with CaptureQueriesContext(connection) as captured:
        for _chunk, _facts in exports.chunks_with_facts(project, items):
            pass
    with connection.cursor() as cursor:
        for query in captured:
            sql = query["sql"]
            if not sql.startswith("SELECT") or '"annotation_item"' in sql.split("FROM", 1)[1].split("WHERE", 1)[0]:
                continue
            cursor.execute(f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) {sql}")
            plan = [row[0] for row in cursor.fetchall()]
            print(f"\n  {sql[:110]}…")
            for line in plan:
                print(f"    {line if len(line) < 120 else line[:100] + ' … ' + line[-15:]}")


def main() -> int:
    args = parse_args()
    url = f"{args.server}/{args.database}"
    if not args.reuse:
        admin_sql(args.server, f"DROP DATABASE IF EXISTS {args.database}")
        admin_sql(args.server, f"CREATE DATABASE {args.database}")
    os.environ["DATABASE_URL"] = url
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.local"
    import django

    django.setup()
    from django.conf import settings

    settings.MASHOV_IMPORT_JOB_ROWS = 10**9  # the whole import in the call, as the worker runs it
    settings.MASHOV_MAX_IMPORT_BYTES = 10**11  # a million rows are more than the upload cap
    settings.DEBUG = False  # DEBUG's query log would grow with every query of a large run
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from annotation.models import Item, Job, Membership, Project
    from annotation.services.aggregation import aggregation_compute_job

    if args.child_import:
        return child_import(args)
    only = set(filter(None, args.only.split(",")))
    rows: list[tuple] = []

    def report(name, wall, cpu, note):
        rows.append((name, wall, cpu, note))
        cpu_text = "" if cpu is None else f"{cpu:>8.3f} s CPU"
        print(f"  {name:<58}{wall:>8.3f} s {cpu_text:>14}  {note}", flush=True)

    try:
        call_command("migrate", verbosity=0)
        if not args.reuse:
            started = time.perf_counter()
            User = get_user_model()
            supervisor = User.objects.create_user("bench-sup")
            users = [User.objects.create_user(f"coder{i:02d}") for i in range(args.annotators)]
            project = Project.objects.create(
                slug=SLUG, name=SLUG, kind="nli_relabel", language="he", created_by=supervisor,
                settings={"consensus_k": args.votes // 2 + 1, "consensus_n": args.votes, "revision_rounds": 0},
            )  # fmt: skip
            Membership.objects.bulk_create(
                Membership(project=project, user=u, role="annotator", status="active") for u in users
            )
            build(project, users, args.items, args.votes)
            job = Job.objects.create(kind="aggregation", project=project, status="running")
            aggregation_compute_job(job)  # the aggregates every JSONL record carries
            print(f"built {args.items:,} items × {args.votes} votes in {time.perf_counter() - started:.1f} s")
        n_items = Item.objects.filter(project__slug=SLUG).count()
        print(f"\n{n_items:,} items; load average {os.getloadavg()[0]:.1f}; median of {args.repeat}", flush=True)
        if (not only or "import" in only) and args.import_process:
            time_import_in_process(args, report)
        elif not only or "import" in only:
            time_import(args, report)
        if not only or "floor" in only:
            time_floor(args, report)
        if not only or only & {"reads", "export"}:
            time_export(args, report, n_items)
        if args.explain:
            explain_chunk(n_items)
        print(f"load average after: {os.getloadavg()[0]:.1f}")
    finally:
        from django.db import connection

        connection.close()
        if not args.keep:
            admin_sql(args.server, f"DROP DATABASE IF EXISTS {args.database}")
    print(f"\n| {n_items:,} items × {args.votes} votes | median s | CPU s (this process) | |")
    print("|---|---|---|---|")
    for name, wall, cpu, note in rows:
        print(f"| {name} | {wall:.3f} | {'' if cpu is None else f'{cpu:.3f}'} | {note} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
