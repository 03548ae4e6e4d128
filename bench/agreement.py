"""Benchmark: translation_rating agreement (LCHAIM Table 1) over 100K rated items from
PostgreSQL — 2 systems × (3 ordinal criteria + label validity), 2 raters per item.

Prints timings; a script, not a test. Creates the scratch database `mashov_bench_agreement`
on 127.0.0.1:5432 (user postgres), migrates it, inserts items, assignments and annotations
with COPY, runs the kind's agreement computation end to end (bulk load, alpha and a
1,000-resample bootstrap CI per system × criterion, mean with a t interval, upsert), then
times the krippendorff package alone on the same matrices, and drops the database (unless
--keep).

    .venv/bin/python bench/agreement.py [--items 100000] [--raters 4]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scratch import admin_sql, copy_rows  # noqa: E402 (bench/ is on sys.path when run as a script)

SYSTEMS = ("amazon", "dicta")
SCORES = ("accuracy", "fluency", "cultural_fit")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--raters", type=int, default=4, help="pool size; 2 of them rate each item")
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--database", default="mashov_bench_agreement")
    parser.add_argument("--keep", action="store_true")
    return parser.parse_args()


def synthetic(rng, n_items, n_raters):
    """who[i, j]: the two raters of item i; scores[i, j, s, c] in 1..5 around a per-item
    truth (system 0 a little better); valid[i, j, s] booleans."""
    import numpy as np

    who = np.stack([rng.choice(n_raters, size=2, replace=False) for _ in range(n_items)])
    truth = rng.integers(2, 6, size=(n_items, 1, len(SYSTEMS), len(SCORES))) - np.array([0, 1])[None, None, :, None]
    scores = np.clip(truth + rng.integers(-1, 2, size=(n_items, 2, len(SYSTEMS), len(SCORES))), 1, 5)
    valid = rng.random((n_items, 2, len(SYSTEMS))) < np.array([0.97, 0.93])
    return who, scores, valid


def insert(project, users, who, scores, valid):
    from django.db import connection

    n_items = who.shape[0]
    now = "2025-01-01 00:00:00+00"
    payload = json.dumps(
        {
            "source": {"premise": "p", "hypothesis": "h", "label": "e"},
            "candidates": [{"system": s, "premise": "x", "hypothesis": "y"} for s in SYSTEMS],
        }
    )
    ids = [u.pk for u in users]
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
            ],
            (
                (
                    str(i + 1),
                    str(project.pk),
                    f"b{i}",
                    payload,
                    "entailment",
                    "",
                    "",
                    "train",
                    "complete",
                    "1",
                    str(i),
                    f"{(i * 0.6180339887) % 1:.6f}",
                    now,
                    "{}",
                    "[]",
                    "t",
                )
                for i in range(n_items)
            ),
        )
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
                (str(i * 2 + j + 1), str(project.pk), str(i + 1), str(ids[who[i, j]]), "1", "submitted", now, now, now)
                for i in range(n_items)
                for j in range(2)
            ),
        )

        def value(i, j):
            ratings = {
                str(s): {
                    **{c: int(scores[i, j, s, k]) for k, c in enumerate(SCORES)},
                    "label_valid": bool(valid[i, j, s]),
                }
                for s in range(len(SYSTEMS))
            }
            return json.dumps({"ratings": ratings, "display_order": [0, 1]})

        copy_rows(
            cur,
            "annotation_annotation",
            ["id", "assignment_id", "item_id", "annotator_id", "round", "value", "created_at", "review_required"],
            (
                (str(i * 2 + j + 1), str(i * 2 + j + 1), str(i + 1), str(ids[who[i, j]]), "1", value(i, j), now, "f")
                for i in range(n_items)
                for j in range(2)
            ),
        )
        for table in ("annotation_item", "annotation_assignment", "annotation_annotation"):
            cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
        cur.execute("ANALYZE")


def main() -> None:
    args = parse_args()
    admin_sql(args.server, f"DROP DATABASE IF EXISTS {args.database}")
    admin_sql(args.server, f"CREATE DATABASE {args.database}")
    os.environ["DATABASE_URL"] = f"{args.server}/{args.database}"
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.local"
    import django

    django.setup()
    import krippendorff
    import numpy as np
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    from annotation.kinds.registry import get_kind
    from annotation.kinds.translation.results import (
        criterion_scale,
        scope_figures,
        translation_agreement_compute,
        translation_values,
    )
    from annotation.metrics.agreement import bootstrap_ci, slot_matrix
    from annotation.models import AgreementReport, Project

    rows: list[tuple[str, float, str]] = []

    def timed(name, fn, note=""):
        start = time.perf_counter()
        out = fn()
        rows.append((name, time.perf_counter() - start, note))
        return out

    try:
        timed("migrate scratch database", lambda: call_command("migrate", verbosity=0))
        users = [get_user_model().objects.create_user(f"rater{i}", password=None) for i in range(args.raters)]
        project = Project.objects.create(
            slug="bench", name="bench", kind="translation_rating", language="he", settings={}
        )
        who, scores, valid = synthetic(np.random.default_rng(5), args.items, args.raters)
        timed(
            f"insert {args.items:,} items × 2 raters (COPY)",
            lambda: insert(project, users, who, scores, valid),
            f"{2 * args.items:,} annotations",
        )
        settings = get_kind("translation_rating").settings_for(project.settings)
        result = timed(
            "END TO END: agreement job (load + 8 scopes alpha + 1,000-resample CI + means + upsert)",
            lambda: translation_agreement_compute(project, None, settings),
        )
        assert len(result["reports"]) == 8 and AgreementReport.objects.filter(project=project).count() == 8
        arrays, _ = timed("  of which: load ratings from PostgreSQL", lambda: translation_values(project))
        total_figures = 0.0
        matrices = {}
        for (system, criterion), (units, coders, values) in sorted(arrays.items()):
            level = "nominal" if criterion == "label_valid" else "ordinal"
            start = time.perf_counter()
            figures = scope_figures(units, coders, values, level, criterion_scale(criterion))
            total_figures += time.perf_counter() - start
            uniq, unit_index = np.unique(units, return_inverse=True)
            slot = slot_matrix(unit_index, values, uniq.size)
            # The package's natural input: raters × units, NaN where a rater did not rate.
            coder_ids, coder_pos = np.unique(coders, return_inverse=True)
            full = np.full((coder_ids.size, uniq.size), np.nan)
            full[coder_pos, unit_index] = values
            matrices[(system, criterion, level)] = (slot, full, figures)
        rows.append(("  of which: Mashov alpha + bootstrap CI + mean CI, 8 scopes", total_figures, ""))
        pkg_alpha = 0.0
        for (system, criterion, level), (slot, full, figures) in matrices.items():
            start = time.perf_counter()
            value = krippendorff.alpha(reliability_data=full, level_of_measurement=level)
            pkg_alpha += time.perf_counter() - start
            assert abs(value - figures["alpha"]) < 1e-9, (system, criterion, value, figures["alpha"])
        rows.append(
            (
                "krippendorff.alpha alone, 8 scopes (raters × units matrices)",
                pkg_alpha,
                "point estimates only, equal to Mashov's",
            )
        )
        # The package has no bootstrap: 1,000 resamples of units through it, for one scope,
        # extrapolated, against Mashov's pattern bootstrap for the same scope.
        slot, full, _ = matrices[("amazon", "accuracy", "ordinal")]
        rng = np.random.default_rng(0)
        n_units = full.shape[1]
        start = time.perf_counter()
        for _ in range(20):
            krippendorff.alpha(
                reliability_data=full[:, rng.integers(0, n_units, n_units)], level_of_measurement="ordinal"
            )
        per = (time.perf_counter() - start) / 20
        rows.append(
            (
                "krippendorff.alpha × 1,000 resamples, 1 ordinal scope (extrapolated from 20)",
                per * 1000,
                f"{per * 1000 * 8:.1f} s for 8 scopes",
            )
        )
        start = time.perf_counter()
        bootstrap_ci(slot, "ordinal", n_resamples=1000, seed=1)
        rows.append(("Mashov bootstrap_ci, 1,000 resamples, same scope", time.perf_counter() - start, ""))
        table = {
            r["scope"]["system"] + "/" + r["scope"]["criterion"]: (r["alpha"], r["units"]) for r in result["reports"]
        }
    finally:
        connection.close()
        if not args.keep:
            admin_sql(args.server, f"DROP DATABASE IF EXISTS {args.database}")

    print(f"\ntranslation_rating agreement, {args.items:,} items, 2 systems, 2 of {args.raters} raters per item\n")
    width = max(len(name) for name, _, _ in rows)
    for name, seconds, note in rows:
        print(f"  {name:<{width}}  {seconds:8.2f} s  {note}")
    print("\n  alpha per scope:")
    for scope, (value, units) in sorted(table.items()):
        print(f"    {scope:<22} {value:.4f}  ({units:,} units)")


if __name__ == "__main__":
    main()
