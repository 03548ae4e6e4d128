"""A supervisor's edit of an accepted item's text (FarsTail §3.2: spelling cleaned
"avoiding probable label change").

The kind names the payload fields that may be edited (`Kind.editable_text_fields`: premise
and hypothesis for the NLI kinds). The edit is stored in the payload, so the near-duplicate
search, the leak check, the bias analysis and every export read the new text; what stood
before is kept as an ItemRevision (action `edited`) with the reason, and the audit log
records it. The item's status and gold are the decision ledger's and are not touched: the
label stands."""

from __future__ import annotations

from django.db import transaction
from django.utils.translation import gettext as _

from annotation.access import access_item_for_staff, supervises
from annotation.errors import Conflict, FieldError, InvalidInput, PermissionDenied
from annotation.kinds.registry import get_kind
from annotation.metrics.text import BIDI_CONTROLS, forbidden_character
from annotation.models import Item, ItemRevision
from annotation.rows import clean_comment
from annotation.services.audit import audit_record
from annotation.wording import fault_text

# Longest text an edit may store: far above any sentence pair of the seeds (LCHAIM's long
# premises run to a few thousand characters).
MAX_EDITED_TEXT_LENGTH = 20_000
TEXT_EDIT = "item_text_edit"


def _check_body(body, fields: tuple[str, ...]) -> tuple[dict[str, str], str]:
    if not isinstance(body, dict):
        raise InvalidInput(_("the body must be a JSON object"), field="body")
    unknown = set(body) - {"changes", "reason"}
    if unknown:
        raise InvalidInput(
            _("unknown field(s): %(unknown)s; known: %(known)s")
            % {"unknown": ", ".join(sorted(unknown)), "known": "changes, reason"},
            field=sorted(unknown)[0],
        )
    errors: list[FieldError] = []
    reason = clean_comment(body.get("reason"), errors)
    if errors:
        raise InvalidInput(errors[0].message, field="reason")
    if not reason.strip():
        raise InvalidInput(_("say why the text is edited"), field="reason")
    changes = body.get("changes")
    if not isinstance(changes, dict) or not changes:
        raise InvalidInput(
            _("must be an object of field names and their new texts (%(fields)s)") % {"fields": ", ".join(fields)},
            field="changes",
        )
    for name, text in changes.items():
        field = f"changes.{name}"
        if name not in fields:
            raise InvalidInput(
                _("is not a text this project's items let a supervisor edit (%(fields)s)")
                % {"fields": ", ".join(fields)},
                field=field,
            )
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput(_("must be a non-empty string"), field=field)
        if problem := forbidden_character(text):
            raise InvalidInput(fault_text(problem), field=field)
        if len(text) > MAX_EDITED_TEXT_LENGTH:
            raise InvalidInput(_("is longer than %(n)s characters") % {"n": MAX_EDITED_TEXT_LENGTH}, field=field)
    return changes, reason


def _added_bidi_control(old: str, new: str) -> str | None:
    """A bidi control the new text has that the stored one has not, described, or None.
    Stored text keeps the controls it came with (docs/text.md); a cleanup that brings a new
    one could reorder what readers see without changing a letter, so it is refused."""
    for index, char in enumerate(new):
        if char in BIDI_CONTROLS and char not in old:
            return _("adds the bidi control U+%(code)04X at position %(index)s") % {"code": ord(char), "index": index}
    return None


def item_text_edit(*, user, item_id: int, body) -> ItemRevision:
    """Apply a supervisor's edit of an accepted item's text with its reason; the revision
    row (what stood before) is returned. 400 naming the field for bad input, nothing stored;
    409 when the item is not accepted or the edit changes nothing."""
    item = access_item_for_staff(user, item_id)
    if not supervises(user, item.project):
        raise PermissionDenied(_("Only supervisors edit an item's text."))
    fields = get_kind(item.project.kind).editable_text_fields
    if not fields:
        raise InvalidInput(_("items of this project's kind have no text a supervisor may edit"), field="kind")
    changes, reason = _check_body(body, fields)
    with transaction.atomic():
        item = Item.objects.select_for_update().select_related("project").get(pk=item.pk)
        if item.status != Item.Status.ACCEPTED:
            raise Conflict(_("Only an accepted item's text is edited; its label then stands."), field="status")
        before = {name: item.payload.get(name) for name in changes}
        for name, text in changes.items():
            added = _added_bidi_control(before[name] if isinstance(before[name], str) else "", text)
            if added:
                raise InvalidInput(added, field=f"changes.{name}")
        if all(before[name] == text for name, text in changes.items()):
            raise Conflict(_("the edit changes nothing"), field="changes")
        revision = ItemRevision.objects.create(
            item=item,
            failed_round=item.round,
            action=ItemRevision.Action.EDITED,
            previous_payload=item.payload,
            reason=reason,
            details={"fields": sorted(changes), "before": before, "after": dict(changes)},
            created_by=user,
        )
        item.payload = {**item.payload, **changes}
        if not item.group:
            item.derived_group = get_kind(item.project.kind).derived_group(item.payload)
        item.save(update_fields=["payload", "derived_group"])
        audit_record(
            actor=user, action=TEXT_EDIT, project=item.project, target=f"item:{item.external_id}",
            before=before, after=dict(changes), comment=reason,
        )  # fmt: skip
    return revision


def item_revisions(*, user, item_id: int) -> list[ItemRevision]:
    """The item's text history, oldest first (its project's staff)."""
    item = access_item_for_staff(user, item_id)
    return list(ItemRevision.objects.filter(item=item).select_related("created_by").order_by("id"))
