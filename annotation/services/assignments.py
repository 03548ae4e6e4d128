"""The assignment engine: who labels what, race-free.

Rules (issue: foundation, FarsTail §3): never the caller's own item; never an item the
caller already holds or labeled in this round; only items still short of votes; an open
claim is returned again until it is submitted or expires; random order that avoids the
same group (premise) twice in a row when another is available; disqualified members get
nothing. On PostgreSQL, concurrent callers skip each other's locked rows (SKIP LOCKED)
and the slot count is re-checked under the item's row lock, so no item is over-filled;
the unique constraint on live claims stops one annotator getting an item twice."""

import random
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import OuterRef, Q, Subquery
from django.utils import timezone

from annotation.access import access_membership_for_annotator
from annotation.errors import Conflict, NotFound, PermissionDenied
from annotation.kinds.registry import get_kind
from annotation.models import Annotation, Assignment, Item, Membership
from annotation.selectors.assignments import claim_candidate, live_count
from annotation.services.consensus import consensus_enqueue_on_commit


def needed_pair(kind, settings) -> tuple[int, int]:
    """Votes needed for an item without and with a reference label."""
    probe_without, probe_with = Item(reference_label=""), Item(reference_label="x")
    return kind.votes_needed(probe_without, settings), kind.votes_needed(probe_with, settings)


def _annotator_membership_locked(user, slug: str) -> Membership:
    """The caller's annotator membership, row-locked so that concurrent `next` calls of one
    person queue up here (one claim at a time). Same answers as
    `access_membership_for_annotator`, in one query on the common path."""
    membership = (
        Membership.objects.select_for_update(of=("self",))
        .select_related("project")
        .filter(project__slug=slug, user=user)
        .first()
    )
    if membership is None or membership.role != Membership.Role.ANNOTATOR:
        # Not a member (404), an admin or a member in another role (403): let the access
        # layer give the standard answer.
        access_membership_for_annotator(user, slug)
        raise PermissionDenied("Only annotators of this project receive items.")
    if membership.status == Membership.Status.DISQUALIFIED:
        raise PermissionDenied("You no longer receive items in this project.")
    return membership


def assignment_next_for_annotator(*, user, slug: str) -> Assignment | None:
    """The caller's open claim in the project, or a new one; None when nothing is left."""
    now = timezone.now()
    with transaction.atomic():
        membership = _annotator_membership_locked(user, slug)
        project = membership.project
        kind = get_kind(project.kind)
        settings = kind.settings_for(project.settings)
        # Claims are serialised per annotator, so the latest assignment is the only one that
        # can still be open; it also names the group to avoid next.
        latest = (
            Assignment.objects.select_related("item")
            .filter(project=project, annotator=user)
            .order_by("-claimed_at", "-id")
            .first()
        )
        if latest is not None and latest.status == Assignment.Status.CLAIMED:
            item = latest.item
            if latest.expires_at > now and item.status == Item.Status.OPEN and item.round == latest.round:
                latest.project = project
                return latest
            # An expired claim, or one on an item that stopped taking votes in that round
            # (accepted, removed, revised), stops holding a slot and blocking a fresh claim.
            Assignment.objects.filter(project=project, annotator=user, status=Assignment.Status.CLAIMED).filter(
                Q(expires_at__lte=now) | Q(pk=latest.pk)
            ).update(status=Assignment.Status.EXPIRED)
        last_group = latest.item.group if latest is not None else None
        needed = needed_pair(kind, settings)
        skipped: set[int] = set()
        probe_id = kind.probe_for_annotator(project, user, settings, last_group=last_group or None, now=now)
        for _attempt in range(5):
            if probe_id is not None:
                item = Item.objects.get(pk=probe_id)
                probe_id = None
            else:
                item = claim_candidate(
                    project.pk, user.pk, needed, pivot=random.random(), avoid_group=last_group or None, now=now
                )
            if item is None or item.pk in skipped:
                return None
            # Re-count under the row lock: the candidate query may have read a stale count.
            if live_count(item.pk, item.round, now) >= kind.votes_needed(item, settings):
                skipped.add(item.pk)
                continue
            return Assignment.objects.create(
                project=project,
                item=item,
                annotator=user,
                round=item.round,
                claimed_at=now,
                expires_at=now + timedelta(seconds=settings["claim_ttl"]),
            )
        return None


def annotation_submit(*, user, assignment_id: int, value) -> Annotation:
    """Store the caller's value for their claim. Only the claimant may submit (others get
    not-found); a second submit is a conflict; a late submit of an expired claim is taken
    while the item still has a free slot. Locks the assignment, then the item (the same
    order as every other writer, so no deadlock)."""
    now = timezone.now()
    try:
        with transaction.atomic():
            # One query locks the claim and its item and reads the caller's membership status.
            assignment = (
                Assignment.objects.select_for_update(of=("self", "item"))
                .select_related("project", "item")
                .annotate(
                    member_status=Subquery(
                        Membership.objects.filter(project=OuterRef("project"), user=user).values("status")[:1]
                    )
                )
                .filter(pk=assignment_id, annotator=user)
                .first()
            )
            if assignment is None:
                raise NotFound()
            project, item = assignment.project, assignment.item
            kind = get_kind(project.kind)
            settings = kind.settings_for(project.settings)
            cleaned = kind.clean_value(value, item)
            status = assignment.member_status
            if status is None or status == Membership.Status.DISQUALIFIED:
                raise PermissionDenied("You no longer annotate in this project.")
            if assignment.status == Assignment.Status.SUBMITTED:
                raise Conflict("This assignment was already submitted.", field="assignment")
            if item.status != Item.Status.OPEN or item.round != assignment.round:
                raise Conflict("This item no longer takes annotations.", field="assignment")
            needed = kind.votes_needed(item, settings)
            if assignment.status == Assignment.Status.EXPIRED or assignment.expires_at <= now:
                if Annotation.objects.filter(item=item, annotator=user, round=item.round).exists():
                    raise Conflict("You already labeled this item in this round.", field="assignment")
                if live_count(item.pk, item.round, now) >= needed:
                    raise Conflict("The claim expired and the item was given to others.", field="assignment")
            assignment.status = Assignment.Status.SUBMITTED
            assignment.submitted_at = now
            assignment.save(update_fields=["status", "submitted_at"])
            annotation = Annotation.objects.create(
                assignment=assignment, item=item, annotator=user, round=assignment.round, value=cleaned
            )
            kind.after_submit(annotation, item, settings)
            submitted = Assignment.objects.filter(item=item, round=item.round, status=Assignment.Status.SUBMITTED).count()
            if submitted >= needed:
                item.status = Item.Status.COMPLETE
                item.save(update_fields=["status"])
                if kind.aggregates_by_consensus:
                    consensus_enqueue_on_commit(item.pk)
    except IntegrityError:
        # The unique (item, annotator, round) key caught a double label the checks above missed.
        raise Conflict("You already labeled this item in this round.", field="assignment") from None
    return annotation
