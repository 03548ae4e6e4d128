"""The author's side of a failed round (FarsTail §3): see the labels cast, then revise the
pair for one more relabeling round or withdraw it."""

from collections import Counter

from django.db import transaction
from django.utils.translation import gettext

from annotation.errors import Conflict, InvalidInput, NotFound
from annotation.kinds.registry import get_kind
from annotation.metrics.text import forbidden_character
from annotation.models import Annotation, Item, ItemRevision
from annotation.services.decisions import REVISION, WITHDRAWN, curation_removals_record, item_new_round
from annotation.wording import fault_text, join_list

from .authors import access_project_for_author

REVISABLE_FIELDS = ("premise", "hypothesis")


def revisions_for_author(*, user, slug: str) -> list[dict]:
    """The caller's items that failed consensus, each with the labels cast in the failed
    round — counts only, never who cast them. Who may ask: `access_project_for_author`;
    items the caller may not revise (see `AuthorStanding.refusal`) are left out."""
    standing = access_project_for_author(user, slug)
    items = [
        item
        for item in Item.objects.filter(
            project=standing.project, author=user, status=Item.Status.NEEDS_REVISION
        ).order_by("position", "id")
        if standing.refusal(item) is None
    ]
    cast: dict[int, Counter] = {item.pk: Counter() for item in items}
    rounds = {item.pk: item.round for item in items}
    for item_id, round_, value in Annotation.objects.filter(item_id__in=rounds).values_list(
        "item_id", "round", "value"
    ):
        if round_ == rounds[item_id]:
            cast[item_id][value.get("label")] += 1
    return [
        {
            "id": item.pk,
            "external_id": item.external_id,
            "payload": item.payload,
            "intended_label": item.reference_label,
            "round": item.round,
            "labels_cast": dict(sorted(cast[item.pk].items())),
        }
        for item in items
    ]


def _clean_text(value, field: str) -> str:
    if not isinstance(value, str) or value.strip() == "":
        raise InvalidInput(gettext("must be a non-empty string"), field=field)
    reason = forbidden_character(value)
    if reason:
        raise InvalidInput(fault_text(reason), field=field)
    return value


def item_revise(*, user, item_id: int, changes: dict) -> Item:
    """Apply the author's revision and open the next round, or withdraw the item.

    Only the item's author sees it (others get not-found), and only while they have standing
    in its project (`access_project_for_author`: a disqualified author is refused); an item
    that is not waiting for revision is a conflict; a revision that changes nothing is refused."""
    if not isinstance(changes, dict):
        raise InvalidInput(gettext("the body must be a JSON object"), field="body")
    unknown = set(changes) - {*REVISABLE_FIELDS, "withdraw"}
    if unknown:
        raise InvalidInput(
            gettext("unknown field(s): %(unknown)s") % {"unknown": join_list(sorted(unknown))}, field=sorted(unknown)[0]
        )
    withdraw = changes.get("withdraw", False)
    if not isinstance(withdraw, bool):
        raise InvalidInput(gettext("must be true or false"), field="withdraw")
    if withdraw and any(field in changes for field in REVISABLE_FIELDS):
        raise InvalidInput(gettext("withdraw an item or revise it, not both"), field="withdraw")
    edits = {field: _clean_text(changes[field], field) for field in REVISABLE_FIELDS if field in changes}
    with transaction.atomic():
        item = Item.objects.select_for_update().filter(pk=item_id, author=user).first()
        if item is None:
            raise NotFound()
        refusal = access_project_for_author(user, item.project.slug).refusal(item)
        if refusal is not None:
            raise refusal
        if item.status != Item.Status.NEEDS_REVISION:
            raise Conflict(gettext("This item is not waiting for a revision."), field="status")
        if withdraw:
            ItemRevision.objects.create(
                item=item,
                failed_round=item.round,
                action=ItemRevision.Action.WITHDRAWN,
                previous_payload=item.payload,
                created_by=user,
            )
            # The withdrawal is the ledger's: the item's history says the author withdrew it.
            curation_removals_record([item], method=WITHDRAWN, reasons={item.pk: "withdrawn by its author"}, user=user)
            return item
        if not edits:
            raise InvalidInput(gettext("send a new premise and/or hypothesis, or withdraw"), field="premise")
        if all(item.payload.get(field) == text for field, text in edits.items()):
            raise InvalidInput(gettext("the revision changes nothing"), field=next(iter(edits)))
        ItemRevision.objects.create(
            item=item,
            failed_round=item.round,
            action=ItemRevision.Action.REVISED,
            previous_payload=item.payload,
            created_by=user,
        )
        item.payload = {**item.payload, **edits}
        if not item.group:
            item.derived_group = get_kind(item.project.kind).derived_group(item.payload)
        item.save(update_fields=["payload", "derived_group"])
        # The next round, open again: the ledger's `revision`, first decision of that round.
        item_new_round(item, method=REVISION, user=user, comment="revised by its author")
        return item
