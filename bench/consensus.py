"""Benchmark: 100K nli_relabel items × 5 votes in PostgreSQL → consensus + alpha + bootstrap CI.

Prints a table of timings; it is a script, not a test. It creates a scratch database
(default `mashov_bench` on 127.0.0.1:5432, user postgres), migrates it, inserts the votes in
bulk with COPY, and drops the database at the end (unless --keep).

    .venv/bin/python bench/consensus.py [--items 100000] [--coders 20] [--sample 2000]

Steps timed:

* consensus, batch: the product's bulk path — `consensus_sweep()` finds every complete
  item and hands chunks of 10,000 to the `compute_consensus_batch` task, which runs
  `consensus_compute_batch` (lock with SKIP LOCKED, one read of the chunk's votes,
  `metrics.consensus.decide` in memory, outcomes by COPY, statuses by set-based UPDATEs).
  With no broker configured the tasks run in-process, so this is the worker's work
  without the queue;
* consensus, per item: `consensus_compute_for_item` (the on-commit path of a single last
  vote, one transaction and several queries per item) on a sample, extrapolated to every
  item; its outcomes are compared with the batch path's for the same items;
* the agreement job end to end (`agreement_compute_job`: bulk load, nominal alpha and a
  1,000-resample bootstrap for round 1 and for "all", per-annotator agreement, upsert);
* the pure alpha step (`annotation.metrics.agreement.alpha`) against `krippendorff.alpha`
  called directly on the same matrix, interleaved, best of 9;
* `bootstrap_ci` with 1,000 resamples over 200K units.

Targets (2-core machine): end to end < 10 s; alpha within 1.5× the package;
bootstrap over 200K units < 5 s.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scratch import admin_sql, copy_rows  # noqa: E402 (bench/ is on sys.path when run as a script)

LABELS = ("entailment", "neutral", "contradiction")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--votes", type=int, default=5)
    parser.add_argument("--coders", type=int, default=20)
    parser.add_argument("--sample", type=int, default=2_000, help="items decided one by one (per-item path)")
    parser.add_argument("--bootstrap-units", type=int, default=200_000)
    parser.add_argument("--resamples", type=int, default=1_000)
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--database", default="mashov_bench")
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    return parser.parse_args()


class Timer:
    def __init__(self):
        self.rows: list[tuple[str, float, str]] = []

    def run(self, name, fn, note=""):
        start = time.perf_counter()
        value = fn()
        self.rows.append((name, time.perf_counter() - start, note))
        return value

    def add(self, name, seconds, note=""):
        self.rows.append((name, seconds, note))


def best_of(fn, repeat=3):
    times, value = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return min(times), value


def synthetic_votes(rng, n_items, votes, coders):
    """(coder index, label index) arrays of shape items × votes: distinct coders per item,
    each right with their own skill, a true label per item."""
    import numpy as np

    truth = rng.integers(0, 3, n_items)
    skill = np.linspace(0.7, 0.95, coders)
    who = np.argsort(rng.random((n_items, coders)), axis=1)[:, :votes]
    right = rng.random((n_items, votes)) < skill[who]
    labels = np.where(right, truth[:, None], rng.integers(0, 3, (n_items, votes)))
    return who, labels


def insert_votes(project, users, who, labels, payload_of=None):
    """Items (status complete, no reference label), assignments and annotations via COPY.
    `payload_of(i)` gives item i's payload as JSON text (default: a minimal pair)."""
    from django.db import connection

    n_items, votes = labels.shape
    now = "2025-01-01 00:00:00+00"
    with connection.cursor() as wrapper:
        cur = wrapper.cursor
        copy_rows(
            cur,
            "annotation_item",
            [
                "id",
                "project_id",
                "external_id",
                "payload",
                "reference_label",
                "gold_label",
                '"group"',
                "split",
                "status",
                "round",
                "position",
                "shuffle_key",
                "created_at",
                "computed",
                "flags",
                "in_sample",
                "derived_group",
            ],
            (
                (
                    str(i + 1),
                    str(project.pk),
                    f"b{i}",
                    payload_of(i) if payload_of else '{"premise": "p", "hypothesis": "h"}',
                    "",
                    "",
                    f"g{i // 3}",
                    "train",
                    "complete",
                    "1",
                    str(i),
                    f"{(i * 0.6180339887) % 1:.6f}",
                    now,
                    "{}",
                    "[]",
                    "t",
                    "",
                )
                for i in range(n_items)
            ),
        )
        user_ids = [u.pk for u in users]
        copy_rows(
            cur,
            "annotation_assignment",
            [
                "id",
                "project_id",
                "item_id",
                "annotator_id",
                "round",
                "status",
                "claimed_at",
                "expires_at",
                "submitted_at",
            ],
            (
                (
                    str(i * votes + j + 1),
                    str(project.pk),
                    str(i + 1),
                    str(user_ids[who[i, j]]),
                    "1",
                    "submitted",
                    now,
                    now,
                    now,
                )
                for i in range(n_items)
                for j in range(votes)
            ),
        )
        copy_rows(
            cur,
            "annotation_annotation",
            ["id", "assignment_id", "item_id", "annotator_id", "round", "value", "created_at", "review_required"],
            (
                (
                    str(i * votes + j + 1),
                    str(i * votes + j + 1),
                    str(i + 1),
                    str(user_ids[who[i, j]]),
                    "1",
                    f'{{"label": "{LABELS[labels[i, j]]}"}}',
                    now,
                    "f",
                )
                for i in range(n_items)
                for j in range(votes)
            ),
        )
        for table in ("annotation_item", "annotation_assignment", "annotation_annotation"):
            cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
        # What autovacuum does to a freshly loaded table (visibility map, hint bits,
        # statistics); the timed steps should not pay for the bulk load.
        cur.execute("VACUUM ANALYZE")


