"""Reads behind the assignment engine."""

from django.db.models import Count, Exists, IntegerField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.models import Assignment, Item


def live_assignments_q(now=None) -> Q:
    """Assignments that hold a slot: submitted ones and claims that have not expired."""
    now = now or timezone.now()
    return Q(status=Assignment.Status.SUBMITTED) | Q(status=Assignment.Status.CLAIMED, expires_at__gt=now)


def live_count_for_item(item: Item, now=None) -> int:
    return Assignment.objects.filter(live_assignments_q(now), item=item, round=item.round).count()


def open_claim_for_annotator(project, user, now=None) -> Assignment | None:
    now = now or timezone.now()
    return (
        Assignment.objects.select_related("item")
        .filter(project=project, annotator=user, status=Assignment.Status.CLAIMED, expires_at__gt=now)
        .order_by("claimed_at")
        .first()
    )


def last_group_for_annotator(project, user) -> str | None:
    latest = Assignment.objects.filter(project=project, annotator=user).order_by("-claimed_at", "-id").values("item__group").first()
    return latest["item__group"] if latest else None


def assignable_items(project, user, votes_needed_by_reference: tuple[int, int], now=None) -> QuerySet[Item]:
    """Items the caller may claim now: open, in their current round, not authored by the
    caller, not already claimed or labeled by the caller in this round, and still short of
    votes. `votes_needed_by_reference` is (needed without a reference label, needed with one).

    The slot count here is a filter only; the claimer re-counts under the item's row lock."""
    now = now or timezone.now()
    live = (
        Assignment.objects.filter(live_assignments_q(now), item=OuterRef("pk"), round=OuterRef("round"))
        .order_by()
        .values("item")
        .annotate(n=Count("pk"))
        .values("n")
    )
    mine = Assignment.objects.filter(
        item=OuterRef("pk"), round=OuterRef("round"), annotator=user
    ).exclude(status=Assignment.Status.EXPIRED)
    without_reference, with_reference = votes_needed_by_reference
    return (
        Item.objects.filter(project=project, status=Item.Status.OPEN)
        .exclude(author=user)
        .annotate(
            live=Coalesce(Subquery(live, output_field=IntegerField()), Value(0)),
            mine=Exists(mine),
        )
        .filter(mine=False)
        .filter(
            Q(reference_label="", live__lt=without_reference) | (~Q(reference_label="") & Q(live__lt=with_reference))
        )
    )


def progress_for_annotator(project, user, votes_needed_by_reference: tuple[int, int]) -> dict[str, int]:
    """How many items the caller labeled in the project and how many they could still get."""
    done = Assignment.objects.filter(project=project, annotator=user, status=Assignment.Status.SUBMITTED).count()
    remaining = assignable_items(project, user, votes_needed_by_reference).count()
    return {"done": done, "remaining": remaining}
