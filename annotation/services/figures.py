"""Figures of a large project computed on the worker and stored (ProjectFigures), so that
its supervisor's pages answer in a bounded time with a fixed number of queries.

A project of fewer than MASHOV_FIGURES_LIVE_ITEMS items (5,000 by default) has its figures
computed per request, as they always were: its votes fit in a few milliseconds and the
figures are never stale. A larger one reads what its last aggregation job stored
(`project_figures_store`, called by the job after it has written the aggregates and
competences), so the figures trail the votes by at most one job — a minute, with the
aggregation's debounce and sweep. Before its first job a large project shows none.

How they are kept. The figures that need every vote are sums over the items
(annotation.metrics.figures): each item's share is stored (ItemFigures) and the project's
sums beside the figures (`figure_sums`). A run given the items that changed — the
aggregation job passes the items its run read — takes their old shares out of the sums,
adds their new ones, and computes the figures from the sums, so its cost follows the
changed items, not the project; the sums are integers, so the figures are exactly those a
run over every item gives. A run without item ids (the first, or after a change that
names no item) reads every item, in chunks. The methods' comparison of the kind's report
(selectors.aggregation.aggregation_report_for_project) is such a sum too: the items'
shares hold their current-round aggregates, and the report is computed from the kept
counts, its listed disagreements read by a partial index. Read whole on every run, since
they are not sums over items: the rest of the kind's report sections, the reversed-pair
probes (coherence and incoherent probes: probes are a small share of the items), the
filter values (four index scans in the database) and the stored adjudication reasons
(one row, as large as the queue). A claim submitted in a round still open is counted in
`items` and `seconds_median` when its item's round closes (or at the next run over every
item); the figures of a small project, computed per request, count it at once.

Stored, by name:
- `annotator_quality`: {annotator id: the per-annotator figures that need every vote —
  items, seconds_median, agreement with the consensus and the gold, kappa — and coherence}
  (annotation.selectors.annotator_quality);
- `report_sections`: the kind's own report figures (`Kind.report_sections`), the alpha
  reports left out: those are read live from their own table;
- `adjudication_reasons`: {item id: why it waits} before adjudications are taken out;
- `adjudication_agreement`: agreement with and without the adjudicated items;
- `item_values`: the splits, groups, rounds and flags the item browser's filters offer."""

from __future__ import annotations

import json

from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.utils import timezone

from annotation.metrics.figures import adjudication_agreement, annotators_figures, empty_sums, sums_apply
from annotation.models import ItemFigures, Project, ProjectFigures
from annotation.selectors.figures import (
    ADJUDICATION_AGREEMENT,
    ADJUDICATION_REASONS,
    ANNOTATOR_QUALITY,
    FIGURE_SUMS,
    ITEM_VALUES,
    RECORD_CHUNK,
    REPORT_SECTIONS,
    item_records,
    project_item_ids,
    stored_figures,
)
from annotation.sql import column_in

INCOHERENT = "incoherent_probe"


def _json(value):
    """`value` as its JSON text reads back: the shape a stored figure has when read."""
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))


def project_figures_store(project: Project, item_ids=None) -> list[str]:
    """Compute and upsert the project's stored figures (module docstring); the names
    written. `item_ids`: the items whose votes, round, status, claims or decisions changed
    since the last run (None: read every item). Runs on the worker, after the aggregation
    job's own writes and under its lock (runs of one project never overlap)."""
    from annotation.kinds.registry import get_kind
    from annotation.selectors.items import item_values_compute

    kind = get_kind(project.kind)
    labels = tuple(kind.labels)
    now = timezone.now()
    with transaction.atomic():
        sums = None if item_ids is None else stored_figures(project, FIGURE_SUMS)
        if sums is not None and "comparison" not in sums:
            sums = None  # stored before the sums held the methods' comparison: read every item
        reasons: dict[int, list[str]] | None = None
        if sums is None:
            sums, reasons = _sums_of_every_item(project, kind, labels)
        else:
            reasons = _sums_update(project, kind, labels, sums, sorted(set(item_ids)))
        coherence = kind.annotator_coherence(project)
        figures = {
            FIGURE_SUMS: sums,
            ANNOTATOR_QUALITY: annotators_figures(sums, coherence, labels),
            ITEM_VALUES: item_values_compute(project),
        }
        # The methods' comparison, a sum over items, from the sums just brought up to date
        # (selectors.aggregation.aggregation_report_for_project reads it there).
        project._method_comparison = sums["comparison"]  # type: ignore[attr-defined]
        try:
            sections = dict(kind.report_sections(project))
        finally:
            del project._method_comparison  # type: ignore[attr-defined]
        if "agreement" in sections:
            sections["agreement"] = None  # read live (AgreementReport)
        figures[REPORT_SECTIONS] = sections
        if labels:
            for original in sorted({original for original, *_rest in kind.incoherent_probes(project)}):
                reasons.setdefault(original, []).append(INCOHERENT)
            figures[ADJUDICATION_REASONS] = reasons
            figures[ADJUDICATION_AGREEMENT] = adjudication_agreement(sums, labels)
        for name, value in figures.items():
            project_figure_store(project, name, value, now=now)
    return [name for name in figures if name != FIGURE_SUMS]


def _sums_of_every_item(project: Project, kind, labels) -> tuple[dict, dict[int, list[str]]]:
    """The sums and the adjudication reasons (incoherent probes aside) over every item, each
    item's share stored anew."""
    sums = empty_sums()
    reasons: dict[int, list[str]] = {}
    ItemFigures.objects.filter(project=project).delete()
    for ids in project_item_ids(project, RECORD_CHUNK):
        records = item_records(project, kind, ids)
        _store_records(project, records, sums, labels, reasons)
    return sums, reasons


def _sums_update(project: Project, kind, labels, sums: dict, item_ids: list[int]) -> dict[int, list[str]]:
    """Take the changed items' stored shares out of `sums` (in place), add their new ones;
    the adjudication reasons as stored, the changed items' replaced."""
    stored = {int(item_id): why for item_id, why in (stored_figures(project, ADJUDICATION_REASONS) or {}).items()}
    reasons = {}
    for item_id, why in stored.items():
        why = [reason for reason in why if reason != INCOHERENT]
        if why:
            reasons[item_id] = why
    for start in range(0, len(item_ids), RECORD_CHUNK):
        ids = item_ids[start : start + RECORD_CHUNK]
        old = ItemFigures.objects.filter(column_in(ItemFigures, "item_id", ids), project=project)
        for record in old.values_list("value", flat=True):
            sums_apply(sums, record, -1, labels)
        old.delete()
        for item_id in ids:
            reasons.pop(item_id, None)
        _store_records(project, item_records(project, kind, ids), sums, labels, reasons)
    return reasons


def _store_records(project: Project, records: dict, sums: dict, labels, reasons: dict) -> None:
    rows = []
    for item_id, record in records.items():
        if record is None:
            continue
        sums_apply(sums, record, 1, labels)
        if record["r"]:
            reasons[item_id] = list(record["r"])
        rows.append(ItemFigures(project=project, item_id=item_id, value=record))
    ItemFigures.objects.bulk_create(rows, batch_size=RECORD_CHUNK)


def project_figure_store(project: Project, name: str, value, *, now=None) -> None:
    """Upsert one stored figure of the project (for a job that computes a figure of its own,
    such as a kind's corpus profile)."""
    ProjectFigures.objects.update_or_create(
        project=project, name=name, defaults={"value": _json(value), "computed_at": now or timezone.now()}
    )
