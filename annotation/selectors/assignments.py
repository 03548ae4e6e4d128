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
        Item.objects.filter(project=project, status=Item.Status.OPEN, in_sample=True, probe_of__isnull=True)
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


_CANDIDATE_SQL = """
SELECT i.* FROM annotation_item i
WHERE i.project_id = %(project)s
  AND i.status = 'open'
  AND i.in_sample = %(true)s
  AND i.probe_of_id IS NULL
  AND (i.author_id IS NULL OR i.author_id <> %(user)s)
  AND {window}
  {group_filter}
  AND NOT EXISTS (
    SELECT 1 FROM annotation_assignment mine
    WHERE mine.item_id = i.id AND mine.round = i.round AND mine.annotator_id = %(user)s AND mine.status <> 'expired')
  AND (SELECT COUNT(*) FROM annotation_assignment live
       WHERE live.item_id = i.id AND live.round = i.round
         AND (live.status = 'submitted' OR (live.status = 'claimed' AND live.expires_at > %(now)s)))
      < CASE WHEN i.reference_label = '' THEN %(needed_without)s ELSE %(needed_with)s END
ORDER BY i.shuffle_key {direction}
LIMIT 1
{lock}
"""


def claim_candidate(project_id: int, user_id: int, needed: tuple[int, int], *, pivot: float, avoid_group: str | None, now) -> Item | None:
    """Lock and return one assignable item (in the sample, not a probe: kinds hand out
    probes themselves through `Kind.probe_for_annotator`) by the same rules as
    `assignable_items`, starting at `pivot` in the shuffled order and wrapping around,
    skipping rows other claimers hold (SKIP LOCKED). Call inside a transaction; the lock
    lasts until it ends.

    Hand-written SQL because this is the hottest query of the product: the ORM spent more
    time compiling it than PostgreSQL spent running it."""
    from django.db import connection

    lock = "FOR UPDATE OF i SKIP LOCKED" if connection.features.has_select_for_update_skip_locked else ""
    params = {
        "project": project_id,
        "user": user_id,
        "now": now,
        "needed_without": needed[0],
        "needed_with": needed[1],
        "pivot": pivot,
        "group": avoid_group,
        "true": True,
    }
    group_filters = ["AND i.\"group\" <> %(group)s", ""] if avoid_group else [""]
    for group_filter in group_filters:
        for window, direction in (("i.shuffle_key >= %(pivot)s", "ASC"), ("i.shuffle_key < %(pivot)s", "DESC")):
            sql = _CANDIDATE_SQL.format(window=window, direction=direction, group_filter=group_filter, lock=lock)
            found = list(Item.objects.raw(sql, params))
            if found:
                return found[0]
    return None


def live_count(item_id: int, round_: int, now) -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT COUNT(*) FROM annotation_assignment WHERE item_id = %s AND round = %s"
            " AND (status = 'submitted' OR (status = 'claimed' AND expires_at > %s))",
            [item_id, round_, now],
        )
        return cursor.fetchone()[0]


def progress_for_annotator(project, user, votes_needed_by_reference: tuple[int, int]) -> dict[str, int]:
    """How many items the caller labeled in the project and how many they could still get."""
    done = Assignment.objects.filter(project=project, annotator=user, status=Assignment.Status.SUBMITTED).count()
    remaining = assignable_items(project, user, votes_needed_by_reference).count()
    return {"done": done, "remaining": remaining}
