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
from django.utils import timezone

from annotation.access import access_assignment_for_annotator, access_membership_for_annotator
from annotation.errors import Conflict, PermissionDenied
from annotation.kinds.registry import get_kind
from annotation.models import Annotation, Assignment, Item, Membership
from annotation.selectors.assignments import (
    assignable_items,
    last_group_for_annotator,
    live_count_for_item,
    open_claim_for_annotator,
)
from annotation.services.consensus import consensus_enqueue_on_commit


def needed_pair(kind, settings) -> tuple[int, int]:
    """Votes needed for an item without and with a reference label."""
    probe_without, probe_with = Item(reference_label=""), Item(reference_label="x")
    return kind.votes_needed(probe_without, settings), kind.votes_needed(probe_with, settings)


def _claim_candidate(candidates, last_group: str | None):
    """Lock one candidate, starting from a random point of the shuffled order, preferring
    another group than the caller's last one. Returns a locked Item or None."""
    pivot = random.random()
    preferred = candidates.exclude(group=last_group) if last_group else candidates
    for queryset in (preferred, candidates) if last_group else (candidates,):
        for part in (queryset.filter(shuffle_key__gte=pivot).order_by("shuffle_key"), queryset.filter(shuffle_key__lt=pivot).order_by("-shuffle_key")):
            item = part.select_for_update(skip_locked=True, of=("self",)).first()
            if item is not None:
                return item
    return None


def assignment_next_for_annotator(*, user, slug: str) -> Assignment | None:
    """The caller's open claim in the project, or a new one; None when nothing is left."""
    membership = access_membership_for_annotator(user, slug)
    project = membership.project
    kind = get_kind(project.kind)
    settings = kind.settings_for(project.settings)
    needed = needed_pair(kind, settings)
    now = timezone.now()
    with transaction.atomic():
        # One claim at a time per annotator: concurrent `next` calls of the same person wait here.
        Membership.objects.select_for_update().filter(pk=membership.pk).first()
        existing = open_claim_for_annotator(project, user, now)
        if existing is not None:
            return existing
        # Stale claims of the caller stop holding a slot and stop blocking a fresh claim.
        Assignment.objects.filter(
            project=project, annotator=user, status=Assignment.Status.CLAIMED, expires_at__lte=now
        ).update(status=Assignment.Status.EXPIRED)
        candidates = assignable_items(project, user, needed, now)
        last_group = last_group_for_annotator(project, user)
        for _attempt in range(5):
            item = _claim_candidate(candidates, last_group)
            if item is None:
                return None
            # Re-count under the row lock: the filter above may have read a stale count.
            if live_count_for_item(item, now) >= kind.votes_needed(item, settings):
                candidates = candidates.exclude(pk=item.pk)
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
    while the item still has a free slot."""
    assignment = access_assignment_for_annotator(user, assignment_id)
    project = assignment.project
    kind = get_kind(project.kind)
    settings = kind.settings_for(project.settings)
    cleaned = kind.clean_value(value, assignment.item)
    now = timezone.now()
    with transaction.atomic():
        assignment = Assignment.objects.select_for_update().get(pk=assignment.pk)
        item = Item.objects.select_for_update().get(pk=assignment.item_id)
        membership = Membership.objects.filter(project=project, user=user).first()
        if membership is None or membership.status == Membership.Status.DISQUALIFIED:
            raise PermissionDenied("You no longer annotate in this project.")
        if assignment.status == Assignment.Status.SUBMITTED:
            raise Conflict("This assignment was already submitted.", field="assignment")
        if item.status != Item.Status.OPEN or item.round != assignment.round:
            raise Conflict("This item no longer takes annotations.", field="assignment")
        needed = kind.votes_needed(item, settings)
        if assignment.status == Assignment.Status.EXPIRED or assignment.expires_at <= now:
            if live_count_for_item(item, now) >= needed:
                raise Conflict("The claim expired and the item was given to others.", field="assignment")
        assignment.status = Assignment.Status.SUBMITTED
        assignment.submitted_at = now
        assignment.save(update_fields=["status", "submitted_at"])
        try:
            with transaction.atomic():
                annotation = Annotation.objects.create(
                    assignment=assignment, item=item, annotator=user, round=assignment.round, value=cleaned
                )
        except IntegrityError:
            raise Conflict("You already labeled this item in this round.", field="assignment") from None
        kind.after_submit(annotation, item, settings)
        submitted = Assignment.objects.filter(item=item, round=item.round, status=Assignment.Status.SUBMITTED).count()
        if submitted >= needed:
            item.status = Item.Status.COMPLETE
            item.save(update_fields=["status"])
            if kind.aggregates_by_consensus:
                consensus_enqueue_on_commit(item.pk)
    return annotation
