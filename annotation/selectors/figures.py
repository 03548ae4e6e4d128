"""Reads of a large project's stored figures (ProjectFigures; written on the worker by
services.figures.project_figures_store): whether a project is small enough to compute its
figures per request, and what its last aggregation job stored."""

from __future__ import annotations

from collections import defaultdict

from django.conf import settings
from django.db.models.fields.json import KT

from annotation.metrics.annotator_quality import duration_key, plurality
from annotation.metrics.figures import empty_sums, item_value_share, sums_apply
from annotation.models import (
    Adjudication,
    Annotation,
    Assignment,
    ConsensusOutcome,
    Item,
    ItemAggregate,
    ItemRevision,
    Project,
    ProjectFigures,
)
from annotation.sql import column_in

ANNOTATOR_QUALITY = "annotator_quality"
REPORT_SECTIONS = "report_sections"
ADJUDICATION_AGREEMENT = "adjudication_agreement"
ITEM_VALUES = "item_values"
# The aggregation job's own bookkeeping: when it last read the whole project, how many items
# the project had then, and how many changed since (services.aggregation).
AGGREGATION_STATE = "aggregation_state"


def figures_are_live(project: Project) -> bool:
    """Whether the project is small enough to compute its figures per request (fewer than
    MASHOV_FIGURES_LIVE_ITEMS items). One query that reads at most that many index
    entries; remembered on `project` for the rest of the request."""
    live = getattr(project, "_figures_live", None)
    if live is None:
        limit = settings.MASHOV_FIGURES_LIVE_ITEMS
        live = not Item.objects.filter(project=project).order_by().values_list("pk", flat=True)[limit : limit + 1]
        project._figures_live = live  # type: ignore[attr-defined]  # remembered for this request
    return live


def stored_figures(project: Project, name: str):
    """The figures `name` as last stored for the project (JSON: keys are strings), or None."""
    return ProjectFigures.objects.filter(project=project, name=name).values_list("value", flat=True).first()


# The per-item sums the stored figures are computed from (annotation.metrics.figures).
FIGURE_SUMS = "figure_sums"
# Items read per chunk when the records are built.
RECORD_CHUNK = 5_000


def project_item_ids(project: Project, chunk: int = RECORD_CHUNK, *, after: int = 0):
    """The project's item ids (above `after`) in chunks, by keyset on the primary key (no OFFSET)."""
    last = after
    while True:
        ids = list(
            Item.objects.filter(project=project, pk__gt=last).order_by("pk").values_list("pk", flat=True)[:chunk]
        )
        if not ids:
            return
        yield ids
        last = ids[-1]


