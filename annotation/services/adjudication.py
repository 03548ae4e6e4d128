"""Adjudication: for an item the k-of-n rule left undecided, an adjudicator decides an item of the queue; the decision
is the item's gold, kept with who, when and why (annotation.models.Adjudication)."""

from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from annotation import access
from annotation.errors import Conflict, FieldError, InvalidInput, PermissionDenied
from annotation.kinds.registry import get_kind
from annotation.models import Adjudication, Annotation, Assignment, Item
from annotation.rows import clean_comment
from annotation.selectors.quality import adjudication_reasons_for_item

FIELDS = ("label", "comment")


def item_adjudicate(*, user, item_id: int, data: dict) -> Adjudication:
    """Decide `item_id` as `data["label"]` (one of the kind's labels) with an optional
    `data["comment"]`. The item's gold becomes the label and its status the kind's finished
    one (what its exports give by default: `accepted` for nli_relabel, `complete` for the
    others), so it leaves the queue and its author's revision list; open claims on it stop
    holding slots. A second decision on the same item is a 409 (decisions are not
    overwritten; the first stands). A member who is not a supervisor may not decide an item
    they labeled themselves (403). Bad input is a 400 naming each field; nothing is stored."""
    item = access.access_item_for_adjudicator(user, item_id)
    kind = get_kind(item.project.kind)
    errors = [FieldError(name, f"is not a field of a decision; known: {', '.join(FIELDS)}") for name in sorted(set(data) - set(FIELDS))]
    label = data.get("label")
    if not kind.labels:
        errors.append(FieldError("label", f"{kind.name} items have no label to decide"))
    elif label not in kind.labels:
        errors.append(FieldError("label", f"must be one of {', '.join(kind.labels)}"))
    comment = clean_comment(data.get("comment"), errors)
    if errors:
        raise InvalidInput("invalid decision", errors=errors)
    if not access.supervises(user, item.project) and Annotation.objects.filter(item=item, annotator=user).exists():
        raise PermissionDenied(_("You labeled this item yourself; another adjudicator decides it."))
    reasons = adjudication_reasons_for_item(item)
    try:
        with transaction.atomic():
            item = Item.objects.select_for_update().get(pk=item.pk)
            if Adjudication.objects.filter(item=item).exists():
                raise Conflict("This item was already adjudicated.", field="item")
            adjudication = Adjudication.objects.create(
                item=item, round=item.round, label=label, comment=comment, reasons=reasons, adjudicator=user
            )
            item.gold_label = label
            item.status = kind.default_export_status
            item.save(update_fields=["gold_label", "status"])
            Assignment.objects.filter(item=item, status=Assignment.Status.CLAIMED).update(status=Assignment.Status.EXPIRED)
    except IntegrityError:
        # Two decisions raced past the check: the one-per-item key keeps the first.
        raise Conflict("This item was already adjudicated.", field="item") from None
    return adjudication
