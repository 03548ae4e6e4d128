"""The assignment engine: who labels what, race-free.

Rules (FarsTail §3): never the caller's own item; never an item the
caller already holds or labeled in this round; only items still short of votes; an open
claim is returned again until it is submitted or expires; random order that avoids the
same group (premise) twice in a row when another is available; disqualified members get
nothing. On PostgreSQL, concurrent callers skip each other's locked rows (SKIP LOCKED)
and the slot count is re-checked under the item's row lock, so no item is over-filled;
the unique constraint on live claims stops one annotator getting an item twice."""

import random
from datetime import timedelta

from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext as _

from annotation.access import access_membership_for_annotator
from annotation.errors import Conflict, NotFound, PermissionDenied
from annotation.kinds.registry import get_kind
from annotation.models import Annotation, Assignment, Item, Membership
from annotation.selectors.assignments import (
    annotator_membership_locked,
    assignment_for_submit,
    claim_candidate,
    latest_assignment,
    live_count,
)
from annotation.selectors.predictions import suggestion_for_item
from annotation.services.aggregation import aggregation_request_on_commit
from annotation.services.consensus import consensus_enqueue_on_commit
from annotation.services.decisions import RANK_ROUND_RULE, decision_record, pool_method_deciding, round_progress
from annotation.services.priorities import SEQUENTIAL, item_priority_after_vote, order_of
from annotation.services.webhooks import webhook_event_on_commit
from annotation.sql import execute


def needed_pair(kind, settings) -> tuple[int, int]:
    """Votes an ordinary item needs at first, without and with a reference label."""
    return (
        kind.votes_needed_at_first(settings, with_reference=False),
        kind.votes_needed_at_first(settings, with_reference=True),
    )


def _annotator_membership_locked(user, slug: str) -> Membership:
    """The caller's annotator membership, row-locked (see `annotator_membership_locked`).
    Same answers as `access_membership_for_annotator`, in one query on the common path."""
    membership = annotator_membership_locked(user.pk, slug)
    if membership is None or membership.role != Membership.Role.ANNOTATOR:
        # Not a member (404), an admin or a member in another role (403): let the access
        # layer give the standard answer.
        access_membership_for_annotator(user, slug)
        raise PermissionDenied(_("Only annotators of this project receive items."))
    if membership.status == Membership.Status.DISQUALIFIED:
        raise PermissionDenied(_("You no longer receive items in this project."))
    return membership


def claim_expiry(settings: dict, claimed_at, now):
    """When a claim made at `claimed_at` lapses if nothing is heard of its annotator after
    `now`: `idle_release_seconds` on, never past `claim_ttl` from the claim."""
    idle = min(settings["idle_release_seconds"], settings["claim_ttl"])
    return min(claimed_at + timedelta(seconds=settings["claim_ttl"]), now + timedelta(seconds=idle))


def claim_renew_locked(assignment: Assignment, item: Item, kind, settings: dict, now, *, until=None) -> bool:
    """Renew the caller's claim on a sign of its annotator (docs/api.md "Claims and idle
    release"): it holds its slot until `until` (by default another idle period), never past
    claim_ttl from the claim. A claim that lapsed while its page sat idle comes back only
    while the item still has a free slot in that round. True when the claim holds now. The
    caller holds the claim's row lock, then the item's."""
    if assignment.status != Assignment.Status.CLAIMED or item.status != Item.Status.OPEN:
        return False
    if item.round != assignment.round:
        return False
    limit = claim_expiry(settings, assignment.claimed_at, now) if until is None else until
    until = min(limit, assignment.claimed_at + timedelta(seconds=settings["claim_ttl"]))
    if until <= now:
        return False
    if assignment.expires_at <= now and live_count(item.pk, item.round, now) >= kind.votes_needed(item, settings):
        return False
    if until > assignment.expires_at:
        Assignment.objects.filter(pk=assignment.pk).update(expires_at=until)
        assignment.expires_at = until
    return True


