"""The decision ledger: the one writer of an item's outcome (its gold and its status once a
round closes). Every path that decides an item — the rule of the round at its last vote
(k-of-n, majority, a kind's own rule), the project's chosen pool method on the worker,
an adjudicator, an import of final labels, a supervisor's reopen — records a
`Decision` here, under the item's row lock, and the item's `gold_label` and `status`
follow the round's effective decision.

Precedence, within one round (a reopen starts a new round, and the earlier decisions stay
in the history):

    adjudication (3)  >  the project's chosen method on the worker (2)
                      >  the rule of the round, or an import (1)  >  reopen (0)

A decision of a lower rank than the round's effective one is not recorded; one of the
same rank replaces it (a later run of the same method, recorded with what it supersedes).
The history is append-only: nothing here updates or deletes a decision.

Curation removes items (a near-duplicate, the back-translation filter, an author's
withdrawal) with a decision of rank 3 that keeps the item's gold and moves it to
`removed`; it is not recorded over an adjudication. A `restore` cancels the removal it
names: the decision that stood before it stands again, exactly as it was.

The item's round-progress statuses (`open` → `complete` / `deciding` while votes come
in) are written here too (`round_progress`): this module is the only one that assigns an
item's status or gold (tests/test_layout.py)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable

from django.db import transaction
from django.utils.translation import gettext
from django.utils.translation import gettext as _

from annotation.errors import Conflict, FieldError, InvalidInput
from annotation.models import Assignment, Decision, Item
from annotation.rows import clean_comment
from annotation.services.audit import audit_record
from annotation.services.tasks_queue import enqueue_on_commit
from annotation.services.webhooks import decisions_announce_on_commit
from annotation.sql import column_in

RANK_REOPEN = 0
RANK_ROUND_RULE = 1
RANK_CHOSEN_METHOD = 2
RANK_ADJUDICATION = 3

RANK_CURATION = 3

ADJUDICATION = "adjudication"
IMPORT = "import"
REOPEN = "reopen"
# An author's revision of a failed pair starts a new round, like a reopen.
REVISION = "revision"
# Curation removals, and the restore that cancels one.
NEAR_DUPLICATE = "near_duplicate"
BACK_TRANSLATION_FILTER = "back_translation_filter"
WITHDRAWN = "withdrawn"
CURATION_METHODS = (NEAR_DUPLICATE, BACK_TRANSLATION_FILTER, WITHDRAWN)
RESTORE = "restore"
# Statuses of a round still in progress, which `round_progress` moves an item between.
PROGRESS_STATUSES = (Item.Status.OPEN, Item.Status.COMPLETE, Item.Status.DECIDING)
# Statuses in which an item's round is closed and decided whatever its decisions say
# (`complete` is decided only once a decision of the round says so: the consensus kinds
# wait there for their consensus step).
DECIDED_STATUSES = (Item.Status.ACCEPTED, Item.Status.NEEDS_REVISION, Item.Status.REMOVED, Item.Status.DECIDING)
# Rows per bulk statement.
WRITE_BATCH = 2_000
# The methods that estimate annotators from the whole pool and so decide on the worker.
POOL_METHODS = ("dawid_skene", "mace")
# The posterior a pool method needs to accept an item, when the project sets no
# `confidence_target`.
DEFAULT_CONFIDENCE_TARGET = 0.9


# Features that react to new decisions without writing gold (the built-in model's
# retraining, annotation/release/baseline_model.py): called with the project's id once a
# transaction that decided items of it commits. Registered at start-up (annotation/apps.py).
_LISTENERS: list = []


def decisions_listen(listener) -> None:
    if listener not in _LISTENERS:
        _LISTENERS.append(listener)


def _decisions_made_on_commit(project_id) -> None:
    """Tell the listeners after commit; `project_id` may be a callable giving it."""

    def tell():
        found = project_id() if callable(project_id) else project_id
        if found is not None:
            for listener in _LISTENERS:
                listener(found)

    if _LISTENERS:
        transaction.on_commit(tell)


@dataclass(frozen=True)
class Verdict:
    """What a method concluded for one item of a bulk decision: the value (None: no
    gold), the status it moves the item to, and the method's confidence if it has one."""

    item_id: int
    value: object
    status: str
    confidence: float | None = None


