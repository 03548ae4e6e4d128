"""The reads of an export: which items, and each chunk's facts (outcome, annotations,
adjudication, decisions, aggregates) in a fixed number of bulk queries per chunk, so the
number of queries grows with the number of chunks, never with the number of items."""

import functools
import gc
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import TypeVar

from django.db import connection, connections, transaction
from django.db.models import JSONField, QuerySet, TextField
from django.db.models.base import ModelState
from django.db.models.functions import Cast

from annotation.kinds.base import AdjudicationFact, ExportFacts
from annotation.kinds.registry import get_kind
from annotation.models import Adjudication, Annotation, ConsensusOutcome, Decision, Item, ItemAggregate, Project
from annotation.selectors.names import AUTHOR_PSEUDONYM, annotator_pseudonym
from annotation.services.decisions import RESTORE, decision_histories, standing_of

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


def _chunks_with_facts(
    project: Project, items: QuerySet[Item], *, history: bool
) -> Iterator[tuple[list[Item], dict[int, ExportFacts]]]:
    """Items in chunks (`export_items`), each with its items' facts (outcome, annotations,
    adjudication, effective decision, aggregates — the last only for kinds that aggregate
    labels) read in one query, one row per item (`_fact_rows`), and with `history` a
    second, every decision of the chunk's items. Reading the facts as rows of their own
    tables (about eleven an item) and grouping them here was most of an export's time."""
    pseudonyms: dict[int, str] = {}
    kind = get_kind(project.kind)
    aggregation = kind.project_settings(project).get("aggregation") if kind.labels else None
    values = _Values()
    flat = values.flat

    def pseudonym(user_id: int | None) -> str | None:
        if user_id is None:
            return None
        if user_id not in pseudonyms:
            pseudonyms[user_id] = annotator_pseudonym(project.pk, user_id)
        return pseudonyms[user_id]

    def annotation(annotator_id: int, value: str) -> tuple[str | None, dict]:
        # The lookups inlined: this runs once per vote.
        known = flat.get(value)
        return (
            pseudonyms.get(annotator_id) or pseudonym(annotator_id),
            dict(known) if known is not None else values(value),
        )

    for chunk in chunked(export_items(items, project), CHUNK_SIZE):
        found = {}
        for row in _fact_rows(chunk, aggregates=aggregation is not None):
            (item_id, round_, outcome, gold, votes, n_votes, agreement, label_changed, annotators, annotation_values,
             adjudicated, adjudicator, adjudicated_at, comment, methods, statuses, ranks, decision_ids,
             aggregate_methods, aggregate_labels, confidences) = row  # fmt: skip
            found[item_id] = (
                None
                if outcome is None
                else OutcomeFact(round_, outcome, gold, values(votes), n_votes, agreement, label_changed),
                () if annotators is None else tuple(map(annotation, annotators, annotation_values)),
                None
                if adjudicated is None
                else AdjudicationFact(
                    label=adjudicated, by=pseudonym(adjudicator), at=adjudicated_at.isoformat(), comment=comment
                ),
                None if methods is None else _standing(item_id, round_, methods, statuses, ranks, decision_ids),
                {}
                if aggregate_methods is None
                else {
                    method: {"label": label or None, "confidence": confidence}
                    for method, label, confidence in zip(aggregate_methods, aggregate_labels, confidences)
                },
            )
        histories = (
            {
                item_id: [_decision_record(d, pseudonym) for d in rows]
                for item_id, rows in decision_histories([item.id for item in chunk]).items()
            }
            if history
            else None
        )
        facts = {}
        for item in chunk:
            outcome_fact, annotations, adjudication, decision, aggregates = found[item.id]
            facts[item.id] = ExportFacts(
                outcome=outcome_fact,
                annotations=annotations,
                # An author known only by the pseudonym of the file it came from keeps it.
                author=pseudonym(item.author_id) or (item.computed or {}).get(AUTHOR_PSEUDONYM),
                adjudication=adjudication,
                aggregates=aggregates,
                aggregation=aggregation,
                decision=decision,
                history=None if histories is None else histories.get(item.id, []),
            )
        yield chunk, facts


