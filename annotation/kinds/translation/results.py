"""Agreement per system × criterion and LCHAIM's Table 1 (LCHAIM §2.2): Krippendorff's alpha
with a bootstrap CI and the mean rating with a 95% bootstrap interval that stays on the
criterion's scale, for every system on every criterion, stored as AgreementReports by the "agreement" job and read back as the table."""

from __future__ import annotations

from collections import defaultdict

from annotation.stored_text import translated_text

from .candidates import BINARY_CRITERION, CRITERIA, SCORE_MAX, SCORE_MIN

# (item, candidate) packed in one int64: candidates per item stay below 64.
_UNIT_STRIDE = 64


def _level(criterion: str, settings: dict) -> str:
    return "nominal" if criterion == BINARY_CRITERION else settings["alpha_level_scores"]


def translation_values(project) -> tuple[dict, dict]:
    """Every rating of the project as arrays per (system, criterion): unit keys
    (item × candidate), rater ids and values (scores 1-5; label_valid as 1.0/0.0), plus
    the item → systems mapping. Two queries; no payload texts are read."""
    import numpy as np

    from annotation.models import Annotation, Item

    systems_of: dict[int, list] = {}
    for pk, candidates in (
        Item.objects.filter(project=project, probe_of__isnull=True)
        .values_list("pk", "payload__candidates")
        .iterator(chunk_size=5000)
    ):
        systems_of[pk] = [c.get("system") if isinstance(c, dict) else None for c in (candidates or [])]
    columns: dict[tuple[str, str], tuple[list, list, list]] = {}
    rows = Annotation.objects.filter(item__project=project).values_list("item_id", "annotator_id", "value__ratings")
    for item_id, annotator_id, ratings in rows.iterator(chunk_size=5000):
        systems = systems_of.get(item_id)
        if systems is None or not isinstance(ratings, dict):
            continue
        for key, scores in ratings.items():
            index = int(key)
            if index >= len(systems) or not isinstance(scores, dict):
                continue
            unit = item_id * _UNIT_STRIDE + index
            for criterion in CRITERIA:
                value = scores.get(criterion)
                if value is None:
                    continue
                units, coders, values = columns.setdefault((systems[index], criterion), ([], [], []))
                units.append(unit)
                coders.append(annotator_id)
                values.append(float(value))
    arrays = {
        scope: (np.asarray(u, dtype=np.int64), np.asarray(c, dtype=np.int64), np.asarray(v, dtype=np.float64))
        for scope, (u, c, v) in columns.items()
    }
    return arrays, systems_of


def criterion_scale(criterion: str) -> tuple[float, float]:
    """The closed range a criterion's values lie in: 0-1 for label_valid, 1-5 for scores."""
    return (0.0, 1.0) if criterion == BINARY_CRITERION else (float(SCORE_MIN), float(SCORE_MAX))


def scope_figures(units, coders, values, level: str, scale: tuple[float, float]) -> dict:
    """Alpha with a bootstrap CI, and the mean with a bootstrap interval, for one system ×
    criterion whose values lie on `scale`.

    The mean is over rated candidates (units), each the mean of its raters' values; its CI
    is the bootstrap percentile interval over those unit means
    (metrics.intervals.mean_bounded_interval), which stays on the scale where a t interval
    over few, spread means would reach past it; undefined below 2 units. For
    label_valid the values are 1 (holds) / 0, so the mean is the share of "label still
    holds"; `share` is the same share over individual ratings."""
    import numpy as np

    from annotation.metrics.agreement import REASON_NO_PAIRABLE, slot_matrix
    from annotation.metrics.intervals import mean_bounded_interval
    from annotation.services.agreement import alpha_with_ci, bootstrap_details, report_figures

    uniq, unit_index = np.unique(units, return_inverse=True)
    n_units = int(uniq.size)
    matrix = slot_matrix(unit_index, values, n_units)
    point, boot, reason = alpha_with_ci(matrix, level)
    counts = np.bincount(unit_index, minlength=n_units)
    unit_means = np.bincount(unit_index, weights=values, minlength=n_units) / np.maximum(counts, 1)
    interval = mean_bounded_interval(unit_means.tolist(), *scale)
    mean, ci_low, ci_high = interval["mean"], interval["ci_low"], interval["ci_high"]
    pairable = counts[unit_index] >= 2
    if point.alpha is None and not pairable.any() and np.unique(coders).size >= 2:
        # The slot matrix has one row when no unit has two values; say why in the
        # coders' terms, not the matrix's.
        reason = REASON_NO_PAIRABLE
    return {
        **report_figures(point, boot, reason, int(np.unique(coders[pairable]).size)),
        "details": {
            "mean": mean,
            "mean_ci_low": ci_low,
            "mean_ci_high": ci_high,
            "units_total": n_units,
            "ratings": int(values.size),
            "share": float(values.mean()) if values.size else None,
            "pairable_values": point.pairable_values,
            "bootstrap": bootstrap_details(boot),
        },
    }