def main() -> None:
    args = parse_args()
    url = f"{args.server}/{args.database}"
    admin_sql(args.server, f"DROP DATABASE IF EXISTS {args.database}")
    admin_sql(args.server, f"CREATE DATABASE {args.database}")
    os.environ["DATABASE_URL"] = url
    os.environ.pop("CELERY_BROKER_URL", None)  # tasks in-process: the bench calls services directly
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.local"

    import django

    django.setup()
    import krippendorff
    import numpy as np
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    from annotation.kinds.nli import agreement as nli_agreement
    from annotation.metrics import agreement as agreement_metrics
    from annotation.metrics.agreement import alpha, bootstrap_ci
    from annotation.models import AgreementReport, ConsensusOutcome, Item, Job, Membership, Project
    from annotation.services import agreement as agreement_service
    from annotation.services.consensus import consensus_compute_for_item, consensus_sweep

    timer = Timer()
    try:
        timer.run("migrate scratch database", lambda: call_command("migrate", verbosity=0))
        User = get_user_model()
        users = [User.objects.create_user(f"coder{i:02d}", password=None) for i in range(args.coders)]
        project = Project.objects.create(
            slug="bench",
            name="bench",
            kind="nli_relabel",
            language="fa",
            settings={"consensus_k": 4, "consensus_n": args.votes, "revision_rounds": 0, "claim_ttl": 1800},
        )
        Membership.objects.bulk_create(
            [Membership(project=project, user=u, role="annotator", status="active") for u in users]
        )
        rng = np.random.default_rng(7)
        who, labels = synthetic_votes(rng, args.items, args.votes, args.coders)
        timer.run(
            f"insert {args.items:,} items × {args.votes} votes (COPY)",
            lambda: insert_votes(project, users, who, labels),
            f"{args.items * args.votes:,} annotations + assignments",
        )

        # Consensus, batch: the sweep enqueues chunks of the complete items; with no broker
        # the batch task runs in-process.
        decided = timer.run("consensus, batch (sweep → compute_consensus_batch)", consensus_sweep)
        assert decided == args.items, decided
        consensus_batch_seconds = timer.rows[-1][1]
        outcomes = ConsensusOutcome.objects.count()
        assert outcomes == args.items, outcomes
        accepted = ConsensusOutcome.objects.filter(outcome="accepted").count()
        assert Item.objects.filter(project=project, status="accepted").count() == accepted
        assert not Item.objects.filter(project=project, status="complete").exists()
        timer.rows[-1] = (*timer.rows[-1][:2], f"{outcomes:,} outcomes, {accepted:,} accepted")
        assert consensus_sweep() == 0  # nothing left: a second sweep finds no work

        # Consensus, per item (the on-commit path) on a sample: undo the sample's outcomes
        # first, and check that the per-item path decides them as the batch did.
        sample = list(Item.objects.filter(project=project).order_by("pk").values_list("pk", flat=True)[: args.sample])
        fields = ("item_id", "round", "outcome", "gold", "votes", "n_votes", "agreement", "label_changed")
        batch_rows = list(ConsensusOutcome.objects.filter(item_id__in=sample).order_by("item_id").values_list(*fields))
        batch_items = list(Item.objects.filter(pk__in=sample).order_by("pk").values_list("pk", "status", "gold_label"))
        ConsensusOutcome.objects.filter(item_id__in=sample).delete()
        Item.objects.filter(pk__in=sample).update(status="complete", gold_label="")
        timer.run(
            f"consensus, per item × {args.sample:,} (on-commit path)",
            lambda: [consensus_compute_for_item(pk) for pk in sample],
        )
        per_item = timer.rows[-1][1] / args.sample
        timer.rows[-1] = (*timer.rows[-1][:2], f"{per_item * 1000:.2f} ms/item")
        assert (
            list(ConsensusOutcome.objects.filter(item_id__in=sample).order_by("item_id").values_list(*fields))
            == batch_rows
        )
        assert (
            list(Item.objects.filter(pk__in=sample).order_by("pk").values_list("pk", "status", "gold_label"))
            == batch_items
        )
        per_item_all = per_item * args.items
        timer.add(
            f"consensus, per item × {args.items:,} (extrapolated)", per_item_all, "not run; sample × items/sample"
        )

        # Agreement job end to end.
        job = Job.objects.create(kind="agreement", project=project)
        result = timer.run(
            "agreement job (load, alpha + bootstrap ×2 scopes, upsert)",
            lambda: agreement_service.agreement_compute_job(job),
        )
        agreement_seconds = timer.rows[-1][1]
        round1 = result["reports"][0]
        timer.rows[-1] = (*timer.rows[-1][:2], f"alpha r1 = {round1['alpha']:.4f}, units {round1['units']:,}")
        assert AgreementReport.objects.filter(project=project).count() == 2

        # The job's matrix, for the pure steps.
        (item_ids, rounds, coders, codes, _is_vote), _, _ = nli_agreement._load_votes(project, counts_reference=True)
        _, unit_index = np.unique(item_ids * 65536 + rounds, return_inverse=True)
        slot_matrix = agreement_metrics.slot_matrix(unit_index, codes.astype(float), int(unit_index.max()) + 1)
        coder_ids, coder_index = np.unique(coders, return_inverse=True)
        coder_matrix = np.full((coder_ids.size, slot_matrix.shape[1]), np.nan)
        coder_matrix[coder_index, unit_index] = codes

        for name, matrix in (("slots", slot_matrix), ("coders", coder_matrix)):
            # Interleaved, best of 9 each: on a shared machine a burst of load then hits
            # both sides alike instead of one.
            ours_times, pkg_times = [], []
            for _ in range(9):
                ours_s, ours = best_of(lambda m=matrix: alpha(m, "nominal"), repeat=1)
                pkg_s, pkg = best_of(
                    lambda m=matrix: krippendorff.alpha(reliability_data=m, level_of_measurement="nominal"), repeat=1
                )
                ours_times.append(ours_s)
                pkg_times.append(pkg_s)
            ours_s, pkg_s = min(ours_times), min(pkg_times)
            assert abs(ours.alpha - pkg) < 1e-9, (ours.alpha, pkg)
            shape = f"{matrix.shape[0]} × {matrix.shape[1]:,}"
            timer.add(f"alpha, metrics.alpha ({name} {shape})", ours_s, f"alpha = {ours.alpha:.6f}")
            timer.add(
                f"alpha, krippendorff.alpha ({name} {shape})", pkg_s, f"ratio ours/package = {ours_s / pkg_s:.2f}"
            )

        # Bootstrap over 200K units.
        who2, labels2 = synthetic_votes(np.random.default_rng(11), args.bootstrap_units, args.votes, args.coders)
        big = np.full((args.votes, args.bootstrap_units), np.nan)
        big[:, :] = labels2.T
        boot = timer.run(
            f"bootstrap_ci, {args.resamples:,} resamples × {args.bootstrap_units:,} units",
            lambda: bootstrap_ci(big, "nominal", n_resamples=args.resamples, seed=1),
        )
        timer.rows[-1] = (*timer.rows[-1][:2], f"alpha {boot.alpha:.4f} [{boot.ci_low:.4f}, {boot.ci_high:.4f}]")

        end_to_end = consensus_batch_seconds + agreement_seconds
        timer.add("END TO END: batch consensus + agreement job", end_to_end, "target < 10 s")
        timer.add("END TO END: per-item consensus + agreement job", per_item_all + agreement_seconds, "extrapolated")
    finally:
        connection.close()
        if not args.keep:
            admin_sql(args.server, f"DROP DATABASE IF EXISTS {args.database}")

    width = max(len(name) for name, _, _ in timer.rows)
    print(f"{'step':<{width}}  {'seconds':>9}  note")
    print("-" * (width + 40))
    for name, seconds, note in timer.rows:
        print(f"{name:<{width}}  {seconds:>9.3f}  {note}")
    print(
        f"\nnumpy {np.__version__}, krippendorff {importlib.metadata.version('krippendorff')}, "
        f"{os.cpu_count()} CPUs; database {'kept: ' + url if args.keep else 'dropped'}"
    )


if __name__ == "__main__":
    main()
