"""The k-of-n consensus step of `nli_relabel` (FarsTail §3): when an item's round has all
its votes, decide it, write the outcome once, and record the decision in the ledger
(services.decisions), which moves the item on — accepted, back to its author for
revision, or removed. With a pool method chosen (Dawid-Skene, MACE), the item waits as
`deciding` for the aggregation job, which decides it.

Two paths with the same semantics:

* `consensus_compute_for_item`: one item, run by the task enqueued on commit when the
  item's last vote comes in (the common, interactive case).
* `consensus_compute_batch`: many items, run by the batch task that the periodic sweep
  enqueues in chunks (a lost message, a broker that was down, a bulk load). Per chunk it
  locks the complete items it can get (SKIP LOCKED: an item another worker holds is that
  worker's), reads their votes in one query, decides them in memory with
  `metrics.consensus.decide`, writes the outcomes in bulk and records the decisions in
  the ledger (services.decisions, which moves the items). One transaction per chunk, so a killed worker loses at most a
  chunk's work and the redelivery redoes it; already decided items are skipped.
"""

from __future__ import annotations

import io
import json
from collections import defaultdict
from typing import Iterable

from django.db import IntegrityError, connection, transaction
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from annotation.kinds.registry import get_kind, installed_kind, kinds_aggregating_by_consensus
from annotation.metrics.consensus import ACCEPTED, PENDING, ConsensusResult, decide_round
from annotation.models import Annotation, ConsensusOutcome, Item, Project
from annotation.services.aggregation import aggregation_request_after_commit, aggregation_request_on_commit
from annotation.services.decisions import (
    RANK_ROUND_RULE,
    Verdict,
    decision_record,
    decisions_record_bulk,
    pool_method_deciding,
    round_progress,
    round_progress_bulk,
)
from annotation.services.tasks_queue import enqueue_on_commit, enqueue_rollback_unsafe

# Items per transaction in the batch path, and per message the sweep sends. 10K items
# hold ~50K votes in memory and keep a chunk's transaction well under a second.
BATCH_SIZE = 10_000
# A sweep enqueues at most this many items; the next sweep takes the rest.
SWEEP_LIMIT = 500_000


# What the per-item path reads of the item it locks (decision_record saves its gold and
# status by name, so the other columns can stay unread).
_LOCKED_ITEM_FIELDS = ("id", "project_id", "round", "status", "reference_label", "author_id", "gold_label")
# The outcome of the locked item's current round, if stored.
_round_outcome = ConsensusOutcome.objects.filter(item_id=OuterRef("pk"), round=OuterRef("round")).order_by()


def consensus_enqueue_on_commit(item_id: int) -> None:
    enqueue_on_commit("annotation.tasks.compute_consensus", item_id)


def _round_rule(settings: dict) -> tuple:
    """What `decide_round` needs of the project's settings, hashable: (method, k, n, adaptive)."""
    return (
        settings.get("aggregation", "k_of_n"),
        settings["consensus_k"],
        settings["consensus_n"],
        settings.get("overlap_min") is not None,
    )