def assignment_next_for_annotator(*, user, slug: str) -> Assignment | None:
    """The caller's open claim in the project, or a new one; None when nothing is left."""
    now = timezone.now()
    with transaction.atomic():
        membership = _annotator_membership_locked(user, slug)
        project = membership.project
        kind = get_kind(project.kind)
        settings = kind.settings_for(project.settings)
        latest = latest_assignment(project, user.pk)
        if latest is not None and latest.status == Assignment.Status.CLAIMED:
            held = latest.item
            if latest.expires_at > now and held.status == Item.Status.OPEN and held.round == latest.round:
                return latest
            # An expired claim, or one on an item that stopped taking votes in that round
            # (accepted, removed, revised), stops holding a slot and blocking a fresh claim.
            Assignment.objects.filter(project=project, annotator=user, status=Assignment.Status.CLAIMED).filter(
                Q(expires_at__lte=now) | Q(pk=latest.pk)
            ).update(status=Assignment.Status.EXPIRED, draft=None)
        last_group = latest.item.assignment_group if latest is not None else None
        needed = needed_pair(kind, settings)
        skipped: set[int] = set()
        probe_id = kind.probe_for_annotator(project, user, settings, last_group=last_group or None, now=now)
        expires_at = claim_expiry(settings, now, now)
        item: Item | None
        for _attempt in range(5):
            if probe_id is not None:
                item = Item.objects.get(pk=probe_id)
                probe_id = None
            else:
                item = claim_candidate(
                    project.pk,
                    user.pk,
                    needed,
                    pivot=random.random(),
                    avoid_group=last_group or None,
                    now=now,
                    adaptive=kind.adaptive_overlap(settings),
                    adjudicator=membership.adjudicator,
                    by_priority=order_of(settings) != SEQUENTIAL,
                )
            if item is None or item.pk in skipped:
                return None
            # The candidate query may have read a stale count: the claim is stored only if
            # a slot is still free now that the item's row is locked.
            assignment_id = _claim_if_slot_free(
                project.pk, item, user.pk, kind.votes_needed(item, settings), now, expires_at
            )
            if assignment_id is None:
                skipped.add(item.pk)
                continue
            assignment = Assignment(
                id=assignment_id,
                project=project,
                item=item,
                annotator=user,
                round=item.round,
                status=Assignment.Status.CLAIMED,
                claimed_at=now,
                expires_at=expires_at,
            )
            assignment._state.adding = False
            return assignment
        return None


def _claim_if_slot_free(project_id: int, item: Item, user_id: int, needed: int, now, expires_at) -> int | None:
    """Insert the caller's claim on the (locked) item unless its live claims and votes
    already reach `needed`; the new claim's id, or None. One statement, so the count is read
    after the lock was taken (a fresh snapshot under READ COMMITTED)."""
    with connection.cursor() as cursor:
        execute(
            cursor,
            "INSERT INTO annotation_assignment (project_id, item_id, annotator_id, round, status, claimed_at, expires_at)"
            " SELECT %s, %s, %s, %s, 'claimed', %s, %s"
            " WHERE (SELECT COUNT(*) FROM annotation_assignment WHERE item_id = %s AND round = %s"
            "        AND (status = 'submitted' OR (status = 'claimed' AND expires_at > %s))) < %s"
            " RETURNING id",
            [project_id, item.pk, user_id, item.round, now, expires_at, item.pk, item.round, now, needed],
        )
        row = cursor.fetchone()
    return row[0] if row is not None else None


def annotation_submit(*, user, assignment_id: int, value) -> Annotation:
    """Store the caller's value for their claim. Only the claimant may submit (others get
    not-found); a second submit is a conflict; a late submit of an expired claim is taken
    while the item still has a free slot. Locks the assignment, then the item (the same
    order as every other writer, so no deadlock)."""
    now = timezone.now()
    try:
        with transaction.atomic():
            found = assignment_for_submit(assignment_id, user.pk)
            if found is None:
                raise NotFound()
            assignment, member_status = found
            project, item = assignment.project, assignment.item
            kind = get_kind(project.kind)
            settings = kind.settings_for(project.settings)
            cleaned = kind.clean_value(value, item)
            if member_status is None or member_status == Membership.Status.DISQUALIFIED:
                raise PermissionDenied(_("You no longer annotate in this project."))
            if assignment.status == Assignment.Status.SUBMITTED:
                raise Conflict(gettext("This assignment was already submitted."), field="assignment")
            if assignment.status == Assignment.Status.SKIPPED:
                raise Conflict(gettext("This assignment was skipped."), field="assignment")
            if item.status != Item.Status.OPEN or item.round != assignment.round:
                raise Conflict(gettext("This item no longer takes annotations."), field="assignment")
            needed = kind.votes_needed(item, settings)
            if assignment.status == Assignment.Status.EXPIRED or assignment.expires_at <= now:
                if Annotation.objects.filter(item=item, annotator=user, round=item.round).exists():
                    raise Conflict(gettext("You already labeled this item in this round."), field="assignment")
                if live_count(item.pk, item.round, now) >= needed:
                    raise Conflict(gettext("The claim expired and the item was given to others."), field="assignment")
            # A member on trial (new, or moved back to trial from the quality page) has all
            # their work reviewed, in every kind; a kind may ask for more (qa samples the
            # work of trusted members in its after_submit).
            review = member_status == Membership.Status.TRIAL
            # The suggestion the page showed: the same lookup `next` made.
            suggestion = suggestion_for_item(project, settings, item.pk)
            suggested = suggestion["label"] if suggestion else None
            annotation, submitted = _store_annotation(
                assignment, item, user, cleaned, now, review_required=review, suggested=suggested
            )
            kind.after_submit(annotation, item, settings)
            if kind.report_counted and not kind.labels:
                # No round closes for its report: the worker keeps it by the rated items.
                aggregation_request_on_commit(item.project_id, [item.pk])
            item_priority_after_vote(item, settings)
            if submitted >= needed:
                if kind.adaptive_overlap(settings) and kind.wants_another_vote(item, settings, submitted):
                    # Adaptive overlap: one more vote, claimed like any other slot.
                    item.votes_target = submitted + 1
                    item.save(update_fields=["votes_target"])
                else:
                    _round_close(item, kind, settings)
    except IntegrityError:
        # The unique (item, annotator, round) key caught a double label the checks above missed.
        raise Conflict(gettext("You already labeled this item in this round."), field="assignment") from None
    return annotation


