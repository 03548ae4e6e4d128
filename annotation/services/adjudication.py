"""Adjudication: an adjudicator decides an item of the adjudication queue (a failed round,
methods that disagree, an incoherent probe); a supervisor may decide any other item only
as an override, with a comment. The decision is the ledger's highest rank
(services.decisions): no method run afterwards changes it, only a supervisor's reopen
starts a new round. The adjudication keeps who, when and why (annotation.models.Adjudication)
and the audit log records it."""

from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from annotation import access
from annotation.errors import Conflict, FieldError, InvalidInput, PermissionDenied
from annotation.kinds.registry import get_kind
from annotation.models import Adjudication, Annotation, Item
from annotation.rows import clean_comment
from annotation.selectors.annotator_quality import adjudication_reasons_for_item
from annotation.services.aggregation import aggregation_request_on_commit
from annotation.services.audit import audit_record
from annotation.services.decisions import ADJUDICATION, RANK_ADJUDICATION, decision_record
from annotation.wording import join_list

FIELDS = ("label", "comment", "override")


def item_adjudicate(*, user, item_id: int, data: dict) -> Adjudication:
    """Decide `item_id` as `data["label"]` (one of the kind's labels) with an optional
    `data["comment"]`. The item must be in the queue; outside it, a supervisor decides with
    `data["override"]` true and a comment (409 without them; 403 for a non-supervisor). An
    adjudicator who is not a supervisor decides only closed rounds they did not label (as
    their queue shows). The item's gold becomes the label and its status the kind's
    decided one, so it leaves the queue and its author's revision list; open claims on it
    stop holding slots. A second decision in the same round is a 409 (decisions are not
    overwritten; the first stands). Bad input is a 400 naming each field; nothing is
    stored."""
    item = access.access_item_for_adjudicator(user, item_id)
    kind = get_kind(item.project.kind)
    errors = [
        FieldError(name, _("is not a field of a decision; known: %(fields)s") % {"fields": join_list(FIELDS)})
        for name in sorted(set(data) - set(FIELDS))
    ]
    label = data.get("label")
    if not kind.labels:
        errors.append(FieldError("label", _("items of this kind of project have no label to decide")))
    elif label not in kind.labels:
        errors.append(FieldError("label", _("must be one of %(choices)s") % {"choices": join_list(kind.labels)}))
    comment = clean_comment(data.get("comment"), errors)
    override = data.get("override", False)
    if not isinstance(override, bool):
        errors.append(FieldError("override", _("must be true or false")))
    if errors or label is None:  # a missing label is among the errors (not one of the labels)
        raise InvalidInput(_("invalid decision"), errors=errors)
    supervisor = access.supervises(user, item.project)
    if not supervisor and Annotation.objects.filter(item=item, annotator=user).exists():
        raise PermissionDenied(_("You labeled this item yourself; another adjudicator decides it."))
    reasons = adjudication_reasons_for_item(item)
    if not reasons:
        if not override:
            raise Conflict(
                _("This item is not in the adjudication queue; a supervisor may decide it as an override."),
                field="item",
            )
        if not supervisor:
            raise PermissionDenied(_("Only supervisors decide items outside the adjudication queue."))
        if not comment:
            raise InvalidInput(_("an override needs a comment saying why"), field="comment")
    elif not supervisor and item.status == Item.Status.OPEN:
        raise Conflict(
            _("This item is still being labelled; it can be adjudicated once its round closes."), field="item"
        )
    try:
        with transaction.atomic():
            item = Item.objects.select_for_update().select_related("project").get(pk=item.pk)
            if Adjudication.objects.filter(item=item, round=item.round).exists():
                raise Conflict(_("This item was already adjudicated."), field="item")
            before = {"gold": item.gold_label or None, "status": item.status}
            settings = kind.settings_for(item.project.settings)
            decision = decision_record(
                item=item,
                method=ADJUDICATION,
                rank=RANK_ADJUDICATION,
                value=label,
                status=kind.status_after_round(
                    accepted=True, author_id=item.author_id, round_=item.round, settings=settings
                ),
                user=user,
                comment=comment,
                override=not reasons,
            )
            adjudication = Adjudication.objects.create(
                item=item,
                round=item.round,
                label=label,
                comment=comment,
                reasons=reasons,
                adjudicator=user,
                decision=decision,
            )
            audit_record(
                actor=user,
                action="adjudication" if reasons else "override",
                project=item.project,
                target=f"item:{item.external_id}",
                before=before,
                after={"gold": label, "status": item.status, "reasons": reasons},
                comment=comment,
            )
            aggregation_request_on_commit(item.project_id, [item.pk])
    except IntegrityError:
        # Two decisions raced past the check: the one-per-round key keeps the first.
        raise Conflict(_("This item was already adjudicated."), field="item") from None
    return adjudication