def pool_method_deciding(kind, settings: dict) -> str | None:
    """The pool method that decides the project's rounds on the worker, or None when the
    rule of the round decides them at their last vote (k-of-n, majority, the kind's own
    rule) or the kind's gold is given and no method owns it (label_test's hidden label:
    `Kind.gold_statuses_from_aggregation` is empty)."""
    method = settings.get("aggregation")
    if method in POOL_METHODS and kind.gold_statuses_from_aggregation(method):
        return method
    return None


def confidence_target(settings: dict) -> float:
    target = settings.get("confidence_target")
    return DEFAULT_CONFIDENCE_TARGET if target is None else float(target)


def _gold_of(value) -> str:
    return value if isinstance(value, str) else ""


def standing_of(decisions: Iterable[Decision]) -> Decision | None:
    """The decision that stands among one round's decisions (oldest first): a `restore`
    cancels the latest curation removal not cancelled yet, and itself; of the rest, the
    highest rank stands, the latest among equals."""
    live: list[Decision] = []
    for decision in decisions:
        if decision.method == RESTORE:
            for index in range(len(live) - 1, -1, -1):
                if live[index].method in CURATION_METHODS:
                    del live[index]
                    break
            continue
        live.append(decision)
    return max(live, key=lambda decision: (decision.rank, decision.pk), default=None)


def effective_decision(item: Item) -> Decision | None:
    """The decision that stands for the item's current round, or None. One query."""
    return standing_of(Decision.objects.filter(item_id=item.pk, round=item.round).order_by("id"))


def effective_decisions(items: Iterable[tuple[int, int]]) -> dict[int, Decision]:
    """{item id: its effective decision} for (item id, current round) pairs; items without
    one are absent. One query per WRITE_BATCH items."""
    found: dict[int, Decision] = {}
    for item_id, decisions in round_decisions(dict(items)).items():
        standing = standing_of(decisions)
        if standing is not None:
            found[item_id] = standing
    return found


def round_decisions(round_of: dict[int, int]) -> dict[int, list[Decision]]:
    """{item id: the decisions of its current round, oldest first} for {item id: round};
    one query per WRITE_BATCH items."""
    found: dict[int, list[Decision]] = defaultdict(list)
    ids = list(round_of)
    for start in range(0, len(ids), WRITE_BATCH):
        chunk = ids[start : start + WRITE_BATCH]
        for decision in Decision.objects.filter(column_in(Decision, "item_id", chunk)).order_by("item_id", "id"):
            if decision.round == round_of[decision.item_id]:
                found[decision.item_id].append(decision)
    return found


def round_decided(item: Item) -> bool:
    """Whether the item's current round is decided (edits of its votes are then refused):
    a closed status, or a decision of the round above a reopen."""
    if item.status in DECIDED_STATUSES:
        return True
    if item.status == Item.Status.COMPLETE:
        standing = effective_decision(item)
        return standing is not None and standing.rank >= RANK_ROUND_RULE
    return False


