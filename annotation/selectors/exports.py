"""The reads of an export: which items, and each chunk's facts (outcome, annotations,
adjudication, decisions, aggregates) in a fixed number of bulk queries per chunk, so the
number of queries grows with the number of chunks, never with the number of items."""

import gc
import json
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import TypeVar

from django.db.models import JSONField, QuerySet, TextField
from django.db.models.base import ModelState
from django.db.models.functions import Cast

from annotation.kinds.base import AdjudicationFact, ExportFacts
from annotation.kinds.registry import get_kind
from annotation.models import Adjudication, Annotation, ConsensusOutcome, Decision, Item, ItemAggregate, Project
from annotation.selectors.names import AUTHOR_PSEUDONYM, annotator_pseudonym
from annotation.services.decisions import RESTORE, decision_histories, standing_of
from annotation.sql import column_in

CHUNK_SIZE = 2000
T = TypeVar("T")


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


def export_items(items: QuerySet[Item], project: Project | None = None) -> Iterator[Item]:
    """The items of `items`, streamed through a server-side cursor (`.iterator`) and built
    without the ORM's per-row work: the columns are read as one tuple a row, JSON columns
    as their text, decoded here (an empty object or list without the decoder), and the
    instance is filled in place of `Model.__init__`, which sets every field through its
    descriptor. They are ordinary, saved Item instances (`item.project` is the exported
    `project`, when given). Building model instances the ORM's way (items, outcomes,
    decisions) took a fifth of an export's time."""
    select = [Cast(name, TextField()) if name in _ITEM_JSON else name for name in _ITEM_COLUMNS]
    db = items.db
    state = ModelState
    new = Item.__new__
    decoded = [(index, name) for index, name in enumerate(_ITEM_COLUMNS) if name in _ITEM_JSON]
    for row in items.values_list(*select).iterator(chunk_size=CHUNK_SIZE):
        values = dict(zip(_ITEM_COLUMNS, row))
        for index, name in decoded:
            values[name] = json_text(row[index])
        item = new(Item)
        item.__dict__.update(values)
        item._state = state()
        item._state.adding = False
        item._state.db = db
        if project is not None:
            item._state.fields_cache["project"] = project
        yield item


_ITEM_COLUMNS = tuple(field.attname for field in Item._meta.concrete_fields)
_ITEM_JSON = frozenset(field.attname for field in Item._meta.concrete_fields if isinstance(field, JSONField))
_EMPTY_JSON = {"{}": dict, "[]": list}


def json_text(text: str | None):
    """A JSON column read as text, decoded as the ORM decodes it (`JSONField.from_db_value`)."""
    if text is None:
        return None
    empty = _EMPTY_JSON.get(text)
    return empty() if empty is not None else json.loads(text)


class _Values:
    """JSON values read as text, decoded once per distinct text: an export's votes repeat a
    handful of short values ({"label": "neutral"}) thousands of times. A decoded object
    whose members are all plain values is handed out as a fresh shallow copy, which is a
    full copy; any other is decoded anew each time, so no two records share a mutable part."""

    def __init__(self):
        self.flat: dict[str, dict] = {}

    def __call__(self, text: str | None):
        if text is None:
            return None
        flat = self.flat.get(text)
        if flat is not None:
            return dict(flat)
        value = json_text(text)
        if (
            isinstance(value, dict)
            and len(text) <= _SHORT_VALUE
            and len(self.flat) < _DISTINCT_VALUES
            and all(isinstance(member, (str, int, float, bool, type(None))) for member in value.values())
        ):
            self.flat[text] = dict(value)
        return value


_SHORT_VALUE = 200
_DISTINCT_VALUES = 10_000


@dataclass(frozen=True)
class OutcomeFact:
    """The round's consensus outcome as the export writes it (ConsensusOutcome's fields)."""

    round: int
    outcome: str
    gold: str
    votes: dict
    n_votes: int
    agreement: float
    label_changed: bool


@dataclass(frozen=True)
class DecisionFact:
    """The round's effective decision as the export writes it (Decision's fields)."""

    round: int
    method: str
    status: str


def chunks_with_facts(
    project: Project, items: QuerySet[Item], *, history: bool = False
) -> Iterator[tuple[list[Item], dict[int, ExportFacts]]]:
    """`_chunks_with_facts` with the collector paused while a chunk is read (`collector_paused`)."""
    return collector_paused(_chunks_with_facts(project, items, history=history))


def collector_paused(chunks: Iterator[T]) -> Iterator[T]:
    """`chunks` with Python's cyclic garbage collector paused while each chunk is made (an
    export's reads, `chunks_with_facts`, and its writer, services.exports.export_stream),
    never across a `yield` (a client may leave a streamed file half read). A chunk makes
    tens of thousands of short-lived dicts and tuples, none of them in a cycle, yet every
    few hundred of them set off a collection, and the chunk's own, still alive, are
    traversed again and again: that was over 40 % of an export's CPU (10,000 items × 5
    votes, load 4-5: JSONL 1.54 s of CPU with the collector, 0.87 s without; CSV 1.42 and
    0.80 s). The pause is process-wide: another thread's cycles wait for the end of the
    step, and a step that finds the collector already paused (another export's) leaves
    turning it on again to the one that paused it."""
    while True:
        paused = gc.isenabled()
        gc.disable()
        try:
            chunk = next(chunks)
        except StopIteration:
            return
        finally:
            if paused:
                gc.enable()
        yield chunk


def _chunks_with_facts(
    project: Project, items: QuerySet[Item], *, history: bool
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

    for chunk in chunked(export_items(items, project), CHUNK_SIZE):
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
