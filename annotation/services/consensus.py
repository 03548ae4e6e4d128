"""The k-of-n consensus step of `nli_relabel` (FarsTail §3): when an item's round has all
its votes, decide it, write the outcome once, and move the item on — accepted, back to
its author for revision, or removed.

Two paths with the same semantics:

* `consensus_compute_for_item`: one item, run by the task enqueued on commit when the
  item's last vote comes in (the common, interactive case).
* `consensus_compute_batch`: many items, run by the batch task that the periodic sweep
  enqueues in chunks (a lost message, a broker that was down, a bulk load). Per chunk it
  locks the complete items it can get (SKIP LOCKED: an item another worker holds is that
  worker's), reads their votes in one query, decides them in memory with
  `metrics.consensus.decide`, writes the outcomes in bulk and the item statuses with a
  few set-based UPDATEs. One transaction per chunk, so a killed worker loses at most a
  chunk's work and the redelivery redoes it; already decided items are skipped.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from django.db import IntegrityError, transaction
from django.db.models.fields.json import KT

from annotation.kinds.registry import get_kind, kinds_aggregating_by_consensus
from annotation.metrics.consensus import ACCEPTED, PENDING, ConsensusResult, decide
from annotation.models import Annotation, ConsensusOutcome, Item, Project
from annotation.services.tasks_queue import enqueue_on_commit, enqueue_rollback_unsafe

# Items per transaction in the batch path, and per message the sweep sends. 10K items
# hold ~50K votes in memory and keep a chunk's transaction well under a second.
BATCH_SIZE = 10_000
# A sweep enqueues at most this many items; the next sweep takes the rest.
SWEEP_LIMIT = 500_000


def consensus_enqueue_on_commit(item_id: int) -> None:
    from annotation.tasks import compute_consensus

    enqueue_on_commit(compute_consensus, item_id)


def _status_after(outcome: str, *, author_id, round_: int, revision_rounds: int) -> str:
    """Where a decided item goes: accepted stays accepted; a failed round goes back to its
    author while revisions remain (FarsTail: one), otherwise the item is removed."""
    if outcome == ConsensusOutcome.Outcome.ACCEPTED:
        return Item.Status.ACCEPTED
    if author_id is not None and round_ <= revision_rounds:
        return Item.Status.NEEDS_REVISION
    return Item.Status.REMOVED


def _outcome_row(item_id: int, round_: int, result: ConsensusResult) -> ConsensusOutcome:
    return ConsensusOutcome(
        item_id=item_id,
        round=round_,
        outcome=ConsensusOutcome.Outcome.ACCEPTED if result.outcome == ACCEPTED else ConsensusOutcome.Outcome.FAILED,
        gold=result.gold or "",
        votes=result.votes,
        n_votes=result.n_votes,
        agreement=result.agreement,
        label_changed=result.label_changed,
    )


def consensus_compute_for_item(item_id: int) -> ConsensusOutcome | None:
    """Decide the item's current round. Idempotent: an item that is not waiting for a
    decision, or whose round already has an outcome, is left as it is. Two racing calls
    serialise on the item's row lock; the unique (item, round) key backs that up."""
    with transaction.atomic():
        item = Item.objects.select_for_update().select_related("project").filter(pk=item_id).first()
        if item is None:
            return None
        existing = ConsensusOutcome.objects.filter(item=item, round=item.round).first()
        if item.status != Item.Status.COMPLETE or existing is not None:
            return existing
        kind = get_kind(item.project.kind)
        settings = kind.settings_for(item.project.settings)
        labels = [
            value.get("label")
            for value in Annotation.objects.filter(item=item, round=item.round).values_list("value", flat=True)
        ]
        result = decide(
            labels,
            k=settings["consensus_k"],
            n=settings["consensus_n"],
            author_label=item.reference_label or None,
        )
        if result.outcome == PENDING:
            # Fewer votes than needed (e.g. settings changed): collect more.
            item.status = Item.Status.OPEN
            item.save(update_fields=["status"])
            return None
        outcome = _outcome_row(item.pk, item.round, result)
        try:
            with transaction.atomic():
                outcome.save(force_insert=True)
        except IntegrityError:
            return ConsensusOutcome.objects.get(item=item, round=item.round)
        item.status = _status_after(
            outcome.outcome, author_id=item.author_id, round_=item.round, revision_rounds=settings["revision_rounds"]
        )
        if result.outcome == ACCEPTED:
            item.gold_label = result.gold
        item.save(update_fields=["status", "gold_label"])
        return outcome


def _label_key(labels: list) -> tuple:
    # decide() ignores abstentions (None), so two items with the same non-None labels in
    # any order get the same result.
    return tuple(sorted(label for label in labels if label is not None))


def consensus_compute_batch(item_ids: Iterable[int], *, chunk_size: int = BATCH_SIZE) -> int:
    """Decide the current round of every complete item among `item_ids`, in chunks of
    `chunk_size` items, one transaction each. Same semantics as `consensus_compute_for_item`
    item by item: accepted → gold label; failed with an author and revision rounds left →
    needs_revision; otherwise removed; fewer votes than needed → open again. Idempotent:
    items that are not complete, or that another transaction holds (SKIP LOCKED on
    PostgreSQL), are left alone; the sweep finds whatever is still complete later.
    Returns the number of outcomes written."""
    ids = sorted({int(pk) for pk in item_ids})
    written = 0
    for start in range(0, len(ids), chunk_size):
        written += _compute_chunk(ids[start : start + chunk_size])
    return written