def collector_paused(chunks: Iterator[T]) -> Iterator[T]:
    """`chunks` with Python's cyclic garbage collector paused while each chunk is made (an
    export's reads, `chunks_with_facts`, and its writer, services.exports.export_stream),
    never across a `yield` (a client may leave a streamed file half read). A chunk makes tens of thousands of short-lived dicts and tuples, none of them in a
    cycle, yet every few hundred of them set off a collection, and the chunk's own, still
    alive, are traversed again and again: that took a third to half of an export's CPU
    (10,000 items × 5 votes: the reads 0.68-0.91 s of CPU with the collector, 0.36-0.38 s
    without). The pause is process-wide: another thread's cycles wait for the end of the
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


def _standing(item_id: int, round_: int, methods, statuses, ranks, ids) -> DecisionFact | None:
    """The round's effective decision among its decisions (oldest first). Where there are
    several, the ledger's own rule (services.decisions.standing_of) says which one stands,
    on light unsaved instances; a round's only decision stands unless it is a `restore`,
    which cancels itself (most items: building a model instance for each took a sixth of
    an export's time)."""
    if len(methods) == 1:
        return None if methods[0] == RESTORE else DecisionFact(round_, methods[0], statuses[0])
    standing = standing_of(
        Decision(id=pk, item_id=item_id, round=round_, method=method, status=status, rank=rank)
        for method, status, rank, pk in zip(methods, statuses, ranks, ids)
    )
    return None if standing is None else DecisionFact(standing.round, standing.method, standing.status)


def _fact_rows(chunk: list[Item], *, aggregates: bool) -> Iterable[tuple]:
    """One row per item of `chunk`, of the item's current round: (item id, round; the
    consensus outcome's outcome, gold, votes as JSON text, n_votes, agreement,
    label_changed — None without one; the annotations' annotator ids and values as JSON
    text, oldest first — None without any; the adjudication's label, adjudicator id, time
    and comment — None without one; the decisions' methods, statuses, ranks and ids,
    oldest first — None without any; the aggregates' methods, labels and confidences by
    method — None without any, or without `aggregates`).

    On PostgreSQL one query: each table read by its item index in a LATERAL subquery per
    item (the LIMIT and the aggregates keep PostgreSQL from planning a join that hashes a
    whole table), the many-row facts as arrays. Elsewhere five queries grouped here."""
    ids = [item.id for item in chunk]
    rounds = [item.round for item in chunk]
    connection = connections[chunk[0]._state.db or "default"]
    if connection.vendor != "postgresql":
        return _fact_rows_portable(ids, rounds, aggregates=aggregates)
    # JIT off for this statement: its cost estimate (a few index scans per item) passes the
    # JIT threshold, and compiling it took PostgreSQL 0.4-2 s a chunk, several times the
    # query itself. The ids as one array literal: an ARRAY[...] of 2,000 parameters takes
    # the server 15-25 ms to parse, the literal under a millisecond.
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        cursor.execute("SET LOCAL jit = off")
        cursor.execute(_facts_sql(aggregates), (_int_array(ids), _int_array(rounds)))
        return cursor.fetchall()


def _int_array(numbers: list[int]) -> str:
    """PostgreSQL's text form of an array of integers."""
    return "{" + ",".join(map(str, numbers)) + "}"


@functools.cache
def _facts_sql(aggregates: bool) -> str:
    table = {
        model.__name__: connection.ops.quote_name(model._meta.db_table)
        for model in (ConsensusOutcome, Annotation, Adjudication, Decision, ItemAggregate)
    }
    of_round = "item_id = i.id AND round = i.round"
    aggregate_columns, aggregate_join = "NULL, NULL, NULL", ""
    if aggregates:
        aggregate_columns = "g.methods, g.labels, g.confidences"
        aggregate_join = f"""
        CROSS JOIN LATERAL (
            SELECT array_agg(method ORDER BY method) AS methods, array_agg(label ORDER BY method) AS labels,
                   array_agg(confidence ORDER BY method) AS confidences
            FROM {table["ItemAggregate"]} WHERE {of_round}) g"""
    return f"""
        SELECT i.id, i.round, o.outcome, o.gold, o.votes::text, o.n_votes, o.agreement, o.label_changed,
               a.annotators, a.annotation_values, j.label, j.adjudicator_id, j.created_at, j.comment,
               d.methods, d.statuses, d.ranks, d.ids, {aggregate_columns}
        FROM unnest(%s::bigint[], %s::integer[]) AS i(id, round)
        LEFT JOIN LATERAL (
            SELECT outcome, gold, votes, n_votes, agreement, label_changed
            FROM {table["ConsensusOutcome"]} WHERE {of_round} LIMIT 1) o ON true
        CROSS JOIN LATERAL (
            SELECT array_agg(annotator_id ORDER BY id) AS annotators,
                   array_agg(value::text ORDER BY id) AS annotation_values
            FROM {table["Annotation"]} WHERE {of_round}) a
        LEFT JOIN LATERAL (
            SELECT label, adjudicator_id, created_at, comment
            FROM {table["Adjudication"]} WHERE {of_round} LIMIT 1) j ON true
        CROSS JOIN LATERAL (
            SELECT array_agg(method ORDER BY id) AS methods, array_agg(status ORDER BY id) AS statuses,
                   array_agg(rank ORDER BY id) AS ranks, array_agg(id ORDER BY id) AS ids
            FROM {table["Decision"]} WHERE {of_round}) d{aggregate_join}"""


def _fact_rows_portable(ids: list[int], rounds: list[int], *, aggregates: bool) -> list[tuple]:
    """`_fact_rows` through the ORM, for databases without arrays and LATERAL (SQLite)."""
    round_of = dict(zip(ids, rounds))
    rows = {item_id: [item_id, round_, *([None] * 19)] for item_id, round_ in round_of.items()}

    def of_round(model, *columns, order=("id",)):
        found = model.objects.filter(item_id__in=ids).order_by(*order).values_list("item_id", "round", *columns)
        return ((rows[item_id], rest) for item_id, round_, *rest in found if round_ == round_of[item_id])

    def append(row, start, rest):
        for offset, value in enumerate(rest):
            row[start + offset] = [*(row[start + offset] or ()), value]

    for row, rest in of_round(ConsensusOutcome, "outcome", "gold", Cast("votes", TextField()), "n_votes",
                              "agreement", "label_changed"):  # fmt: skip
        row[2:8] = rest
    for row, rest in of_round(Annotation, "annotator_id", Cast("value", TextField())):
        append(row, 8, rest)
    for row, rest in of_round(Adjudication, "label", "adjudicator_id", "created_at", "comment"):
        row[10:14] = rest
    for row, rest in of_round(Decision, "method", "status", "rank", "id"):
        append(row, 14, rest)
    if aggregates:
        for row, rest in of_round(ItemAggregate, "method", "label", "confidence", order=("method",)):
            append(row, 18, rest)
    return [tuple(row) for row in rows.values()]


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
