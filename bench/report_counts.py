"""Benchmark: the worker's figures run after a few changed items on a large project, its
report sections kept as per-item counts (`Kind.report_counts`) or read whole
(`Kind.report_sections`, as before they were counted).

--kind phrase_pair (the default) builds a project of --items ordinary items and a tenth as
many reversed probes, three labels each from 12 annotators (the probes one); --kind
summary_rating builds --items articles of four systems' summaries with the file's scores
and intrinsic measures, each summary rated by three of 12 raters. It stores the figures
over every item, then, per variant (counted; or the report read whole, as before it was
counted — for phrase_pair the probes' coherence too), changes --changed items (a label
edited on each, a tenth of them probes; a summary rating edited) and times
`project_figures_store(project, changed ids)`: this process's CPU seconds and the wall
seconds (PostgreSQL's share in the latter); and the report sections alone, computed whole
and from the kept counts. A script, not a test:

    python bench/report_counts.py --items 10000 100000 [--kind summary_rating] [--changed 100] [--keep]

It creates the scratch database `mashov_bench_report_counts` on --server per size and
drops it unless --keep. Each line prints the load average (the machine may be shared).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from scratch import admin_sql  # noqa: E402 (bench/ is on sys.path)

LABELS = ("EQUIVALENT", "FORWARD", "BACKWARD", "OPPOSITION", "SIMILAR", "RELATED", "UNRELATED")
SOURCES = ("images", "headlines", "answers-students")
ANNOTATORS = 12


def report_bench_args(description: str, database: str, *, kinds: tuple[str, ...] = ()) -> argparse.Namespace:
    """The options every report bench takes (and --kind where it builds several kinds)."""
    parser = argparse.ArgumentParser(description=description.split("\n\n")[0])
    parser.add_argument("--items", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--changed", type=int, default=100)
    if kinds:
        parser.add_argument("--kind", choices=kinds, default=kinds[0])
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--database", default=database)
    parser.add_argument("--keep", action="store_true", help="leave the last database")
    return parser.parse_args()


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def build(n_items: int):
    """The project, its items, probes, claims and labels (bulk inserts through the ORM)."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from annotation.models import Annotation, Assignment, Item, Membership, Project

    rng = random.Random(7)
    User = get_user_model()
    supervisor = User.objects.create_user("bench-sup")
    people = [User.objects.create_user(f"coder{i:02d}") for i in range(ANNOTATORS)]
    project = Project.objects.create(
        slug="counts", name="counts", kind="phrase_pair", language="en", created_by=supervisor,
        settings={"probe_rate": 0.1},
    )  # fmt: skip
    Membership.objects.bulk_create(
        Membership(project=project, user=user, role="annotator", status="active") for user in people
    )
    originals = Item.objects.bulk_create(
        (Item(project=project, external_id=f"p{i}", position=i, status="complete",
              payload={"left": f"a {i}", "right": f"b {i}", "source": SOURCES[i % len(SOURCES)]},
              reference_label=rng.choice(LABELS) if i % 4 else "")
         for i in range(n_items)),
        batch_size=5000,
    )  # fmt: skip
    probes = Item.objects.bulk_create(
        (Item(project=project, external_id=f"p{i}~rev", position=n_items + i, status="complete",
              probe_of=originals[i], payload={"left": f"b {i}", "right": f"a {i}"})
         for i in range(0, n_items, 10)),
        batch_size=5000,
    )  # fmt: skip
    now = timezone.now()
    voters = {item.pk: rng.sample(people, 3) for item in originals}
    claims = [
        Assignment(project=project, item=item, annotator=person, round=1, status="submitted",
                   claimed_at=now, expires_at=now, submitted_at=now)
        for item in originals for person in voters[item.pk]
    ] + [
        Assignment(project=project, item=probe, annotator=voters[probe.probe_of_id][0], round=1,
                   status="submitted", claimed_at=now, expires_at=now, submitted_at=now)
        for probe in probes
    ]  # fmt: skip
    claims = Assignment.objects.bulk_create(claims, batch_size=5000)
    Annotation.objects.bulk_create(
        (Annotation(assignment=claim, item_id=claim.item_id, annotator_id=claim.annotator_id, round=1,
                    value={"label": rng.choice(LABELS)}) for claim in claims),
        batch_size=5000,
    )  # fmt: skip
    return project, originals, probes