def decision_record(
    *,
    item: Item,
    method: str,
    rank: int,
    value,
    status: str,
    confidence: float | None = None,
    user=None,
    job=None,
    comment: str = "",
    override: bool = False,
) -> Decision | None:
    """Record a decision of the item's current round and make the item follow it. The
    caller holds the item's row lock (select_for_update) in the surrounding transaction.
    Returns None, recording nothing, when a decision of a higher rank stands."""
    current = effective_decision(item)
    if current is not None and current.rank > rank:
        return None
    decision = Decision.objects.create(
        item=item, round=item.round, method=method, rank=rank, value=value, status=status, confidence=confidence,
        decided_by=user if getattr(user, "pk", None) else None, job=job, comment=comment, override=override,
        supersedes=current,
    )  # fmt: skip
    item.gold_label = _gold_of(value)
    item.status = status
    item.save(update_fields=["gold_label", "status"])
    if status != Item.Status.OPEN or method in (REOPEN, REVISION):
        # A decided item takes no more votes, and a reopened one starts its round afresh:
        # open claims stop holding slots.
        Assignment.objects.filter(item=item, status=Assignment.Status.CLAIMED).update(
            status=Assignment.Status.EXPIRED, draft=None
        )
        decisions_announce_on_commit(item.project_id, [decision.pk])
        if method != REOPEN:
            _decisions_made_on_commit(item.project_id)
    return decision


def decisions_record_bulk(verdicts: list[Verdict], *, method: str, rank: int, job=None) -> int:
    """Record one method's decisions on many items of one project in a few statements:
    the decisions (bulk insert), then the items' gold and status (one UPDATE per
    (status, gold) pair). The caller holds the items' row locks. Items whose round has a
    decision of a higher rank are left alone. Returns how many decisions were recorded."""
    if not verdicts:
        return 0
    rounds = dict(Item.objects.filter(pk__in=[v.item_id for v in verdicts]).values_list("pk", "round"))
    standing = effective_decisions(rounds.items())
    rows = []
    moves: dict[tuple[str, str], list[int]] = defaultdict(list)
    for verdict in verdicts:
        current = standing.get(verdict.item_id)
        if verdict.item_id not in rounds or (current is not None and current.rank > rank):
            continue
        rows.append(
            Decision(
                item_id=verdict.item_id, round=rounds[verdict.item_id], method=method, rank=rank, value=verdict.value,
                status=verdict.status, confidence=verdict.confidence, job=job, supersedes=current,
            )
        )  # fmt: skip
        moves[(verdict.status, _gold_of(verdict.value))].append(verdict.item_id)
    Decision.objects.bulk_create(rows, batch_size=WRITE_BATCH)
    if rows:
        first = rows[0].item_id
        project_of_first = lambda: Item.objects.filter(pk=first).values_list("project_id", flat=True).first()  # noqa: E731
        decisions_announce_on_commit(project_of_first, [row.pk for row in rows if row.status != Item.Status.OPEN])
        _decisions_made_on_commit(project_of_first)
    for (status, gold), pks in moves.items():
        for start in range(0, len(pks), WRITE_BATCH):
            chunk = pks[start : start + WRITE_BATCH]
            Item.objects.filter(pk__in=chunk).update(status=status, gold_label=gold)
            Assignment.objects.filter(item_id__in=chunk, status=Assignment.Status.CLAIMED).update(
                status=Assignment.Status.EXPIRED, draft=None
            )
    return len(rows)


def round_progress(item: Item, status: str) -> None:
    """Move an item whose round is still in progress between `open`, `complete` (its
    votes are in, a consensus step decides it) and `deciding` (a pool method will): no
    decision, as nothing is decided yet. The caller holds the item's row lock."""
    round_progress_bulk([item.pk], status)
    item.status = status


def round_progress_bulk(item_ids: Iterable[int], status: str) -> None:
    """`round_progress` for many items (row locks held by the caller), one UPDATE per
    WRITE_BATCH items."""
    if status not in PROGRESS_STATUSES:
        raise ValueError(f"{status!r} is not a status of a round in progress")
    item_ids = list(item_ids)
    for start in range(0, len(item_ids), WRITE_BATCH):
        Item.objects.filter(pk__in=item_ids[start : start + WRITE_BATCH]).update(status=status)


def imported_outcome(label: str) -> dict:
    """The columns of an item created with a final label (an import's `labels_final`):
    accepted with that gold. `imported_decisions_record` records the decisions once the
    items exist, in the same transaction."""
    return {"status": Item.Status.ACCEPTED, "gold_label": label}


