"""What an annotator does to their own claims and annotations besides submitting: keep a
draft on the server, skip an item, change a submitted value while its round is open
(docs/api.md "Annotator comfort and the supervisor console").

Lock order is the engine's (services/assignments.py): a claim before its item; the edit
locks only the item, which is what the consensus step locks, so an edit and the decision of
the same round are serialised: whichever commits first, the other sees it."""

import json
from datetime import timedelta

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext, gettext_noop
from django.utils.translation import gettext as _

from annotation.errors import Conflict, InvalidInput, NotFound, PayloadTooLarge, PermissionDenied
from annotation.kinds.registry import get_kind
from annotation.models import Annotation, Assignment, Item, Membership, Review
from annotation.services.aggregation import aggregation_request_on_commit
from annotation.services.assignments import claim_renew_locked
from annotation.services.decisions import round_decided

# A draft holds unsubmitted work (a paragraph's questions): generous for that, small enough
# that a page saving it on every pause costs the database nothing to speak of.
DRAFT_MAX_BYTES = 64 * 1024

CLAIM_CLOSED = gettext_noop("The claim is no longer open: it was submitted, skipped or has expired.")
CLAIM_GIVEN_AWAY = gettext_noop("The claim lapsed while the page was idle and the item was given to others.")
ROUND_DECIDED = gettext_noop(
    "This item's round is decided: the annotation can no longer be changed (a supervisor may reopen the item)."
)


def _still_annotating(user, project_id: int) -> None:
    """Refuse (403) a caller who left the project or was disqualified, as submit does."""
    status = Membership.objects.filter(project_id=project_id, user_id=user.pk).values_list("status", flat=True).first()
    if status is None or status == Membership.Status.DISQUALIFIED:
        raise PermissionDenied(_("You no longer annotate in this project."))


def _own_claim_locked(user, assignment_id: int) -> Assignment:
    """The caller's claim, row-locked, with its item; others' claims are not found."""
    assignment = (
        Assignment.objects.select_for_update(of=("self",)).select_related("item")
        .filter(pk=assignment_id, annotator_id=user.pk).first()
    )  # fmt: skip
    if assignment is None:
        raise NotFound()
    _still_annotating(user, assignment.project_id)
    return assignment


def _claim_open(assignment: Assignment, now) -> bool:
    item = assignment.item
    return (
        assignment.status == Assignment.Status.CLAIMED
        and assignment.expires_at > now
        and item.status == Item.Status.OPEN
        and item.round == assignment.round
    )


def assignment_draft_get(*, user, assignment_id: int):
    """The draft of the caller's open claim (None when there is none). Only the claimant
    sees it (others: not found); a claim that is no longer open is a conflict, and the
    draft of a claim that expired is dropped then."""
    now = timezone.now()
    with transaction.atomic():
        assignment = _own_claim_locked(user, assignment_id)
        is_open = _claim_open(assignment, now)
        if not is_open and assignment.draft is not None:
            Assignment.objects.filter(pk=assignment.pk).update(draft=None)
    if not is_open:
        raise Conflict(gettext(CLAIM_CLOSED), field="assignment")
    return assignment.draft


def _renew_or_refuse(assignment: Assignment, now, *, full: bool) -> None:
    """Renew the caller's locked claim (services.assignments.claim_renew_locked): for
    another idle period, or with `full` for the rest of claim_ttl. The item's row is locked
    after the claim's, as every writer does. A claim that can no longer hold is a 409."""
    item = Item.objects.select_for_update(of=("self",)).select_related("project").get(pk=assignment.item_id)
    kind = get_kind(item.project.kind)
    settings = kind.settings_for(item.project.settings, item.project.language)
    until = assignment.claimed_at + timedelta(seconds=settings["claim_ttl"]) if full else None
    if claim_renew_locked(assignment, item, kind, settings, now, until=until):
        return
    lapsed_idle = (
        assignment.status == Assignment.Status.CLAIMED
        and item.status == Item.Status.OPEN
        and item.round == assignment.round
        and assignment.claimed_at + timedelta(seconds=settings["claim_ttl"]) > now
    )
    raise Conflict(gettext(CLAIM_GIVEN_AWAY if lapsed_idle else CLAIM_CLOSED), field="assignment")


def assignment_heartbeat(*, user, assignment_id: int) -> Assignment:
    """A sign of the annotator at work on their open claim (the page sends one on input):
    the claim holds its slot for another `idle_release_seconds`, never past `claim_ttl`
    from the claim. A claim that lapsed while its page sat idle comes back while the item
    still has a free slot; otherwise, as for a closed claim, a 409."""
    now = timezone.now()
    with transaction.atomic():
        assignment = _own_claim_locked(user, assignment_id)
        _renew_or_refuse(assignment, now, full=False)
    return assignment


