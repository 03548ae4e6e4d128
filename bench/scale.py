"""Benchmark: the supervisor's pages and reports, the exports and the import on a large
`nli_relabel` project.

Builds the project quickly — items, assignments, annotations, consensus outcomes and
decisions written with COPY into the real tables, then VACUUM ANALYZE — runs the project's
aggregation job once (as the worker would after the rounds closed; it stores the figures
the pages read), then times each page in-process with Django's test client, signed in as
the project's supervisor: median seconds of --repeat, the number of queries and how much
the process's resident memory grew. Then the exports (JSONL and CSV, `status=all`, every
byte read) and an import of --import-items new items. A script, not a test:

    python bench/scale.py --items 100000 [--votes 3] [--repeat 3] [--keep] [--reuse]

Items: 90 % accepted by a 2-of-3 rule, 5 % removed (failed their round, so they wait in the
adjudication queue), 5 % open with one vote. It creates the scratch database
`mashov_bench_scale` on --server and drops it unless --keep; --reuse times an existing one.
"""

from __future__ import annotations

import argparse
import gc
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
from scratch import admin_sql, copy_rows  # noqa: E402

LABELS = ("entailment", "neutral", "contradiction")
SLUG = "scale"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--votes", type=int, default=3)
    parser.add_argument("--annotators", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--import-items", type=int, default=10_000)
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--database", default="mashov_bench_scale")
    parser.add_argument("--keep", action="store_true", help="leave the database for another run")
    parser.add_argument("--reuse", action="store_true", help="time an existing database (built with --keep)")
    parser.add_argument("--only", default="", help="comma-separated names of the steps to time")
    parser.add_argument("--changed", type=int, default=100, help="items changed before an incremental aggregation")
    return parser.parse_args()


def rss_mib() -> float:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def build(project, users, n_items: int, votes: int) -> None:
    """Items, claims, votes, outcomes and decisions of `project` via COPY."""
    import numpy as np
    from django.db import connection

    rng = np.random.default_rng(7)
    truth = rng.integers(0, 3, n_items)
    skill = np.linspace(0.65, 0.95, len(users))
    who = np.argsort(rng.random((n_items, len(users))), axis=1)[:, :votes]
    right = rng.random((n_items, votes)) < skill[who]
    labels = np.where(right, truth[:, None], rng.integers(0, 3, (n_items, votes)))
    now = "2025-01-01 00:00:00+00"
    user_ids = [u.pk for u in users]
    status, gold = [], []
    for i in range(n_items):
        counts = np.bincount(labels[i], minlength=3)
        if i % 20 == 19:
            status.append("open")
            gold.append("")
        elif counts.max() >= 2 and i % 20 != 18:
            status.append("accepted")
            gold.append(LABELS[int(counts.argmax())])
        else:
            status.append("removed")
            gold.append("")
    cast = [1 if s == "open" else votes for s in status]
    with connection.cursor() as wrapper:
        cur = wrapper.cursor
        payloads = {}
        copy_rows(
            cur,
            "annotation_item",
            ["id", "project_id", "external_id", "payload", "reference_label", "gold_label", '"group"', "split", "status", "round",
             "position", "shuffle_key", "created_at", "computed", "flags", "in_sample", "derived_group", "priority"],
            (
                (str(i + 1), str(project.pk), f"s{i:07d}",
                 payloads.get(i % 97) or payloads.setdefault(i % 97, payload_of(i)),
                 LABELS[int(truth[i])], gold[i], f"g{i // 3}", "train" if i % 10 else "dev", status[i], "1", str(i),
                 f"{(i * 0.6180339887) % 1:.6f}", now, "{}", "[]", "t", "", "0")
                for i in range(n_items)
            ),
        )  # fmt: skip
        rows = [(i, j) for i in range(n_items) for j in range(cast[i])]
        copy_rows(
            cur,
            "annotation_assignment",
            ["id", "project_id", "item_id", "annotator_id", "round", "status", "claimed_at", "expires_at", "submitted_at"],
            ((str(n + 1), str(project.pk), str(i + 1), str(user_ids[who[i, j]]), "1", "submitted", now, now,
              f"2025-01-01 00:{(i * 7 + j) % 60:02d}:{(i * 13 + j * 29) % 60:02d}+00") for n, (i, j) in enumerate(rows)),
        )  # fmt: skip
        copy_rows(
            cur,
            "annotation_annotation",
            ["id", "assignment_id", "item_id", "annotator_id", "round", "value", "created_at", "review_required"],
            ((str(n + 1), str(n + 1), str(i + 1), str(user_ids[who[i, j]]), "1", json.dumps({"label": LABELS[labels[i, j]]}), now, "f")
             for n, (i, j) in enumerate(rows)),
        )  # fmt: skip
        decided = [i for i in range(n_items) if status[i] != "open"]
        copy_rows(
            cur,
            "annotation_consensusoutcome",
            ["item_id", "round", "outcome", "gold", "votes", "n_votes", "agreement", "label_changed", "computed_at"],
            (
                (str(i + 1), "1", "accepted" if status[i] == "accepted" else "failed", gold[i],
                 json.dumps({LABELS[k]: int(c) for k, c in enumerate(np.bincount(labels[i], minlength=3)) if c}), str(votes),
                 f"{np.bincount(labels[i]).max() / votes:.4f}", "t" if gold[i] and gold[i] != LABELS[int(truth[i])] else "f", now)
                for i in decided
            ),
        )  # fmt: skip
        copy_rows(
            cur,
            "annotation_decision",
            ["item_id", "round", "method", "rank", "value", "status", "comment", "override", "created_at"],
            (
                (str(i + 1), "1", "k_of_n", "1", json.dumps(gold[i]) if gold[i] else "\\N", status[i], "", "f", now)
                for i in decided
            ),
        )
        for table in ("annotation_item", "annotation_assignment", "annotation_annotation"):
            cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
    connection.close()
    with connection.cursor() as cur:
        cur.execute("VACUUM ANALYZE")


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
        print(f"  {name:<44}{statistics.median(seconds):>8.3f} s  {queries:>5} queries  +{grew:.0f} MiB", flush=True)

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
        print(f"  {name:<44}{statistics.median(seconds):>8.3f} s  {statistics.median(cpu):>8.3f} s CPU", flush=True)
        return value


def aggregation_steps(project, timings, changed: int) -> None:
    """The aggregation job's parts: a full run (which stores the figures over every item),
    an incremental run after `changed` items got one vote edited each (the work a few
    closed rounds leave; it updates the stored figures by those items), and the stored
    figures alone, by the changed items and over every item."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotation.models import Annotation
    from annotation.services.aggregation import aggregation_changes_record, aggregation_compute_for_project
    from annotation.services.figures import project_figures_store

    timings.step(
        "aggregation + figures, full run (4 methods)", lambda: aggregation_compute_for_project(project, full=True)
    )
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
    timings.step("stored figures alone, every item (project_figures_store)", lambda: project_figures_store(project))


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

    settings.ALLOWED_HOSTS = ["*"]
    settings.MASHOV_IMPORT_JOB_ROWS = 10**9  # the import in the request, as the worker runs it
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client

    from annotation.models import Item, Job, Membership, Project
    from annotation.services.aggregation import aggregation_compute_job

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
            build(project, users, args.items, args.votes)
            print(
                f"built {args.items:,} items × {args.votes} votes in {time.perf_counter() - started:.1f} s", flush=True
            )
            started = time.perf_counter()
            job = Job.objects.create(kind="aggregation", project=project, status="running")
            aggregation_compute_job(job)
            print(
                f"aggregation job (stores the figures the pages read): {time.perf_counter() - started:.1f} s",
                flush=True,
            )
        else:
            call_command("migrate", verbosity=0)  # a database kept by an older checkout
        project = Project.objects.get(slug=SLUG)
        supervisor = User.objects.get(username="bench-sup")
        n_items = Item.objects.filter(project=project).count()
        client = Client()
        client.force_login(supervisor)
        timings = Timings(args.repeat)
        load = os.getloadavg()
        print(f"\n{n_items:,} items; load average {load[0]:.1f}; median of {args.repeat}", flush=True)

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

        def lines(expected: int):
            def check(body: bytes) -> None:
                assert body.count(b"\n") >= expected, body.count(b"\n")

            return check

        if wanted("aggregation"):
            aggregation_steps(project, timings, args.changed)

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
