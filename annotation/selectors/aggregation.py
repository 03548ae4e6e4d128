"""Reads of label aggregation: the votes the aggregation job reads, and the report of what
the methods decided (docs/api.md "Aggregation, annotator quality, adjudication")."""

from __future__ import annotations

from django.db.models import F

from annotation.metrics.aggregation import METHODS
from annotation.models import Annotation, Item, ItemAggregate, Project
from annotation.sql import column_in

# The annotator key of a reference label that counts as a vote but has no author (an
# imported dataset's original label): one pseudo-annotator, estimated like the others.
IMPORTED = "imported"
# The items a report lists where the methods disagree (the count is always complete).
DISAGREEMENTS_LISTED = 500
# Item ids per read of an incremental run.
READ_BATCH = 10_000


def _author_key(item_author_id: int | None):
    return item_author_id if item_author_id is not None else IMPORTED


def project_votes(
    project: Project, kind, *, author_votes: bool, item_ids: list[int] | None = None
) -> tuple[list[tuple], dict[int, tuple[int, str]]]:
    """(votes, items): the current round's votes of every ordinary item of the project (or
    of those of `item_ids`) as (item id, annotator key, label), the author's or original
    label one more vote where `author_votes`; and {item id: (round, status)}. Two queries
    (per READ_BATCH of `item_ids`)."""
    if item_ids is None:
        return _votes_of(project, kind, author_votes, None)
    votes: list[tuple] = []
    items: dict[int, tuple[int, str]] = {}
    for start in range(0, len(item_ids), READ_BATCH):
        some_votes, some_items = _votes_of(project, kind, author_votes, item_ids[start : start + READ_BATCH])
        votes += some_votes
        items.update(some_items)
    return votes, items


def _votes_of(project: Project, kind, author_votes: bool, item_ids: list[int] | None):
    items: dict[int, tuple[int, str]] = {}
    votes: list[tuple] = []
    rows = Item.objects.filter(project=project, probe_of__isnull=True)
    if item_ids is None:
        annotations = Annotation.objects.filter(item__project=project, item__probe_of__isnull=True)
    else:
        rows = rows.filter(column_in(Item, "id", item_ids))
        # By item id alone (an index lookup; the items read above are the project's): the
        # join to the item table would have PostgreSQL hash the whole project's items.
        annotations = Annotation.objects.filter(column_in(Annotation, "item_id", item_ids))
    item_rows = rows.values_list("pk", "round", "status", "reference_label", "author_id")
    for item_id, round_, status, reference, author_id in item_rows.iterator(chunk_size=10_000):
        items[item_id] = (round_, status)
        if author_votes and reference in kind.labels:
            votes.append((item_id, _author_key(author_id), reference))
    annotation_rows = annotations.values_list("item_id", "round", "annotator_id", "value")
    for item_id, round_, annotator_id, value in annotation_rows.iterator(chunk_size=20_000):
        label = value.get("label") if isinstance(value, dict) else None
        if item_id in items and items[item_id][0] == round_ and label in kind.labels:
            votes.append((item_id, annotator_id, label))
    return votes, items