def _decide(labels, rule: tuple, reference: str | None) -> ConsensusResult:
    method, k, n, adaptive = rule
    return decide_round(labels, method=method, k=k, n=n, adaptive=adaptive, author_label=reference or None)


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
    serialise on the item's row lock; the unique (item, round) key backs that up. When the
    project's chosen method is a pool method, the round waits (`deciding`) for the
    aggregation job instead (services.decisions). An item of a project whose kind is not
    installed is left complete and undecided. Once the decision commits, the project's
    aggregation is asked for here, in this run (`aggregation_request_after_commit`): this
    runs on the worker already, so a task queued only to ask would cost the worker a
    second task per closed round."""
    with transaction.atomic():
        # The lock, the project's kind and settings, and whether the round has its outcome
        # already, in one statement; only the columns this step reads (the payload and the
        # project's texts are not).
        item = (
            Item.objects.select_for_update()
            .select_related("project")
            .only(*_LOCKED_ITEM_FIELDS, "project__kind", "project__settings")
            .annotate(round_outcome_id=Subquery(_round_outcome.values("pk")[:1]))
            .filter(pk=item_id)
            .first()
        )
        if item is None:
            return None
        if item.status != Item.Status.COMPLETE:
            # Read afresh: the subquery's snapshot predates a wait for the lock, and the
            # holder may have decided the round (the savepoint below covers the other case).
            return ConsensusOutcome.objects.filter(item=item, round=item.round).first()
        if item.round_outcome_id is not None:
            return ConsensusOutcome.objects.filter(pk=item.round_outcome_id).first()
        kind = installed_kind(item.project.kind)
        if kind is None:  # the kind left the site: the item waits, undecided, for its return
            return None
        settings = kind.settings_for(item.project.settings)
        if pool_method_deciding(kind, settings):
            round_progress(item, Item.Status.DECIDING)
            aggregation_request_after_commit(item.project_id, [item.pk])
            return None
        labels = [
            value.get("label")
            for value in Annotation.objects.filter(item=item, round=item.round).values_list("value", flat=True)
        ]
        result = _decide(labels, _round_rule(settings), item.reference_label)
        if result.outcome == PENDING:
            # Fewer votes than needed (e.g. settings changed): collect more.
            round_progress(item, Item.Status.OPEN)
            return None
        outcome = _outcome_row(item.pk, item.round, result)
        try:
            with transaction.atomic():
                outcome.save(force_insert=True)
        except IntegrityError:
            return ConsensusOutcome.objects.get(item=item, round=item.round)
        accepted = result.outcome == ACCEPTED
        decision_record(
            item=item,
            method=settings["aggregation"],
            rank=RANK_ROUND_RULE,
            value=result.gold if accepted else None,
            status=kind.status_after_round(
                accepted=accepted, author_id=item.author_id, round_=item.round, settings=settings
            ),
            confidence=result.agreement,
        )
        aggregation_request_after_commit(item.project_id, [item.pk])
        return outcome


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
    store = _PostgresStore() if connection.vendor == "postgresql" else _OrmStore()
    with transaction.atomic():
        # (item id, project id, round, reference label, author id, stored outcome, its gold)
        locked = store.lock_complete(ids)
        if not locked:
            return 0
        consensus_kinds = set(kinds_aggregating_by_consensus())
        projects = {}
        for project in Project.objects.filter(pk__in={row[1] for row in locked}).only("pk", "kind", "settings"):
            if project.kind in consensus_kinds:
                kind = get_kind(project.kind)
                projects[project.pk] = (kind, kind.settings_for(project.settings))
        deciding = {row[0] for row in locked if row[1] in projects and pool_method_deciding(*projects[row[1]])}
        labels = store.current_labels(
            [(row[0], row[2]) for row in locked if row[1] in projects and row[5] is None and row[0] not in deciding]
        )

        decisions: dict[tuple, ConsensusResult] = {}
        outcomes: list[tuple[int, int, ConsensusResult]] = []
        verdicts: dict[str, list[Verdict]] = defaultdict(list)  # by method: the rule of each project's round
        reopened: list[int] = []
        for item_id, project_id, round_, reference, author_id, stored, stored_gold in locked:
            if project_id not in projects:
                continue  # not a consensus kind: not this step's item
            if item_id in deciding:
                continue  # the chosen pool method decides it on the worker
            kind, settings = projects[project_id]
            if stored is not None:
                # An outcome already stored for the current round: the item follows it and
                # nothing is decided again. (Outcome and decision are written in one
                # transaction, so this only repairs a hand edit; it keeps the sweep from
                # finding the same item forever.)
                accepted = stored == ConsensusOutcome.Outcome.ACCEPTED
                status = kind.status_after_round(
                    accepted=accepted, author_id=author_id, round_=round_, settings=settings
                )
                verdicts[settings["aggregation"]].append(Verdict(item_id, stored_gold if accepted else None, status))
                continue
            rule = _round_rule(settings)
            # With 3 labels and 5 votes there are a few dozen distinct vote patterns (the
            # stores give each item's labels in a canonical order): decide each once.
            key = (rule, reference, labels.get(item_id, ()))
            result = decisions.get(key)
            if result is None:
                result = decisions[key] = _decide(list(key[2]), rule, reference)
            if result.outcome == PENDING:
                # Fewer votes than needed (e.g. settings changed): collect more.
                reopened.append(item_id)
                continue
            outcomes.append((item_id, round_, result))
            accepted = result.outcome == ACCEPTED
            status = kind.status_after_round(accepted=accepted, author_id=author_id, round_=round_, settings=settings)
            verdicts[settings["aggregation"]].append(
                Verdict(item_id, result.gold if accepted else None, status, result.agreement)
            )
        store.write_outcomes(outcomes)
        for method, decided in verdicts.items():
            decisions_record_bulk(decided, method=method, rank=RANK_ROUND_RULE)
        round_progress_bulk(reopened, Item.Status.OPEN)
        round_progress_bulk(deciding, Item.Status.DECIDING)
        for project_id in {row[1] for row in locked if row[1] in projects} if (outcomes or deciding) else ():
            aggregation_request_on_commit(project_id, [row[0] for row in locked if row[1] == project_id])
        return len(outcomes)


def _outcome_value(result: ConsensusResult) -> str:
    return (ConsensusOutcome.Outcome.ACCEPTED if result.outcome == ACCEPTED else ConsensusOutcome.Outcome.FAILED).value


class _OrmStore:
    """The batch path's reads and writes through the ORM (SQLite, the embedded default;
    it has no row locks, its writers are serialised by the database lock)."""

    def lock_complete(self, ids: list[int]) -> list[tuple]:
        rows = list(
            Item.objects.select_for_update(skip_locked=True)
            .filter(pk__in=ids, status=Item.Status.COMPLETE)
            .order_by()
            .values_list("pk", "project_id", "round", "reference_label", "author_id")
        )
        round_of = {row[0]: row[2] for row in rows}
        stored = {
            item_id: (outcome, gold)
            for item_id, round_, outcome, gold in ConsensusOutcome.objects.filter(item_id__in=list(round_of))
            .order_by()
            .values_list("item_id", "round", "outcome", "gold")
            if round_of[item_id] == round_
        }
        return [(*row, *stored.get(row[0], (None, None))) for row in rows]

    def current_labels(self, items: list[tuple[int, int]]) -> dict[int, tuple]:
        """{item id: its labels in the given round, abstentions left out, in a canonical
        order}. The JSON is read whole, as the per-item path reads it: on SQLite, KT()
        turns a JSON null into the text 'null', which would count as a label."""
        round_of = dict(items)
        labels: dict[int, list] = defaultdict(list)
        rows = Annotation.objects.filter(item_id__in=list(round_of)).order_by().values_list("item_id", "round", "value")
        for item_id, round_, value in rows.iterator(chunk_size=20_000):
            label = value.get("label") if isinstance(value, dict) else None
            if round_of[item_id] == round_ and label is not None:
                labels[item_id].append(label)
        return {
            item_id: tuple(sorted(values, key=lambda v: (type(v).__name__, str(v))))
            for item_id, values in labels.items()
        }

    def write_outcomes(self, outcomes: list[tuple[int, int, ConsensusResult]]) -> None:
        ConsensusOutcome.objects.bulk_create(
            [_outcome_row(item_id, round_, result) for item_id, round_, result in outcomes],
            batch_size=2_000,
            ignore_conflicts=True,
        )


# Separates labels in string_agg; a control character no label may contain.
_SEPARATOR = "\x1f"


def _copy_field(value: str) -> str:
    """A text value escaped for COPY's text format."""
    return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


