"""The plain reader of a project's votes as tuples: the reference the product's array
reader (selectors.aggregation.project_vote_arrays) is checked against, written the obvious
way so that a test can trust it."""

from __future__ import annotations

from annotation.models import Project
from annotation.selectors.aggregation import IMPORTED, READ_BATCH, _rows_of


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
    rows, annotations = _rows_of(project, item_ids)
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
