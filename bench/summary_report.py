"""Benchmark: where the worker's figures run of a large `summary_rating` project goes, after
a few changed items, its report kept as per-item counts (annotation/kinds/summary/counts.py).

`build` makes the scratch database `mashov_bench_summary_report` on --server with a
project of --items articles of four systems' summaries, each rated by three of 12 raters
(bench/report_counts.py's builder), and stores the figures over every item. `run` then,
--rounds times, edits a rater's ratings on --changed items and times
`project_figures_store(project, changed ids)` (this process's CPU seconds, and the wall
seconds, PostgreSQL's share in the latter), and within it the report's parts that follow
the rated summaries rather than the changed items: the bootstrap intervals of the system ×
criterion mean ratings, the read of the items' (mean rating, score) pairs from their
shares, the correlations over those pairs, the report's sections from the summed counts
and the pairs (counts.summary_sections, which computes the intervals and correlations)
and the whole report from the counts (counts.summary_sections_from_counts: the read
and the sorting of the pairs are its share beyond the sections). `drop` drops the database. A script, not a
test; `run` leaves the data in place, so that two checkouts of the code can be timed in
turn on the same database:

    python bench/summary_report.py build --items 10000
    python bench/summary_report.py run [--rounds 3] [--changed 100]
    python bench/summary_report.py drop

Each line prints the load average (the machine may be shared). A process's first round
also imports scipy.stats (a second or two, in whichever part first needs it); a worker
imports it once, so the later rounds are the figures a worker's runs see.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from report_counts import build_summary, change_summary, load_average, timed  # noqa: E402 (bench/ on sys.path)
from scratch import admin_sql  # noqa: E402


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("build", "run", "drop"))
    parser.add_argument("--items", type=int, default=10_000, help="articles to build")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--changed", type=int, default=100)
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--database", default="mashov_bench_summary_report")
    return parser.parse_args()


class Stopwatch:
    """Wall seconds spent in the functions it wraps, summed per part."""

    def __init__(self):
        self.seconds: dict[str, float] = {}

    def add(self, part: str, seconds: float) -> None:
        self.seconds[part] = self.seconds.get(part, 0.0) + seconds

    def function(self, part: str, function):
        def timed_call(*args, **kwargs):
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.add(part, time.perf_counter() - started)

        return timed_call

    def iterator(self, part: str, function):
        """`function`'s iterator, timed only inside its own steps (not its consumer's)."""

        def timed_iterator(*args, **kwargs):
            started = time.perf_counter()
            iterator = iter(function(*args, **kwargs))
            self.add(part, time.perf_counter() - started)
            while True:
                started = time.perf_counter()
                try:
                    value = next(iterator)
                except StopIteration:
                    self.add(part, time.perf_counter() - started)
                    return
                self.add(part, time.perf_counter() - started)
                yield value

        return timed_iterator


def watch(stopwatch: Stopwatch) -> None:
    """Wrap the report's parts in the modules that call them (whichever interval function
    this checkout's report calls)."""
    from annotation.kinds.summary import counts, results

    for name in ("mean_bounded_interval", "counted_mean_bounded_interval"):
        if hasattr(results, name):
            setattr(results, name, stopwatch.function("bootstrap intervals", getattr(results, name)))
    results.correlations = stopwatch.function("correlations", results.correlations)
    counts._item_pairs = stopwatch.iterator("pairs read (query and rows)", counts._item_pairs)
    counts.summary_sections = stopwatch.function("sections from the sums and pairs", counts.summary_sections)
    counts.summary_sections_from_counts = stopwatch.function(
        "the whole report from the counts", counts.summary_sections_from_counts
    )


def main() -> int:
    args = parse_args()
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.local"
    os.environ["DATABASE_URL"] = f"{args.server}/{args.database}"
    if args.action == "drop":
        admin_sql(args.server, f"DROP DATABASE IF EXISTS {args.database}")
        return 0
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from annotation.models import Item, Project
    from annotation.services.figures import project_figures_store

    if args.action == "build":
        admin_sql(args.server, f"DROP DATABASE IF EXISTS {args.database}")
        admin_sql(args.server, f"CREATE DATABASE {args.database}")
        call_command("migrate", verbosity=0)
        started = time.perf_counter()
        project, _items, _probes = build_summary(args.items)
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")
        print(f"summary_rating: {args.items:,} items built in {time.perf_counter() - started:.0f} s")
        cpu, wall = timed(lambda: project_figures_store(project))
        print(f"  run over every item: {cpu:.2f} s CPU, {wall:.2f} s wall (load {load_average()})")
        return 0

    project = Project.objects.get(slug="counts")
    items = list(Item.objects.filter(project=project).order_by("position"))
    stopwatch = Stopwatch()
    watch(stopwatch)
    print(f"summary_rating, {len(items):,} items, code at {ROOT.name}")
    for round_ in range(args.rounds):
        ids = change_summary(items, args.changed, int(time.time()) % 100_000 + round_)
        stopwatch.seconds.clear()
        cpu, wall = timed(lambda ids=ids: project_figures_store(project, ids))
        parts = ", ".join(f"{part} {seconds:.2f} s" for part, seconds in stopwatch.seconds.items())
        print(
            f"  run after {len(ids)} changed items: {cpu:.2f} s CPU, {wall:.2f} s wall"
            f" (load {load_average()}); of which {parts}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