class _PostgresStore:
    """The same reads and writes in raw SQL with array parameters and COPY: the ORM
    spends longer building 10K-element IN lists and 10K model instances than PostgreSQL
    spends on the rows. One statement each: the lock (FOR UPDATE OF the item SKIP LOCKED,
    with the round's stored outcome if any), the labels (aggregated per item in SQL, so
    10K rows come back instead of 50K) and the outcomes (COPY)."""

    def __init__(self):
        quote = connection.ops.quote_name
        self.item = quote(Item._meta.db_table)
        self.annotation = quote(Annotation._meta.db_table)
        self.outcome = quote(ConsensusOutcome._meta.db_table)

    def lock_complete(self, ids: list[int]) -> list[tuple]:
        with connection.cursor() as cursor:
            # No ORDER BY: SKIP LOCKED never waits, so lock order cannot deadlock.
            cursor.execute(
                f"SELECT t.id, t.project_id, t.round, t.reference_label, t.author_id, o.outcome, o.gold "
                f"FROM {self.item} t LEFT JOIN {self.outcome} o ON o.item_id = t.id AND o.round = t.round "
                "WHERE t.id = ANY(%s) AND t.status = %s FOR UPDATE OF t SKIP LOCKED",
                [ids, Item.Status.COMPLETE.value],
            )
            return cursor.fetchall()

    def current_labels(self, items: list[tuple[int, int]]) -> dict[int, tuple]:
        if not items:
            return {}
        round_of = dict(items)
        with connection.cursor() as cursor:
            # string_agg skips NULLs: abstentions (no label, or a JSON null) drop out, as
            # in decide(). Unordered: sorting inside each group costs more on the server
            # than sorting the few hundred distinct strings here. `item_id = ANY(…)` and
            # the round filtered here: a join with an unnest of (item, round) pairs gets
            # a merge join that walks the annotation index from its start in every chunk.
            cursor.execute(
                f"SELECT item_id, round, string_agg(value ->> 'label', %s) FROM {self.annotation} "
                "WHERE item_id = ANY(%s) GROUP BY item_id, round",
                [_SEPARATOR, list(round_of)],
            )
            rows = cursor.fetchall()
        # Each distinct string is split and sorted once (with 3 labels and 4 votes there
        # are at most 81 of them), so that equal multisets give equal keys.
        split: dict[str, tuple] = {}
        result = {}
        for item_id, round_, joined in rows:
            if joined is None or round_of[item_id] != round_:
                continue
            labels = split.get(joined)
            if labels is None:
                labels = split[joined] = tuple(sorted(joined.split(_SEPARATOR)))
            result[item_id] = labels
        return result

    def write_outcomes(self, outcomes: list[tuple[int, int, ConsensusResult]]) -> None:
        if outcomes:
            self._write_outcomes(outcomes)

    def _write_outcomes(self, outcomes: list[tuple[int, int, ConsensusResult]]) -> None:
        now = timezone.now().isoformat()
        # A few dozen distinct results per chunk: format each one's columns once.
        tails: dict[int, str] = {}
        lines = []
        for item_id, round_, result in outcomes:
            tail = tails.get(id(result))
            if tail is None:
                tail = tails[id(result)] = "\t".join(
                    (
                        _outcome_value(result),
                        _copy_field(result.gold or ""),
                        _copy_field(json.dumps(result.votes, ensure_ascii=False)),
                        str(result.n_votes),
                        repr(float(result.agreement)),
                        "t" if result.label_changed else "f",
                        now,
                    )
                )
            lines.append(f"{item_id}\t{round_}\t{tail}\n")
        columns = "(item_id, round, outcome, gold, votes, n_votes, agreement, label_changed, computed_at)"
        with connection.cursor() as cursor:
            raw = cursor.cursor
            if hasattr(raw, "copy_expert"):
                # The items are locked and had no outcome for their round, so COPY (which
                # cannot skip conflicts) has none to meet.
                raw.copy_expert(f"COPY {self.outcome} {columns} FROM STDIN", io.StringIO("".join(lines)))
            else:  # psycopg 3
                with raw.copy(f"COPY {self.outcome} {columns} FROM STDIN") as copy:
                    copy.write("".join(lines))


def consensus_sweep(limit: int = SWEEP_LIMIT, chunk_size: int = BATCH_SIZE) -> int:
    """Enqueue, in chunks, items whose votes are complete but that have no outcome: a lost
    message, or a broker that was down when the last vote came in. Enqueuing one that is
    already on its way is harmless: the computation is idempotent and skips locked items.
    Returns the number of items enqueued (not counting chunks the broker refused)."""
    stalled = list(
        Item.objects.filter(status=Item.Status.COMPLETE, project__kind__in=kinds_aggregating_by_consensus())
        .order_by("pk")
        .values_list("pk", flat=True)[:limit]
    )
    count = 0
    for start in range(0, len(stalled), chunk_size):
        chunk = stalled[start : start + chunk_size]
        if enqueue_rollback_unsafe("annotation.tasks.compute_consensus_batch", chunk):
            count += len(chunk)
    return count
