"""The reads of an export: which items, and each chunk's facts (outcome, annotations,
adjudication, decisions, aggregates) in a fixed number of bulk queries per chunk, so the
number of queries grows with the number of chunks, never with the number of items."""

from collections import defaultdict
from collections.abc import Iterable, Iterator
from itertools import islice

from django.db.models import QuerySet

from annotation.kinds.base import AdjudicationFact, ExportFacts
from annotation.kinds.registry import get_kind
from annotation.models import Adjudication, Annotation, ConsensusOutcome, Item, ItemAggregate, Project
from annotation.selectors.names import annotator_pseudonym
from annotation.services.decisions import decision_histories, effective_decisions
from annotation.sql import column_in

CHUNK_SIZE = 2000


def export_items_queryset(spec) -> QuerySet[Item]:
    """The items to export (`spec`: a services.exports.ExportSpec), in their source order
    (file position, then id)."""
    # Coherence probes are reversed copies made for checking annotators, never gold.
    items = Item.objects.filter(project=spec.project, probe_of__isnull=True)
    if spec.status != "all":
        items = items.filter(status=spec.status)
    if spec.split is not None:
        items = spec.splits.filter(items, spec.split) if spec.splits is not None else items.filter(split=spec.split)
    return items.order_by("position", "id")


def chunked(iterable: Iterable, size: int) -> Iterator[list]:
    """Lists of `size` from `iterable`, the last one shorter."""
    iterator = iter(iterable)
    while chunk := list(islice(iterator, size)):
        yield chunk


def chunks_with_facts(
    project: Project, items: QuerySet[Item], *, history: bool = False
) -> Iterator[tuple[list[Item], dict[int, ExportFacts]]]:
    """Items in chunks, each with its items' facts read in four queries (outcomes,
    annotations, adjudication and effective decisions of the current round), a fifth, the
    aggregates of the current round, for kinds that aggregate labels, and with `history`
    a sixth, every decision of the chunk's items."""
    pseudonyms: dict[int, str] = {}
    kind = get_kind(project.kind)
    aggregation = kind.project_settings(project).get("aggregation") if kind.labels else None

    def pseudonym(user_id: int | None) -> str | None:
        if user_id is None:
            return None
        if user_id not in pseudonyms:
            pseudonyms[user_id] = annotator_pseudonym(project.pk, user_id)
        return pseudonyms[user_id]

    for chunk in chunked(items.iterator(chunk_size=CHUNK_SIZE), CHUNK_SIZE):
        ids = [item.pk for item in chunk]
        # Each read is an index lookup by item id; the round is compared here, as a join
        # to the item table for its round makes PostgreSQL hash the whole table per chunk.
        round_of = {item.pk: item.round for item in chunk}
        outcomes = {
            outcome.item_id: outcome
            for outcome in ConsensusOutcome.objects.filter(column_in(ConsensusOutcome, "item_id", ids)).order_by()
            if outcome.round == round_of[outcome.item_id]
        }
        annotations: dict[int, list[tuple[str | None, dict]]] = defaultdict(list)
        rows = (
            Annotation.objects.filter(column_in(Annotation, "item_id", ids))
            .order_by("id")
            .values_list("item_id", "round", "annotator_id", "value")
        )
        for item_id, round_, annotator_id, value in rows:
            if round_ == round_of[item_id]:
                annotations[item_id].append((pseudonym(annotator_id), value))
        adjudications = {
            adjudication.item_id: AdjudicationFact(
                label=adjudication.label,
                by=pseudonym(adjudication.adjudicator_id),
                at=adjudication.created_at.isoformat(),
                comment=adjudication.comment,
            )
            for adjudication in Adjudication.objects.filter(column_in(Adjudication, "item_id", ids)).order_by()
            if adjudication.round == round_of[adjudication.item_id]
        }
        decisions = effective_decisions((item.pk, item.round) for item in chunk)
        histories = (
            {
                item_id: [_decision_record(d, pseudonym) for d in rows]
                for item_id, rows in decision_histories(ids).items()
            }
            if history
            else None
        )
        aggregates: dict[int, dict] = defaultdict(dict)
        if aggregation is not None:
            stored = (
                ItemAggregate.objects.filter(column_in(ItemAggregate, "item_id", ids))
                .order_by("item_id", "method")
                .values_list("item_id", "round", "method", "label", "confidence")
            )
            for item_id, round_, method, label, confidence in stored:
                if round_ == round_of[item_id]:
                    aggregates[item_id][method] = {"label": label or None, "confidence": confidence}
        facts = {
            item.pk: ExportFacts(
                outcome=outcomes.get(item.pk),
                annotations=tuple(annotations.get(item.pk, ())),
                author=pseudonym(item.author_id),
                adjudication=adjudications.get(item.pk),
                aggregates=aggregates.get(item.pk, {}),
                aggregation=aggregation,
                decision=decisions.get(item.pk),
                history=None if histories is None else histories.get(item.pk, []),
            )
            for item in chunk
        }
        yield chunk, facts


def _decision_record(decision, pseudonym) -> dict:
    """A decision as exports and `GET /api/items/{id}/decisions/` for reviewers give it:
    a person by their pseudonym."""
    return {
        "round": decision.round,
        "method": decision.method,
        "value": decision.value,
        "status": decision.status,
        "confidence": decision.confidence,
        "by": pseudonym(decision.decided_by_id),
        "job": decision.job_id,
        "override": decision.override,
        "comment": decision.comment,
        "supersedes": decision.supersedes_id,
        "at": decision.created_at.isoformat(),
    }