def change(items, probes, n: int, offset: int) -> list[int]:
    """A label edited on each of `n` items, a tenth of them probes; their ids."""
    from annotation.models import Annotation

    chosen = [probes[(offset + i) % len(probes)] if i % 10 == 0 else items[(offset * 7 + i * 13) % len(items)]
              for i in range(n)]  # fmt: skip
    for index, item in enumerate(chosen):
        Annotation.objects.filter(item=item).update(value={"label": LABELS[(offset + index) % len(LABELS)]})
    return sorted({item.pk for item in chosen})


SYSTEMS = ("mt5", "mbart", "gpt", "reference")


def summary_rating(rng: random.Random) -> dict:
    return {"coherence": rng.randint(1, 5), "completeness": rng.randint(1, 5),
            "errors": rng.sample(("repetition", "hallucination", "copy_from_article"), rng.choice((0, 0, 1)))}  # fmt: skip


def build_summary(n_items: int):
    """A summary_rating project: four systems' summaries per article, with the file's
    ROUGE scores and intrinsic measures, rated by three of the raters."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from annotation.models import Annotation, Assignment, Item, Membership, Project

    rng = random.Random(7)
    User = get_user_model()
    supervisor = User.objects.create_user("bench-sup")
    people = [User.objects.create_user(f"rater{i:02d}") for i in range(ANNOTATORS)]
    project = Project.objects.create(
        slug="counts", name="counts", kind="summary_rating", language="he", created_by=supervisor, settings={}
    )
    Membership.objects.bulk_create(
        Membership(project=project, user=user, role="annotator", status="active") for user in people
    )

    def measures() -> dict:
        return {"novel_ngrams": {"1": rng.random(), "2": rng.random()}, "redundancy": {"1": rng.random()},
                "compression_ratio": rng.uniform(5, 20), "rouge": {"rouge1": rng.random(), "rouge2": rng.random(),
                "rougeL": rng.random()}}  # fmt: skip

    items = Item.objects.bulk_create(
        (Item(project=project, external_id=f"a{i}", position=i, status="complete",
              payload={"article": f"article {i} " * 40, "order": rng.sample(range(4), 4),
                       "summaries": [{"system": system, "text": f"summary {i} {system}",
                                      "scores": {"rouge1": rng.random(), "rouge2": rng.random()}}
                                     for system in SYSTEMS]},
              computed={"intrinsic": {"summaries": [measures() for _ in SYSTEMS]}})
         for i in range(n_items)),
        batch_size=2000,
    )  # fmt: skip
    now = timezone.now()
    claims = Assignment.objects.bulk_create(
        (Assignment(project=project, item=item, annotator=person, round=1, status="submitted",
                    claimed_at=now, expires_at=now, submitted_at=now)
         for item in items for person in rng.sample(people, 3)),
        batch_size=5000,
    )  # fmt: skip
    Annotation.objects.bulk_create(
        (Annotation(assignment=claim, item_id=claim.item_id, annotator_id=claim.annotator_id, round=1,
                    value={"ratings": {str(d): summary_rating(rng) for d in range(4)}}) for claim in claims),
        batch_size=5000,
    )  # fmt: skip
    return project, items, []


def change_summary(items, n: int, offset: int) -> list[int]:
    """A rater's ratings edited on each of `n` items; their ids."""
    from annotation.models import Annotation

    rng = random.Random(offset)
    chosen = [items[(offset * 7 + i * 13) % len(items)] for i in range(n)]
    for item in chosen:
        first = Annotation.objects.filter(item=item).order_by("pk").first()
        assert first is not None
        first.value = {"ratings": {str(d): summary_rating(rng) for d in range(4)}}
        first.save(update_fields=["value"])
    return sorted({item.pk for item in chosen})


