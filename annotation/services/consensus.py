"""The k-of-n consensus step of `nli_relabel` (FarsTail §3): when an item's round has all
its votes, decide it, write the outcome once, and move the item on — accepted, back to
its author for revision, or removed."""

from django.db import IntegrityError, transaction

from annotation.kinds.registry import get_kind, kinds_aggregating_by_consensus
from annotation.metrics.consensus import ACCEPTED, PENDING, decide
from annotation.models import Annotation, ConsensusOutcome, Item
from annotation.services.tasks_queue import enqueue_on_commit, enqueue_rollback_unsafe


def consensus_enqueue_on_commit(item_id: int) -> None:
    from annotation.tasks import compute_consensus

    enqueue_on_commit(compute_consensus, item_id)


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
        try:
            with transaction.atomic():
                outcome = ConsensusOutcome.objects.create(
                    item=item,
                    round=item.round,
                    outcome=ConsensusOutcome.Outcome.ACCEPTED if result.outcome == ACCEPTED else ConsensusOutcome.Outcome.FAILED,
                    gold=result.gold or "",
                    votes=result.votes,
                    n_votes=result.n_votes,
                    agreement=result.agreement,
                    label_changed=result.label_changed,
                )
        except IntegrityError:
            return ConsensusOutcome.objects.get(item=item, round=item.round)
        if result.outcome == ACCEPTED:
            item.status, item.gold_label = Item.Status.ACCEPTED, result.gold
        elif item.author_id is not None and item.round <= settings["revision_rounds"]:
            # Failed rounds go back to their author while revisions remain (FarsTail: one).
            item.status = Item.Status.NEEDS_REVISION
        else:
            item.status = Item.Status.REMOVED
        item.save(update_fields=["status", "gold_label"])
        return outcome


def consensus_sweep(limit: int = 5000) -> int:
    """Enqueue items whose votes are complete but that have no outcome: a lost message, or
    a broker that was down when the last vote came in. Enqueuing one that is already on
    its way is harmless: the computation is idempotent."""
    from annotation.tasks import compute_consensus

    stalled = Item.objects.filter(
        status=Item.Status.COMPLETE, project__kind__in=kinds_aggregating_by_consensus()
    ).values_list("pk", flat=True)[:limit]
    count = 0
    for item_id in stalled:
        enqueue_rollback_unsafe(compute_consensus, item_id)
        count += 1
    return count
