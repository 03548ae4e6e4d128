"""Reads behind the assignment engine."""

from django.db.models import F

from annotation.models import Assignment, Item


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
    """Lock and return one item the caller may claim now — open, in the sample, not a probe
    (kinds hand out probes themselves through `Kind.probe_for_annotator`), not the caller's
    own, not already held or labeled by the caller in its current round, and still short of
    votes (`needed` = (without a reference label, with one)) — starting at `pivot` in the shuffled order and wrapping around,
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
    """How many items the caller labeled in the project, and how many more they could get at
    most: open items (not their own) minus those they hold or labeled in the current round.
    Open items whose free slots are all claimed by others still count, so this is an upper
    bound; the exact figure would need a per-item slot count, too slow for a progress bar
    that is read after every submit."""
    done = Assignment.objects.filter(project=project, annotator=user, status=Assignment.Status.SUBMITTED).count()
    open_items = (
        Item.objects.filter(project=project, status=Item.Status.OPEN, in_sample=True, probe_of__isnull=True)
        .exclude(author=user)
    )
    mine = (
        Assignment.objects.filter(project=project, annotator=user, item__status=Item.Status.OPEN, round=F("item__round"))
        .exclude(status=Assignment.Status.EXPIRED)
        .exclude(item__author=user)
        .filter(item__in_sample=True, item__probe_of__isnull=True)
    )
    return {"done": done, "remaining": max(0, open_items.count() - mine.count())}