def item_records(project: Project, kind, item_ids: list[int]) -> dict[int, dict | None]:
    """{item id: its record (annotation.metrics.figures), None for a deleted item}; an item
    without claims, votes, adjudication or reasons adds its filter values only (`i`), and
    a reversed-pair probe only those, its adjudication, reasons and aggregates; with its
    share of the kind's report counts (`Kind.report_counts`) where it has one. Seven
    queries and the kind's, whatever the number of ids (one array parameter each)."""
    records: dict[int, dict | None] = dict.fromkeys(item_ids)
    items, probes, values, positions = {}, set(), {}, {}
    for pk, round_, gold_label, reference, probe_of, split, group, flags, position in Item.objects.filter(
        column_in(Item, "id", item_ids), project=project
    ).values_list("pk", "round", "gold_label", "reference_label", "probe_of_id", "split", "group", "flags", "position"):
        items[pk] = (round_, gold_label, reference)
        positions[pk] = position
        values[pk] = item_value_share(split, group, round_, flags)
        if probe_of is not None:
            probes.add(pk)  # not an item of the dataset: its reasons and adjudication only
    if not items:
        return records
    ids = list(items)
    durations: dict[int, list] = defaultdict(list)
    for item_id, annotator_id, claimed, submitted in (
        Assignment.objects.filter(
            column_in(Assignment, "item_id", ids), status=Assignment.Status.SUBMITTED, submitted_at__isnull=False
        )
        .order_by("id")
        .values_list("item_id", "annotator_id", "claimed_at", "submitted_at")
    ):
        assert submitted is not None and claimed is not None  # a submitted claim has both
        if item_id not in probes:
            durations[item_id].append([annotator_id, duration_key(max(0.0, (submitted - claimed).total_seconds()))])
    labels = set(kind.labels)
    votes: dict[int, list] = defaultdict(list)
    adjudicated: dict[int, str] = {}
    reasons: dict[int, list[str]] = defaultdict(list)
    # The current round's aggregates, {item id: {method: label or None}}: the methods'
    # comparison and, between them, a reason to adjudicate.
    aggregates: dict[int, dict[str, str | None]] = defaultdict(dict)
    for item_id, round_, method, label in (
        ItemAggregate.objects.filter(column_in(ItemAggregate, "item_id", ids))
        .order_by()
        .values_list("item_id", "round", "method", "label")
    ):
        if round_ == items[item_id][0]:
            aggregates[item_id][method] = label or None
    if labels:
        for item_id, annotator_id, round_, label in (
            Annotation.objects.filter(column_in(Annotation, "item_id", ids))
            .annotate(label=KT("value__label"))
            .order_by("id")
            .values_list("item_id", "annotator_id", "round", "label")
        ):
            if round_ == items[item_id][0] and label in labels and item_id not in probes:
                votes[item_id].append([annotator_id, label])
        for item_id, round_, label in Adjudication.objects.filter(column_in(Adjudication, "item_id", ids)).values_list(
            "item_id", "round", "label"
        ):
            if round_ == items[item_id][0]:
                adjudicated[item_id] = label
        withdrawn = {
            item_id
            for item_id, failed_round in ItemRevision.objects.filter(
                column_in(ItemRevision, "item_id", ids), action=ItemRevision.Action.WITHDRAWN
            ).values_list("item_id", "failed_round")
            if failed_round == items[item_id][0]
        }
        for item_id, round_ in ConsensusOutcome.objects.filter(
            column_in(ConsensusOutcome, "item_id", ids), outcome=ConsensusOutcome.Outcome.FAILED
        ).values_list("item_id", "round"):
            if round_ == items[item_id][0] and item_id not in withdrawn:
                reasons[item_id].append("failed")
        for item_id, methods in aggregates.items():
            if len({label for label in methods.values() if label is not None}) > 1:
                reasons[item_id].append("methods_disagree")
    for item_id, (_round, gold_label, reference) in items.items():
        methods = aggregates.get(item_id, {})
        if not (
            durations.get(item_id) or votes.get(item_id) or item_id in adjudicated or reasons.get(item_id) or methods
        ):
            records[item_id] = {"i": values[item_id]}
            continue
        cast = [label for _annotator, label in votes.get(item_id, ())]
        consensus = adjudicated.get(item_id) or gold_label or (plurality(cast) if len(cast) >= 2 else None)
        gold = adjudicated.get(item_id) or (reference if kind.reference_label_is_gold else "")
        record: dict = {
            "d": durations.get(item_id, []),
            "v": votes.get(item_id, []),
            "c": consensus if consensus in labels else None,
            "g": gold if gold in labels else None,
            "a": int(item_id in adjudicated),
            "r": reasons.get(item_id, []),
            "i": values[item_id],
        }
        if methods:
            given = {label for label in methods.values() if label is not None}
            record.update({"m": methods, "x": int(len(given) > 1), "e": reference or None})
            if record["x"]:
                record["p"] = positions[item_id]  # stored apart (ItemFigures.disagree_position)
        records[item_id] = record
    for item_id, share in kind.report_counts(project, ids).items():
        if share:
            records[item_id]["k"] = share  # type: ignore[index]  # every id read has a record
    return records


def project_figure_sums(project: Project, kind) -> dict:
    """The sums of annotation.metrics.figures over every item of the project, read in
    chunks (what the worker keeps up to date for a large project)."""
    sums = empty_sums()
    for ids in project_item_ids(project):
        for record in item_records(project, kind, ids).values():
            sums_apply(sums, record, 1, tuple(kind.labels))
    return sums