def aggregation_report_for_project(project: Project, chosen: str, *, score_against_reference: bool = False) -> dict:
    """Per method: items with a label, and how often it equals the chosen method's; the
    items where two methods give different labels (a method that decides nothing, such as
    k-of-n short of its rule, disagrees with no one), counted and listed (the first
    DISAGREEMENTS_LISTED by position). With `score_against_reference` (a hidden gold, as in
    `label_test`), each method's accuracy against it over the items it decided, and over
    all items with a reference (undecided counting as wrong). One query over the project's
    aggregates; on the worker, while it stores a large project's figures, the counts come
    from the sums it keeps (annotation.metrics.figures) and three queries list the first
    disagreements, so that the report's cost follows the items that changed."""
    comparison = getattr(project, "_method_comparison", None)
    if comparison is not None:
        return _report_from_comparison(project, comparison, chosen, score_against_reference)
    rows = (
        ItemAggregate.objects.filter(item__project=project, round=F("item__round"))
        .order_by("item__position", "item_id", "method")
        .values_list("item_id", "item__external_id", "item__reference_label", "method", "label", "confidence")
    )
    per_item: dict[int, dict] = {}
    external: dict[int, str] = {}
    reference: dict[int, str] = {}
    for item_id, external_id, reference_label, method, label, confidence in rows:
        per_item.setdefault(item_id, {})[method] = {"label": label or None, "confidence": confidence}
        external[item_id] = external_id
        reference[item_id] = reference_label
    decided = {method: 0 for method in METHODS}
    agree_with_chosen = {method: 0 for method in METHODS}
    disagreements = []
    for item_id, methods in per_item.items():
        chosen_label = (methods.get(chosen) or {}).get("label")
        given = set()
        for method, value in methods.items():
            if value["label"] is not None:
                decided[method] += 1
                given.add(value["label"])
                agree_with_chosen[method] += value["label"] == chosen_label
        if len(given) > 1:
            disagreements.append({"id": item_id, "external_id": external[item_id], "aggregates": methods})
    report = {
        "chosen": chosen,
        "items": len(per_item),
        "decided": decided,
        "agree_with_chosen": agree_with_chosen,
        "disagreements": {"count": len(disagreements), "items": disagreements[:DISAGREEMENTS_LISTED]},
    }
    if score_against_reference:
        report["accuracy_against_reference"] = _accuracy_against_reference(per_item, reference)
    return report


def _accuracy_against_reference(per_item: dict[int, dict], reference: dict[int, str]) -> dict:
    scored = {item_id: methods for item_id, methods in per_item.items() if reference[item_id]}
    figures = {}
    for method in METHODS:
        correct = sum(
            (methods.get(method) or {}).get("label") == reference[item_id] for item_id, methods in scored.items()
        )
        decided = sum((methods.get(method) or {}).get("label") is not None for methods in scored.values())
        figures[method] = {
            "items": len(scored),
            "decided": decided,
            "accuracy": correct / len(scored) if scored else None,
            "accuracy_decided": correct / decided if decided else None,
        }
    return figures


def _report_from_comparison(project: Project, comparison: dict, chosen: str, score_against_reference: bool) -> dict:
    from annotation.metrics.figures import comparison_report
    from annotation.models import ItemFigures

    report = comparison_report(comparison, chosen, METHODS, score_against_reference=score_against_reference)
    # The first items flagged as disagreeing by position, read in that order from a partial
    # index: as many entries as listed, however many items the project has or disagree.
    listed = list(
        ItemFigures.objects.filter(project=project, disagree_position__isnull=False)
        .order_by("disagree_position", "item_id")
        .values_list("item_id", flat=True)[:DISAGREEMENTS_LISTED]
    )
    shown = dict(
        (pk, (external_id, round_))
        for pk, external_id, round_ in Item.objects.filter(column_in(Item, "id", listed), project=project).values_list(
            "pk", "external_id", "round"
        )
    )
    listed = [item_id for item_id in listed if item_id in shown]
    per_item: dict[int, dict] = {item_id: {} for item_id in listed}
    # The listed items' aggregates by their ids, the round compared here: joined to the
    # item for its round, PostgreSQL hashed the whole item table and read every aggregate.
    for item_id, round_, method, label, confidence in (
        ItemAggregate.objects.filter(column_in(ItemAggregate, "item_id", listed))
        .order_by("method")
        .values_list("item_id", "round", "method", "label", "confidence")
    ):
        if round_ == shown[item_id][1]:
            per_item[item_id][method] = {"label": label or None, "confidence": confidence}
    report["disagreements"]["items"] = [
        {"id": item_id, "external_id": shown[item_id][0], "aggregates": per_item[item_id]} for item_id in listed
    ]
    return report
