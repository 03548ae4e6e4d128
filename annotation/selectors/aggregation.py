"""Reads of label aggregation: the votes the aggregation job reads, and the report of what
the methods decided (docs/api.md "Aggregation, annotator quality, adjudication")."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING

from django.db.models import F
from django.db.models.fields.json import KT

from annotation.metrics.aggregation import METHODS, VoteArrays
from annotation.models import Annotation, Item, ItemAggregate, Project
from annotation.sql import column_in

# The annotator key of a reference label that counts as a vote but has no author (an
# imported dataset's original label): one pseudo-annotator, estimated like the others.
IMPORTED = "imported"
# The items a report lists where the methods disagree (the count is always complete).
DISAGREEMENTS_LISTED = 500
# Item ids per read of an incremental run.
READ_BATCH = 10_000
# Rows per chunk of a read into arrays (a server-side cursor on PostgreSQL): only this many
# rows are ever Python objects at once.
READ_CHUNK = 50_000
# The imported labels' pseudo-annotator among the annotator ids of ProjectVotes: the largest
# id, so that it sorts after every user as IMPORTED sorts after the ids in `aggregate`.
IMPORTED_ID = 2**63 - 1

if TYPE_CHECKING:
    import numpy as np


def _rows_of(project: Project, item_ids: list[int] | None):
    """The ordinary items of the project (or of `item_ids`), and their annotations."""
    rows = Item.objects.filter(project=project, probe_of__isnull=True)
    if item_ids is None:
        return rows, Annotation.objects.filter(item__project=project, item__probe_of__isnull=True)
    # The annotations by item id alone (an index lookup; the items are the project's): the
    # join to the item table would have PostgreSQL hash the whole project's items.
    return rows.filter(column_in(Item, "id", item_ids)), Annotation.objects.filter(
        column_in(Annotation, "item_id", item_ids)
    )


@dataclass(frozen=True)
class ProjectVotes:
    """A project's current-round votes as arrays (project_vote_arrays): 1M items × 3 votes
    take about 40 MB where tuples, dicts and sets of ids took gigabytes.

    ``item_ids``, ``rounds``, ``closed``: every ordinary item read, by id (``closed``: its
    round is not open). ``votes``: the votes (metrics.aggregation.VoteArrays), whose item
    number i is the item ``voted[i]`` (an id) at ``voted_at[i]`` of ``item_ids``, and whose
    annotator number j is ``annotator_ids[j]`` (IMPORTED_ID: the imported labels)."""

    item_ids: "np.ndarray"
    rounds: "np.ndarray"
    closed: "np.ndarray"
    votes: VoteArrays
    voted: "np.ndarray"
    voted_at: "np.ndarray"
    annotator_ids: "np.ndarray"


def project_vote_arrays(
    project: Project, kind, *, author_votes: bool, item_ids: list[int] | None = None
) -> ProjectVotes:
    """A project's current-round votes as arrays, read in chunks of READ_CHUNK rows (a server-side cursor):
    each chunk's rows become arrays at once, the votes as (item position, annotator number,
    label index), so that neither the rows nor one wide array per column of every vote
    exist at once. `item_ids` in ascending order."""
    import numpy as np

    labels = tuple(kind.labels)
    label_of = {label: index for index, label in enumerate(labels)}
    annotator_of: dict[int, int] = {}  # annotator id → number, in order of appearance
    batches = (
        [None] if item_ids is None else [item_ids[i : i + READ_BATCH] for i in range(0, len(item_ids), READ_BATCH)]
    )
    item_parts: list[tuple] = []
    vote_parts: list[tuple] = []
    read = 0  # items read by the batches before
    for batch in batches:
        rows, annotations = _rows_of(project, batch)
        item_rows = rows.order_by("pk").values_list("pk", "round", "status", "reference_label", "author_id")
        first = len(item_parts)
        for chunk in _chunks(item_rows.iterator(chunk_size=READ_CHUNK)):
            chunk_ids, chunk_rounds, statuses, references, authors = zip(*chunk)
            start = read + sum(len(part[0]) for part in item_parts[first:])
            item_parts.append(
                (
                    np.array(chunk_ids, dtype=np.int64),
                    np.array(chunk_rounds, dtype=np.int32),
                    np.array([status != Item.Status.OPEN for status in statuses], dtype=bool),
                )
            )
            if author_votes:
                cast = [
                    (start + offset, _number(annotator_of, author), label_of[reference])
                    for offset, (reference, author) in enumerate(zip(references, authors))
                    if reference in label_of
                ]
                if cast:
                    vote_parts.append(_vote_part(cast))
        batch_ids = _joined([part[0] for part in item_parts[first:]], np.int64)
        batch_rounds = _joined([part[1] for part in item_parts[first:]], np.int32)
        # Only the label of each vote, not its whole value.
        annotation_rows = annotations.annotate(label=KT("value__label")).values_list(
            "item_id", "round", "annotator_id", "label"
        )
        for chunk in _chunks(annotation_rows.iterator(chunk_size=READ_CHUNK)):
            labelled = [row for row in chunk if row[3] in label_of]
            if not labelled or not len(batch_ids):
                continue
            voted_ids = np.array([row[0] for row in labelled], dtype=np.int64)
            voted_rounds = np.array([row[1] for row in labelled], dtype=np.int32)
            at = np.minimum(np.searchsorted(batch_ids, voted_ids), len(batch_ids) - 1)
            # A vote counts when its item is one read above and it is of the item's current round.
            counts = (batch_ids[at] == voted_ids) & (batch_rounds[at] == voted_rounds)
            vote_parts.append(
                _vote_part(
                    [
                        (read + position, _number(annotator_of, annotator), label_of[label])
                        for position, (_item, _round, annotator, label) in zip(at.tolist(), labelled)
                    ],
                    counts,
                )
            )
        read += len(batch_ids)
    ids = _joined([part[0] for part in item_parts], np.int64)
    rounds = _joined([part[1] for part in item_parts], np.int32)
    closed = _joined([part[2] for part in item_parts], bool)
    del item_parts
    assert (np.diff(ids) > 0).all(), "item_ids must be in ascending order"
    positions = _joined([part[0] for part in vote_parts], np.int32)
    numbers = _joined([part[1] for part in vote_parts], np.int32)
    vote_labels = _joined([part[2] for part in vote_parts], np.int8)
    del vote_parts
    # Annotators numbered in the order of their ids (the imported labels' last), as the
    # methods expect.
    seen = np.array(list(annotator_of), dtype=np.int64)
    order = np.argsort(seen)
    renumber = np.empty(len(seen), dtype=np.int32)
    renumber[order] = np.arange(len(seen), dtype=np.int32)
    numbers = renumber[numbers]
    votes, voted_at = VoteArrays.of(positions, numbers, vote_labels, n_annotators=len(seen), labels=labels)
    del positions, numbers, vote_labels
    return ProjectVotes(ids, rounds, closed, votes, ids[voted_at], voted_at.astype(np.int32), seen[order])


def _number(numbers: dict[int, int], annotator: int | None) -> int:
    key = IMPORTED_ID if annotator is None else annotator
    number = numbers.get(key)
    if number is None:
        number = numbers[key] = len(numbers)
    return number


def _chunks(rows):
    while chunk := list(islice(rows, READ_CHUNK)):
        yield chunk


def _vote_part(cast: list[tuple], keep=None) -> tuple:
    """(item positions, annotator numbers, label indexes) of (position, number, label)
    rows, those of `keep` alone."""
    import numpy as np

    positions, numbers, labels = zip(*cast)
    part = (np.array(positions, dtype=np.int32), np.array(numbers, dtype=np.int32), np.array(labels, dtype=np.int8))
    return part if keep is None else tuple(column[keep] for column in part)


def _joined(parts: list, dtype) -> "np.ndarray":
    import numpy as np

    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype=dtype)


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
