"""The export's reading as `main` wrote it before the facts were grouped per item by
PostgreSQL: five ORM queries per chunk, grouped here. The reference the product's reader
(selectors.exports.chunks_with_facts) is checked against byte for byte, kept as written."""

from collections import defaultdict
from collections.abc import Iterator

from django.db.models import QuerySet, TextField
from django.db.models.functions import Cast

from annotation.kinds.base import AdjudicationFact, ExportFacts
from annotation.kinds.registry import get_kind
from annotation.models import Adjudication, Annotation, ConsensusOutcome, Decision, Item, ItemAggregate, Project
from annotation.selectors import exports as export_reads
from annotation.selectors.exports import DecisionFact, OutcomeFact, _decision_record, _Values, chunked, export_items
from annotation.selectors.names import AUTHOR_PSEUDONYM, annotator_pseudonym
from annotation.services.decisions import RESTORE, decision_histories, standing_of
from annotation.sql import column_in


def chunks_with_facts(
    project: Project, items: QuerySet[Item], *, history: bool = False
) -> Iterator[tuple[list[Item], dict[int, ExportFacts]]]:
    """Items in chunks (`export_items`), each with its items' facts read in five queries
    (outcomes, annotations, adjudications, effective decisions, aggregates — the last only
    for kinds that aggregate labels), and with `history` a sixth, every decision of the
    chunk's items. Each is an index lookup by item id (`item_id = ANY(ids)`); the round is
    compared here, as a join to the item table for its round made PostgreSQL hash the
    whole table per chunk. Rows are read as tuples, only the columns written."""
    pseudonyms: dict[int, str] = {}
    kind = get_kind(project.kind)
    aggregation = kind.project_settings(project).get("aggregation") if kind.labels else None
    values = _Values()

    def pseudonym(user_id: int | None) -> str | None:
        if user_id is None:
            return None
        if user_id not in pseudonyms:
            pseudonyms[user_id] = annotator_pseudonym(project.pk, user_id)
        return pseudonyms[user_id]

    for chunk in chunked(export_items(items, project), export_reads.CHUNK_SIZE):
        ids = [item.id for item in chunk]
        round_of = dict(zip(ids, [item.round for item in chunk]))
        outcomes = {
            item_id: OutcomeFact(round_, outcome, gold, values(votes), n_votes, agreement, label_changed)
            for item_id, round_, outcome, gold, votes, n_votes, agreement, label_changed in _rows(
                ConsensusOutcome,
                ids,
                "item_id",
                "round",
                "outcome",
                "gold",
                _text("votes"),
                "n_votes",
                "agreement",
                "label_changed",
            )  # fmt: skip
            if round_ == round_of[item_id]
        }
        annotations: dict[int, list[tuple[str | None, dict]]] = defaultdict(list)
        for item_id, round_, annotator_id, value in _rows(
            Annotation, ids, "item_id", "round", "annotator_id", _text("value"), order=("id",)
        ):
            if round_ == round_of[item_id]:
                # The two lookups inlined: this loop runs once per vote.
                flat = values.flat.get(value)
                annotations[item_id].append(
                    (
                        pseudonyms.get(annotator_id) or pseudonym(annotator_id),
                        dict(flat) if flat is not None else values(value),
                    )
                )
        adjudications = {
            item_id: AdjudicationFact(label=label, by=pseudonym(by), at=at.isoformat(), comment=comment)
            for item_id, round_, label, by, at, comment in _rows(
                Adjudication, ids, "item_id", "round", "label", "adjudicator_id", "created_at", "comment"
            )
            if round_ == round_of[item_id]
        }
        # The round's decisions, oldest first. Where there are several, the ledger's own rule
        # (services.decisions.standing_of) says which one stands, on light unsaved instances;
        # a round's only decision stands unless it is a `restore`, which cancels itself (most
        # items: building a model instance for each took a sixth of an export's time).
        round_decisions: dict[int, list[tuple]] = defaultdict(list)
        for row in _rows(Decision, ids, "item_id", "round", "method", "status", "rank", "id", order=("item_id", "id")):
            if row[1] == round_of[row[0]]:
                round_decisions[row[0]].append(row)
        decisions = {}
        for item_id, candidates in round_decisions.items():
            if len(candidates) == 1 and candidates[0][2] != RESTORE:
                decisions[item_id] = DecisionFact(candidates[0][1], candidates[0][2], candidates[0][3])
                continue
            standing = standing_of(
                Decision(id=pk, item_id=item_id, round=round_, method=method, status=status, rank=rank)
                for item_id, round_, method, status, rank, pk in candidates
            )
            if standing is not None:
                decisions[item_id] = DecisionFact(standing.round, standing.method, standing.status)
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
            stored = _rows(
                ItemAggregate, ids, "item_id", "round", "method", "label", "confidence", order=("item_id", "method")
            )
            for item_id, round_, method, label, confidence in stored:
                if round_ == round_of[item_id]:
                    aggregates[item_id][method] = {"label": label or None, "confidence": confidence}
        facts = {
            item.id: ExportFacts(
                outcome=outcomes.get(item.id),
                annotations=tuple(annotations.get(item.id, ())),
                # An author known only by the pseudonym of the file it came from keeps it.
                author=pseudonym(item.author_id) or (item.computed or {}).get(AUTHOR_PSEUDONYM),
                adjudication=adjudications.get(item.id),
                aggregates=aggregates.get(item.id, {}),
                aggregation=aggregation,
                decision=decisions.get(item.id),
                history=None if histories is None else histories.get(item.id, []),
            )
            for item in chunk
        }
        yield chunk, facts


def _text(name: str) -> Cast:
    """A JSON column as its text, for `_Values` to decode."""
    return Cast(name, TextField())


def _rows(model, ids: list[int], *columns, order=()) -> Iterator[tuple]:
    """`columns` of `model`'s rows of the items `ids` (an index lookup by item id)."""
    return iter(model.objects.filter(column_in(model, "item_id", ids)).order_by(*order).values_list(*columns))