def timed(action) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    action()
    return time.process_time() - cpu, time.perf_counter() - wall


def report_bench(
    args: argparse.Namespace,
    kind_name: str,
    build,
    change,
    *,
    unit: str = "items",
    variants=(("counted", True), ("read whole", False)),
    read_whole_too=None,
) -> int:
    """Per size of `args.items`, in a scratch database: `build(n)` (the project first in
    what it returns), the figures stored over every item, the report sections alone
    computed whole and from the kept counts, then per variant (the report counted, or read
    whole as before it was counted) `change(built, n, offset)` (the changed ids) and the
    run after it timed. `read_whole_too(kind_class, counted)` switches what else a variant
    reads whole (a context manager), where the kind keeps more than its report."""
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.local"
    os.environ["DATABASE_URL"] = f"{args.server}/{args.database}"
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from annotation.kinds.registry import get_kind
    from annotation.selectors.figures import FIGURE_SUMS, stored_figures
    from annotation.services.figures import project_figures_store

    kind_class = type(get_kind(kind_name))
    for n_items in args.items:
        connection.close()
        admin_sql(args.server, f"DROP DATABASE IF EXISTS {args.database}")
        admin_sql(args.server, f"CREATE DATABASE {args.database}")
        try:
            call_command("migrate", verbosity=0)
            started = time.perf_counter()
            built = build(n_items)
            project = built[0]
            with connection.cursor() as cursor:
                cursor.execute("VACUUM ANALYZE")
            print(f"{kind_name}: {n_items:,} {unit} built in {time.perf_counter() - started:.0f} s")
            cpu, wall = timed(lambda: project_figures_store(project))
            print(f"  run over every item: {cpu:.2f} s CPU, {wall:.2f} s wall (load {load_average()})")
            kind = kind_class()
            sums = stored_figures(project, FIGURE_SUMS)
            counts = sums["report"]
            print(
                f"  kept sums: {len(json.dumps(sums)):,} bytes of JSON, {sum(map(len, counts.values())):,} report keys"
            )
            for name, action in (
                ("read whole (Kind.report_sections)", lambda: kind.report_sections(project)),
                ("from the kept counts", lambda: kind.report_sections_from_counts(project, counts)),
            ):
                cpu, wall = timed(action)
                print(f"  the report sections alone, {name}: {cpu:.2f} s CPU, {wall:.2f} s wall")
            for offset, (name, counted) in enumerate(variants):
                ids = change(built, args.changed, offset * 1000)
                kind_class.report_counted = counted
                switch = read_whole_too(kind_class, counted) if read_whole_too else contextlib.nullcontext()
                try:
                    with switch:
                        cpu, wall = timed(lambda ids=ids: project_figures_store(project, ids))
                finally:
                    kind_class.report_counted = True
                print(
                    f"  run after {len(ids)} changed {unit}, report {name}: {cpu:.2f} s CPU, {wall:.2f} s wall"
                    f" (load {load_average()})"
                )
        finally:
            connection.close()
            if not args.keep or n_items != args.items[-1]:
                admin_sql(args.server, f"DROP DATABASE IF EXISTS {args.database}")
    return 0


@contextlib.contextmanager
def _phrase_coherence_read_whole(kind_class, counted: bool):
    """phrase_pair read whole as before it was counted: the probes too, for the coherence
    and the incoherent probes."""
    kept = kind_class.coherence_from_counts
    if not counted:
        kind_class.coherence_from_counts = lambda self, counts: None
    try:
        yield
    finally:
        kind_class.coherence_from_counts = kept


def main() -> int:
    args = report_bench_args(__doc__, "mashov_bench_report_counts", kinds=("phrase_pair", "summary_rating"))
    if args.kind == "phrase_pair":
        return report_bench(
            args,
            "phrase_pair",
            build,
            lambda built, n, offset: change(built[1], built[2], n, offset),
            read_whole_too=_phrase_coherence_read_whole,
        )
    return report_bench(
        args, "summary_rating", build_summary, lambda built, n, offset: change_summary(built[1], n, offset)
    )


if __name__ == "__main__":
    sys.exit(main())