def _compute_chunk(ids: list[int]) -> int:
    with transaction.atomic():
        # No ORDER BY: SKIP LOCKED never waits, so lock order cannot deadlock.
        locked = list(
            Item.objects.select_for_update(skip_locked=True)
            .filter(pk__in=ids, status=Item.Status.COMPLETE)
            .order_by()
            .values_list("pk", "project_id", "round", "reference_label", "author_id")
        )
        if not locked:
            return 0
        consensus_kinds = set(kinds_aggregating_by_consensus())
        settings_by_project = {}
        for project in Project.objects.filter(pk__in={row[1] for row in locked}).only("pk", "kind", "settings"):
            if project.kind in consensus_kinds:
                settings_by_project[project.pk] = get_kind(project.kind).settings_for(project.settings)
        locked = [row for row in locked if row[1] in settings_by_project]
        round_of = {row[0]: row[2] for row in locked}
        # An outcome already stored for the current round (a run that wrote it but whose
        # status change was lost cannot happen — both are in one transaction — but an
        # operator's repair can): the item follows the stored outcome, nothing is re-decided.
        stored = {
            item_id: (outcome, gold)
            for item_id, round_, outcome, gold in ConsensusOutcome.objects.filter(item_id__in=list(round_of))
            .order_by()
            .values_list("item_id", "round", "outcome", "gold")
            if round_of[item_id] == round_
        }
        labels: dict[int, list] = defaultdict(list)
        # One query for every vote of the chunk; the label as text (->>), so that the rows
        # are not parsed as JSON one by one. Votes of earlier rounds are dropped here.
        votes = (
            Annotation.objects.filter(item_id__in=[pk for pk in round_of if pk not in stored])
            .order_by()
            .annotate(label=KT("value__label"))
            .values_list("item_id", "round", "label")
        )
        for item_id, round_, label in votes.iterator(chunk_size=20_000):
            if round_of[item_id] == round_:
                labels[item_id].append(label)

        decisions: dict[tuple, ConsensusResult] = {}
        outcomes: list[ConsensusOutcome] = []
        # (status, gold label or None for "unchanged") → item ids
        moves: dict[tuple[str, str | None], list[int]] = defaultdict(list)
        for item_id, project_id, round_, reference, author_id in locked:
            settings = settings_by_project[project_id]
            if item_id in stored:
                outcome, gold = stored[item_id]
                status = _status_after(outcome, author_id=author_id, round_=round_, revision_rounds=settings["revision_rounds"])
                moves[(status, gold if outcome == ConsensusOutcome.Outcome.ACCEPTED else None)].append(item_id)
                continue
            k, n = settings["consensus_k"], settings["consensus_n"]
            # With 3 labels and 5 votes there are a few dozen distinct vote patterns:
            # decide each once.
            key = (k, n, reference, _label_key(labels.get(item_id, ())))
            result = decisions.get(key)
            if result is None:
                result = decisions[key] = decide(list(key[3]), k=k, n=n, author_label=reference or None)
            if result.outcome == PENDING:
                # Fewer votes than needed (e.g. settings changed): collect more.
                moves[(Item.Status.OPEN, None)].append(item_id)
                continue
            row = _outcome_row(item_id, round_, result)
            outcomes.append(row)
            status = _status_after(row.outcome, author_id=author_id, round_=round_, revision_rounds=settings["revision_rounds"])
            moves[(status, result.gold if result.outcome == ACCEPTED else None)].append(item_id)

        # The items are locked and had no outcome for their round, so nothing conflicts;
        # ignore_conflicts only keeps a hand-made row from failing the whole chunk.
        ConsensusOutcome.objects.bulk_create(outcomes, batch_size=5_000, ignore_conflicts=True)
        for (status, gold), pks in moves.items():
            fields = {"status": status} if gold is None else {"status": status, "gold_label": gold}
            Item.objects.filter(pk__in=pks).update(**fields)
        return len(outcomes)


def consensus_sweep(limit: int = SWEEP_LIMIT, chunk_size: int = BATCH_SIZE) -> int:
    """Enqueue, in chunks, items whose votes are complete but that have no outcome: a lost
    message, or a broker that was down when the last vote came in. Enqueuing one that is
    already on its way is harmless: the computation is idempotent and skips locked items.
    Returns the number of items enqueued (not counting chunks the broker refused)."""
    from annotation.tasks import compute_consensus_batch

    stalled = list(
        Item.objects.filter(status=Item.Status.COMPLETE, project__kind__in=kinds_aggregating_by_consensus())
        .order_by("pk")
        .values_list("pk", flat=True)[:limit]
    )
    count = 0
    for start in range(0, len(stalled), chunk_size):
        chunk = stalled[start : start + chunk_size]
        if enqueue_rollback_unsafe(compute_consensus_batch, chunk):
            count += len(chunk)
    return count