def translation_agreement_compute(project, job, settings: dict) -> dict:
    """The "agreement" job for translation_rating: one AgreementReport per system ×
    criterion (`scope = {"system", "criterion"}`), ordinal (or interval, per the setting)
    for the 1-5 criteria and nominal for label_valid. Upserted in one transaction; scopes
    that no longer have ratings are deleted. Idempotent."""
    from django.utils import timezone

    from annotation.models import AgreementReport
    from annotation.services.aggregation import aggregation_request_on_commit
    from annotation.services.agreement import agreement_reports_replace, scope_key
    from annotation.services.jobs import job_set_progress

    arrays, _systems = translation_values(project)
    if job is not None:
        job_set_progress(job.pk, 0.3)
    now = timezone.now()
    reports = []
    scopes = sorted(arrays, key=lambda sc: (str(sc[0]), CRITERIA.index(sc[1])))
    for position, (system, criterion) in enumerate(scopes, start=1):
        level = _level(criterion, settings)
        figures = scope_figures(*arrays[(system, criterion)], level, criterion_scale(criterion))
        scope = {"system": system, "criterion": criterion}
        reports.append(
            AgreementReport(
                project=project,
                scope=scope,
                scope_key=scope_key(scope),
                level=level,
                job=job,
                computed_at=now,
                **figures,
            )
        )
        if job is not None:
            job_set_progress(job.pk, 0.3 + 0.6 * position / len(scopes))
    # A changed level setting or a system without ratings leaves stale rows: they go.
    result = agreement_reports_replace(
        reports, AgreementReport.objects.filter(project=project, scope__has_key="system")
    )
    # Table 1 is part of the report a large project stores (counts.py): stored again, with
    # no item changed, once these reports are.
    aggregation_request_on_commit(project.pk, [])
    return result


def translation_table1(project) -> dict:
    """LCHAIM Table 1 from the stored reports: a row per system, a cell per criterion
    (mean with its 95% bootstrap interval, alpha with its bootstrap CI and level). The winner of a
    criterion (highest mean) is named only when its mean CI lies wholly above the
    runner-up's; otherwise `winners[criterion]` is null. One query."""
    from annotation.models import AgreementReport

    cells: dict[str, dict[str, dict]] = defaultdict(dict)
    computed_at = None
    for report in AgreementReport.objects.filter(project=project, scope__has_key="system").order_by("scope_key"):
        scope = report.scope if isinstance(report.scope, dict) else {}
        system, criterion = scope.get("system"), scope.get("criterion")
        if criterion not in CRITERIA:
            continue
        details = report.details or {}
        cells[system][criterion] = {
            "mean": details.get("mean"),
            "mean_ci_low": details.get("mean_ci_low"),
            "mean_ci_high": details.get("mean_ci_high"),
            "alpha": report.alpha,
            "alpha_ci_low": report.ci_low,
            "alpha_ci_high": report.ci_high,
            "level": report.level,
            "units": report.units,
            "coders": report.coders,
            "ratings": details.get("ratings"),
            "reason": translated_text(report.reason) or None,  # stored in English by the worker
        }
        computed_at = max(computed_at, report.computed_at) if computed_at else report.computed_at
    systems = sorted(cells, key=str)
    winners = {}
    for criterion in CRITERIA:
        ranked = sorted(
            (s for s in systems if cells[s].get(criterion, {}).get("mean") is not None),
            key=lambda s: cells[s][criterion]["mean"],
            reverse=True,
        )
        winner = None
        if len(ranked) >= 2:
            best, runner = cells[ranked[0]][criterion], cells[ranked[1]][criterion]
            if (
                best["mean_ci_low"] is not None
                and runner["mean_ci_high"] is not None
                and best["mean_ci_low"] > runner["mean_ci_high"]
            ):
                winner = ranked[0]
        winners[criterion] = winner
    return {
        "criteria": list(CRITERIA),
        "systems": systems,
        "rows": [{"system": s, "cells": {c: cells[s].get(c) for c in CRITERIA}} for s in systems],
        "winners": winners,
        "computed_at": computed_at,
    }


TABLE1_CSV_FIELDS = ("mean", "mean_ci_low", "mean_ci_high", "alpha", "alpha_ci_low", "alpha_ci_high", "level", "units")


def table1_csv_rows(table: dict) -> list[list]:
    """Table 1 as CSV rows: system, then per criterion the fields above and `winner`."""
    header = ["system"]
    for criterion in table["criteria"]:
        header += [f"{criterion}_{field}" for field in TABLE1_CSV_FIELDS] + [f"{criterion}_winner"]
    rows = [header]
    for row in table["rows"]:
        line = [row["system"]]
        for criterion in table["criteria"]:
            cell = row["cells"].get(criterion) or {}
            line += [cell.get(field) for field in TABLE1_CSV_FIELDS] + [
                table["winners"].get(criterion) == row["system"]
            ]
        rows.append(line)
    return rows