def assignment_draft_save(*, user, assignment_id: int, value) -> dict | None:
    """Store `value` (a JSON object, or null to clear) as the draft of the caller's open
    claim, replacing the previous one. Its JSON is at most DRAFT_MAX_BYTES of UTF-8 (413
    beyond). The value is not the kind's: it is work in progress, checked at submit.
    Saving is input: a claim with a draft holds its slot for the whole claim_ttl (work in
    progress is not given away while its author is at lunch); an empty one (null, or an
    object of empty values) renews the claim for an idle period only. A claim that lapsed idle comes back as with a heartbeat."""
    if value is not None and not isinstance(value, dict):
        raise InvalidInput(gettext("must be an object or null"), field="value")
    if value is not None and len(json.dumps(value, ensure_ascii=False).encode("utf-8")) > DRAFT_MAX_BYTES:
        raise PayloadTooLarge(gettext("a draft is at most %(n)s bytes of JSON") % {"n": DRAFT_MAX_BYTES}, field="value")
    now = timezone.now()
    with transaction.atomic():
        assignment = _own_claim_locked(user, assignment_id)
        holds_work = isinstance(value, dict) and any(value.values())
        _renew_or_refuse(assignment, now, full=holds_work)
        Assignment.objects.filter(pk=assignment.pk).update(draft=value)
    return value


def assignment_skip(*, user, assignment_id: int) -> None:
    """Release the caller's claim without an answer: it stops holding a slot at once, so the
    item goes back to others, and its draft is dropped. The skipped claim stays on record,
    so the engine does not serve the same item to the same annotator again in this round
    (a skip says "not for me"; the item reaches them again only in a later round).
    Skipping a skipped or expired claim changes nothing; a submitted one is a conflict."""
    with transaction.atomic():
        assignment = _own_claim_locked(user, assignment_id)
        if assignment.status == Assignment.Status.SUBMITTED:
            raise Conflict(gettext("This assignment was already submitted."), field="assignment")
        if assignment.status == Assignment.Status.CLAIMED:
            Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.Status.SKIPPED, draft=None)


def annotation_editable(
    annotation: Annotation, item: Item, *, reviewed: bool, round_has_decision: bool | None = None
) -> bool:
    """Whether the annotator may still change `annotation`: its round is the item's current
    one and is not decided yet (services.decisions.round_decided: the item is open, or
    complete while a consensus step has still to decide it), the kind allows edits, and no
    reviewer has graded it. `round_has_decision`, when the caller read it in bulk, spares
    the query for a complete item."""
    if not get_kind(item.project.kind).editable_annotations or item.round != annotation.round or reviewed:
        return False
    if item.status == Item.Status.OPEN:
        return True
    if item.status != Item.Status.COMPLETE:
        return False
    return not (round_decided(item) if round_has_decision is None else round_has_decision)


def annotation_edit(*, user, annotation_id: int, value) -> Annotation:
    """Replace the value of the caller's annotation, validated as a submit is. Others'
    annotations are not found; a decided round (or a graded annotation) is a conflict.
    Holds the item's row lock while it checks and writes, as the consensus step does while
    it reads the votes, so a decision never mixes an old and a new value."""
    with transaction.atomic():
        annotation = Annotation.objects.filter(pk=annotation_id, annotator_id=user.pk).first()
        if annotation is None:
            raise NotFound()
        item = Item.objects.select_for_update(of=("self",)).select_related("project").get(pk=annotation.item_id)
        _still_annotating(user, item.project_id)
        kind = get_kind(item.project.kind)
        cleaned = kind.clean_value(value, item)
        if not kind.editable_annotations:
            raise Conflict(gettext("Answers of this kind cannot be changed once submitted."), field="annotation")
        reviewed = Review.objects.filter(annotation=annotation).exists()
        if reviewed:
            raise Conflict(gettext("This annotation was reviewed: it can no longer be changed."), field="annotation")
        if not annotation_editable(annotation, item, reviewed=False):
            raise Conflict(gettext(ROUND_DECIDED), field="annotation")
        annotation.value = cleaned
        annotation.edited_at = timezone.now()
        annotation.save(update_fields=["value", "edited_at"])
        annotation.item = item
        if kind.report_counted and not kind.labels:
            # The worker keeps the report by the items whose ratings changed.
            aggregation_request_on_commit(item.project_id, [item.pk])
    return annotation
