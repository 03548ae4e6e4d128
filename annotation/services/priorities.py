"""The stored active-learning order (the project setting `order`; docs/kinds.md "Model in
the loop"). Each item keeps its place in `Item.priority` (lower is served first, ties by
the shuffle key), so that the engine's `next` reads one index (item_priority_idx) instead
of sorting the project per request:

- `sequential`: the priority is unused; the engine walks the shuffled order from a random
  point, as it always did.
- `random`: the item's shuffle key, a fixed random permutation served from its head, so the
  items labelled at any time are a uniform sample, finished one after another.
- `uncertainty`: the margin between the two most probable labels of the project's latest
  prediction set (1 for a prediction without scores, 2 for an item it does not predict).
- `disagreement`: the share of the current round's votes that the most frequent label
  holds (1 below two votes), updated at each vote.

Whole-project refreshes run when the order changes and when a prediction set is stored."""

from __future__ import annotations

from collections import defaultdict

from django.db import connection

from annotation.kinds.registry import get_kind
from annotation.metrics.uncertainty import agreement_share
from annotation.models import Annotation, Item, PredictionSet
from annotation.sql import execute

SEQUENTIAL, RANDOM, UNCERTAINTY, DISAGREEMENT = "sequential", "random", "uncertainty", "disagreement"
# An item without a prediction comes after every predicted one in uncertainty order.
UNPREDICTED = 2.0
NO_SCORES = 1.0
WRITE_BATCH = 2_000


def order_of(settings: dict) -> str:
    return settings.get("order") or SEQUENTIAL


def _label_of(value) -> str | None:
    return value.get("label") if isinstance(value, dict) and isinstance(value.get("label"), str) else None


def item_priorities_refresh(project, *, after_position: int | None = None) -> None:
    """Recompute the items' priorities for the project's order, in a few statements: every
    item's, or with `after_position` only those of the items placed after it (an import's
    new items), so that adding 10,000 items to a million-item project does not rewrite the
    million."""
    order = order_of(get_kind(project.kind).project_settings(project))
    scope, params = "project_id = %s", [project.pk]
    if after_position is not None:
        scope, params = "project_id = %s AND position > %s", [project.pk, after_position]
    with connection.cursor() as cursor:
        if order == RANDOM:
            execute(cursor, f"UPDATE annotation_item SET priority = shuffle_key WHERE {scope}", params)
        elif order == UNCERTAINTY:
            latest = PredictionSet.objects.filter(project=project).values_list("pk", flat=True).first()
            execute(
                cursor,
                "UPDATE annotation_item SET priority = COALESCE((SELECT COALESCE(p.margin, %s)"
                " FROM annotation_prediction p WHERE p.prediction_set_id = %s AND p.item_id = annotation_item.id), %s)"
                f" WHERE {scope}",
                [NO_SCORES, latest or 0, UNPREDICTED, *params],
            )
        elif order == DISAGREEMENT:
            if after_position is None:
                _disagreement_refresh(project)
            else:
                # New items hold no votes yet: below two votes the share is 1.
                execute(cursor, f"UPDATE annotation_item SET priority = 1.0 WHERE {scope}", params)


def _disagreement_refresh(project) -> None:
    votes: dict[int, list] = defaultdict(list)
    rows = Annotation.objects.filter(item__project=project, item__status=Item.Status.OPEN).values_list(
        "item_id", "round", "item__round", "value"
    )
    for item_id, round_, current, value in rows.iterator(chunk_size=5000):
        if round_ == current:
            votes[item_id].append(_label_of(value))
    Item.objects.filter(project=project).update(priority=1.0)
    shares: dict[float, list[int]] = defaultdict(list)
    for item_id, labels in votes.items():
        share = agreement_share(labels)
        if share < 1.0:
            shares[share].append(item_id)
    for share, ids in shares.items():
        for start in range(0, len(ids), WRITE_BATCH):
            Item.objects.filter(pk__in=ids[start : start + WRITE_BATCH]).update(priority=share)


def item_priority_after_vote(item: Item, settings: dict) -> None:
    """Move an item in disagreement order after a vote (the submit's transaction holds its
    row lock); nothing in the other orders."""
    if order_of(settings) != DISAGREEMENT:
        return
    labels = [
        _label_of(value)
        for value in Annotation.objects.filter(item=item, round=item.round).values_list("value", flat=True)
    ]
    share = agreement_share(labels)
    if share != item.priority:
        item.priority = share
        Item.objects.filter(pk=item.pk).update(priority=share)