def imported_decisions_record(items: list[Item]) -> None:
    """The decisions of items created with final labels (an import's `labels_final`):
    their gold is the file's label, recorded as method `import`. The items were just
    created with that gold and status, inside the import's transaction."""
    Decision.objects.bulk_create(
        [
            Decision(
                item_id=item.pk,
                round=item.round,
                method=IMPORT,
                rank=RANK_ROUND_RULE,
                value=item.gold_label or None,
                status=item.status,
            )
            for item in items
        ],
        batch_size=WRITE_BATCH,
    )


def item_new_round(item: Item, *, method: str, user, comment: str = "") -> Decision:
    """Start the item's next round, open with no gold (a reopen, an author's revision): the
    new round's first decision is `method` with `comment`. The caller holds the item's row
    lock; the item's earlier rounds and decisions stay in the history."""
    item.round += 1
    item.votes_target = None  # adaptive overlap starts the new round at overlap_min
    item.save(update_fields=["round", "votes_target"])
    decision = decision_record(
        item=item, method=method, rank=RANK_REOPEN, value=None, status=Item.Status.OPEN, user=user, comment=comment
    )
    assert decision is not None  # the new round has no decision it could lose to
    return decision


def curation_removals_record(
    items: list[Item], *, method: str, reasons: dict[int, str], user=None, job=None
) -> list[Item]:
    """Remove items from the project's work and its default exports, for curation
    (`method`: one of CURATION_METHODS; `reasons`: item id → why). One decision each, of
    rank 3, that keeps the item's gold: the history says who removed it, when and why, and
    a `restore` can cancel it. Items already removed, and items whose round an adjudication
    decided (a person's decision is not undone by a filter), are left alone. Bulk: a few
    statements whatever the number of items; the caller holds their row locks. Returns
    the items removed (their `status` set in memory too)."""
    if method not in CURATION_METHODS:
        raise ValueError(f"{method!r} is not a curation method")
    standing = effective_decisions((item.pk, item.round) for item in items)
    removed, rows = [], []
    for item in items:
        current = standing.get(item.pk)
        if item.status == Item.Status.REMOVED or (current is not None and current.method == ADJUDICATION):
            continue
        rows.append(
            Decision(
                item_id=item.pk, round=item.round, method=method, rank=RANK_CURATION,
                value=current.value if current is not None else (item.gold_label or None), status=Item.Status.REMOVED,
                decided_by=user if getattr(user, "pk", None) else None, job=job, comment=reasons.get(item.pk, ""),
                supersedes=current,
            )
        )  # fmt: skip
        item.status = Item.Status.REMOVED
        removed.append(item)
    Decision.objects.bulk_create(rows, batch_size=WRITE_BATCH)
    ids = [item.pk for item in removed]
    if rows:  # subscribers hear of a removal as of any other decision
        decisions_announce_on_commit(removed[0].project_id, [row.pk for row in rows])
        # The items leave the set the aggregation reads, and the stored figures kept by the
        # changed items (the report's accepted items among them) hear of it.
        enqueue_on_commit("annotation.tasks.request_aggregation", removed[0].project_id, ids)
    for start in range(0, len(ids), WRITE_BATCH):
        chunk = ids[start : start + WRITE_BATCH]
        Item.objects.filter(pk__in=chunk).update(status=Item.Status.REMOVED)
        Assignment.objects.filter(item_id__in=chunk, status=Assignment.Status.CLAIMED).update(
            status=Assignment.Status.EXPIRED, draft=None
        )
    return removed


