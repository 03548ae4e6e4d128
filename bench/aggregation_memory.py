"""Benchmark: the aggregation job's peak memory per process on a large project.

Runs one aggregation of the `scale` project of a database that `bench/scale.py --keep`
built, in this process alone, and prints the process's peak resident memory (VmHWM)
before and after the run, the run's seconds, its CPU seconds in this process and in its
PostgreSQL backend (read from /proc: the server on this machine) and the load average;
`--profile N` prints the N functions of most cumulative CPU (cProfile, which slows the
Python parts several times over: compare shares, not seconds). A script, not a test:

    python bench/scale.py --items 100000 --keep --only none --database mashov_bench_memory
    python bench/aggregation_memory.py --database mashov_bench_memory [--incremental 300] [--first]

`--full` (the default) runs the four methods over every item, then the stored figures over
every item, as the job's scheduled full run does; `--incremental N` records N changed items
first and runs the job's incremental path; `--figures` times only the stored figures over
every item (services.figures.project_figures_store); `--without-figures` runs the full
aggregation without storing the figures (the methods, the aggregates' and competences' writes
and the chosen method's decisions alone); `--first` empties what the runs stored (the
aggregates, competences, items' shares, adjudication reasons, filter counts and stored
figures) before a full run, to time the project's first run again on the same database.

Django runs with DEBUG off, as on the worker: with DEBUG on it keeps the text of the last
9,000 statements (`connection.queries`), the bulk inserts of a first run whole, which at
1M items more than doubled that run's peak (`--debug` keeps it, as config.settings.local has it).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def status(field: str) -> float:
    """A /proc/self/status memory field in MiB."""
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def backend_cpu(pid: int) -> float:
    """CPU seconds (user + system) of this process's PostgreSQL backend, from /proc (the
    server on this machine), 0.0 where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--database", default="mashov_bench_scale")
    parser.add_argument("--incremental", type=int, default=0, help="items changed before an incremental run")
    parser.add_argument("--figures", action="store_true", help="only the stored figures over every item")
    parser.add_argument("--without-figures", action="store_true", help="the full aggregation, no stored figures")
    parser.add_argument("--first", action="store_true", help="empty what the runs stored, then a full run")
    parser.add_argument("--debug", action="store_true", help="keep Django's DEBUG query log (local settings)")
    parser.add_argument("--profile", type=int, default=0, help="print the N functions of most cumulative CPU")
    args = parser.parse_args()
    os.environ["DATABASE_URL"] = f"{args.server}/{args.database}"
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.local"
    os.environ["DEBUG"] = "true" if args.debug else "false"
    import django

    django.setup()
    from django.db import connection

    from annotation.models import (
        AdjudicationReason,
        AggregationChange,
        AnnotatorCompetence,
        Item,
        ItemAggregate,
        ItemFigures,
        ItemValueCount,
        Project,
        ProjectFigures,
    )
    from annotation.services.aggregation import aggregation_changes_record, aggregation_compute_for_project
    from annotation.services.figures import project_figures_store

    project = Project.objects.get(slug="scale")
    if args.first:
        # In SQL: a queryset's delete() would read the rows into this process first.
        with connection.cursor() as cursor:
            cursor.execute(
                f"DELETE FROM {ItemAggregate._meta.db_table} WHERE item_id IN"
                f" (SELECT id FROM {Item._meta.db_table} WHERE project_id = %s)",
                [project.pk],
            )
            for model in (AnnotatorCompetence, ItemFigures, AdjudicationReason, ItemValueCount, ProjectFigures):
                cursor.execute(f"DELETE FROM {model._meta.db_table} WHERE project_id = %s", [project.pk])
            cursor.execute(f"DELETE FROM {AggregationChange._meta.db_table} WHERE project_id = %s", [project.pk])
            for model in (ItemAggregate, ItemFigures, AdjudicationReason, ItemValueCount):
                cursor.execute(f"VACUUM ANALYZE {model._meta.db_table}")
    items = Item.objects.filter(project=project).count()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    baseline = status("VmHWM")
    profiler = None
    if args.profile:
        import cProfile

        profiler = cProfile.Profile(time.process_time)
        profiler.enable()
    started = time.perf_counter()
    cpu_started, backend_started = time.process_time(), backend_cpu(backend)
    if args.figures:
        what = "stored figures, every item"
        project_figures_store(project)
    elif args.incremental:
        what = f"aggregation, incremental ({args.incremental} items changed)"
        ids = list(Item.objects.filter(project=project).order_by("pk").values_list("pk", flat=True)[: args.incremental])
        aggregation_changes_record(project.pk, ids)
        result = aggregation_compute_for_project(project)
        assert result["full"] is False, result
    elif args.without_figures:
        from annotation.services import aggregation

        what = "aggregation, full run (4 methods), no stored figures"
        aggregation.project_figures_store = lambda *args, **kwargs: None
        aggregation_compute_for_project(project, full=True)
    else:
        what = f"aggregation, {'first ' if args.first else ''}full run (4 methods) + stored figures"
        aggregation_compute_for_project(project, full=True)
    seconds = time.perf_counter() - started
    cpu, postgres = time.process_time() - cpu_started, backend_cpu(backend) - backend_started
    if profiler is not None:
        import pstats

        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.profile)
    peak = status("VmHWM")
    print(
        f"{items:,} items; {what}: {seconds:.1f} s, {cpu:.1f} s CPU in the process, {postgres:.1f} s in its"
        f" PostgreSQL backend; peak RSS {peak:.0f} MiB (baseline after start-up {baseline:.0f} MiB, run added"
        f" {peak - baseline:.0f} MiB); load {' '.join(f'{load:.1f}' for load in os.getloadavg())}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