def _round_close(item: Item, kind, settings: dict) -> None:
    """The item's round has its votes (submit transaction, item locked). A pool method
    chosen for the project decides it on the worker (`deciding`); a consensus kind's step
    decides it after the commit; other kinds with labels decide it here by their own
    rule. Every decision goes through the ledger (services.decisions)."""
    if item.probe_of_id is None:
        webhook_event_on_commit(item.project_id, "round.closed", {"external_id": item.external_id, "round": item.round})
    if item.probe_of_id is None and pool_method_deciding(kind, settings):
        round_progress(item, Item.Status.DECIDING)
        aggregation_request_on_commit(item.project_id, [item.pk])
        return
    rule = None
    if kind.labels and not kind.aggregates_by_consensus and item.probe_of_id is None:
        labels = [
            value.get("label")
            for value in Annotation.objects.filter(item=item, round=item.round).values_list("value", flat=True)
            if isinstance(value, dict)
        ]
        rule = kind.round_rule_decision(item, labels, settings)
    if rule is None:
        round_progress(item, Item.Status.COMPLETE)
    else:
        # The ledger writes the item's status and gold, in one save.
        method, value = rule
        status = kind.status_after_round(
            accepted=value is not None, author_id=item.author_id, round_=item.round, settings=settings
        )
        decision_record(item=item, method=method, rank=RANK_ROUND_RULE, value=value, status=status)
    if kind.aggregates_by_consensus:
        consensus_enqueue_on_commit(item.pk)
    elif kind.labels:
        aggregation_request_on_commit(item.project_id, [item.pk])


def _store_annotation(
    assignment: Assignment,
    item: Item,
    user,
    value: dict,
    now,
    *,
    review_required: bool = False,
    suggested: str | None = None,
) -> tuple[Annotation, int]:
    """Mark the claim submitted and store its annotation; with it, the item's submitted
    claims in this round, this one included. Two hand-written statements (the hot path,
    annotation/sql.py). The count is read by the second statement, after the first one's
    change, while the item's row lock keeps other submits of the item waiting."""
    annotation = Annotation(
        assignment=assignment,
        item=item,
        annotator=user,
        round=assignment.round,
        value=value,
        review_required=review_required,
        created_at=now,
        suggested_label=suggested,
        suggestion_taken=None if suggested is None else value.get("label") == suggested,
    )
    with connection.cursor() as cursor:
        execute(
            cursor,
            # The draft goes with the claim it was kept for.
            "UPDATE annotation_assignment SET status = 'submitted', submitted_at = %s, draft = NULL WHERE id = %s",
            [now, assignment.pk],
        )
        execute(
            cursor,
            "INSERT INTO annotation_annotation (assignment_id, item_id, annotator_id, round, value, review_required,"
            " created_at, suggested_label, suggestion_taken)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id, (SELECT COUNT(*) FROM annotation_assignment"
            "   WHERE item_id = %s AND round = %s AND status = 'submitted')",
            [
                assignment.pk,
                item.pk,
                user.pk,
                assignment.round,
                Annotation._meta.get_field("value").get_db_prep_value(value, connection),
                annotation.review_required,
                now,
                annotation.suggested_label,
                annotation.suggestion_taken,
                item.pk,
                assignment.round,
            ],
        )
        annotation.id, submitted = cursor.fetchone()
    annotation._state.adding = False
    assignment.status = Assignment.Status.SUBMITTED
    assignment.submitted_at = now
    return annotation, submitted