def curation_restores_record(
    items: list[Item], *, method: str, user, undecided_status: dict[int, str] | None = None, comment: str = ""
) -> list[Item]:
    """Cancel the `method` removal that stands for each item: a `restore` decision, after
    which the decision that stood before the removal stands again, value and status as
    they were. An item that had no decision goes back to the round-progress status it had
    (`undecided_status`, item id → status, as recorded at the removal; `open` if none).
    Items whose standing decision is not a `method` removal are left alone. Bulk, like the
    removal; the caller holds the row locks. Returns the items restored."""
    undecided_status = undecided_status or {}
    of_round = round_decisions({item.pk: item.round for item in items})
    rows, restored = [], []
    moves: dict[tuple[str, str], list[int]] = defaultdict(list)
    for item in items:
        decisions = of_round.get(item.pk, [])
        removal = standing_of(decisions)
        if removal is None or removal.method != method:
            continue
        restore = Decision(item_id=item.pk, round=item.round, method=RESTORE, rank=RANK_CURATION)
        before = standing_of([*decisions, restore])
        if before is not None:
            value, status = before.value, before.status
        else:
            value, status = None, undecided_status.get(item.pk, Item.Status.OPEN)
            status = status if status in PROGRESS_STATUSES else Item.Status.OPEN
        restore.value, restore.status, restore.supersedes, restore.comment = value, status, removal, comment
        restore.decided_by = user if getattr(user, "pk", None) else None
        rows.append(restore)
        item.status, item.gold_label = status, _gold_of(value)
        moves[(status, item.gold_label)].append(item.pk)
        restored.append(item)
    Decision.objects.bulk_create(rows, batch_size=WRITE_BATCH)
    for (status, gold), pks in moves.items():
        for start in range(0, len(pks), WRITE_BATCH):
            Item.objects.filter(pk__in=pks[start : start + WRITE_BATCH]).update(status=status, gold_label=gold)
    if restored:
        # The restore names the status and value that stand again.
        decisions_announce_on_commit(restored[0].project_id, [row.pk for row in rows])
        # The items rejoin the set the project's aggregation reads (and decides, for those
        # waiting in `deciding`).
        enqueue_on_commit("annotation.tasks.request_aggregation", restored[0].project_id, [i.pk for i in restored])
    return restored


def item_reopen_by_supervisor(*, user, item: Item, reason) -> Decision:
    """Start a new round of a decided item (a supervisor's; the caller checked the right):
    the item is open again with no gold, its votes of earlier rounds and every decision
    stay in the history, and the reopen is a decision of the new round with the reason,
    recorded in the audit log too."""
    errors: list[FieldError] = []
    reason = clean_comment(reason, errors)
    if errors:
        raise InvalidInput(errors[0].message, field="reason")
    if not reason.strip():
        raise InvalidInput(gettext("say why the item is reopened"), field="reason")
    with transaction.atomic():
        item = Item.objects.select_for_update().select_related("project").get(pk=item.pk)
        if not round_decided(item):
            raise Conflict(_("This item's round is not decided yet: there is nothing to reopen."), field="item")
        before = {"round": item.round, "gold": item.gold_label or None, "status": item.status}
        decision = item_new_round(item, method=REOPEN, user=user, comment=reason)
        audit_record(
            actor=user, action=REOPEN, project=item.project, target=f"item:{item.external_id}", before=before,
            after={"round": item.round, "gold": None, "status": item.status}, comment=reason,
        )  # fmt: skip
        # The item leaves the closed set the pool methods decide and report on: ask for
        # aggregation of this item (services.aggregation, which imports this module).
        enqueue_on_commit("annotation.tasks.request_aggregation", item.project_id, [item.pk])
    assert decision is not None  # a reopen outranks every decision of its new round: it is always recorded
    return decision


def decision_history(item: Item) -> list[Decision]:
    """Every decision of the item, oldest first, with who decided."""
    return list(Decision.objects.filter(item=item).select_related("decided_by").order_by("id"))


def decision_histories(item_ids: list[int]) -> dict[int, list[Decision]]:
    """{item id: its decisions, oldest first} in one query (exports' `history`)."""
    histories: dict[int, list[Decision]] = defaultdict(list)
    for decision in Decision.objects.filter(item_id__in=item_ids).order_by("item_id", "id"):
        histories[decision.item_id].append(decision)
    return histories
