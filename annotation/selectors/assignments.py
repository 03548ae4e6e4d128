"""Reads behind the assignment engine.

The queries that run on every `next` and `submit` are hand-written (annotation/sql.py
says why) and return ordinary model instances."""

from django.db import connection
from django.db.models import F

from annotation.models import Assignment, Item, Membership, Project
from annotation.sql import execute, fetch_models, select_columns


def _lock(of: str) -> str:
    """`FOR UPDATE OF …` where the database has row locks (PostgreSQL); SQLite has one
    writer at a time anyway."""
    return f"FOR UPDATE OF {of}" if connection.features.has_select_for_update_of else ""


def annotator_membership_locked(user_id: int, slug: str) -> Membership | None:
    """The caller's membership in the project `slug`, with its project, row-locked so that
    one person's concurrent `next` calls queue up (one claim at a time). Call inside a
    transaction."""
    found = fetch_models(
        f"SELECT {select_columns(Membership, 'm')}, {select_columns(Project, 'p')}"
        " FROM annotation_membership m JOIN annotation_project p ON p.id = m.project_id"
        f" WHERE p.slug = %s AND m.user_id = %s {_lock('m')}",
        [slug, user_id],
        Membership,
        Project,
    )
    if found is None:
        return None
    membership, membership.project = found
    return membership


def latest_assignment(project: Project, user_id: int) -> Assignment | None:
    """The caller's most recent claim in the project, with its item. Claims are serialised
    per annotator, so this is the only one that can still be open."""
    found = fetch_models(
        f"SELECT {select_columns(Assignment, 'a')}, {select_columns(Item, 'i')}"
        " FROM annotation_assignment a JOIN annotation_item i ON i.id = a.item_id"
        " WHERE a.project_id = %s AND a.annotator_id = %s ORDER BY a.claimed_at DESC, a.id DESC LIMIT 1",
        [project.pk, user_id],
        Assignment,
        Item,
    )
    if found is None:
        return None
    assignment, assignment.item = found
    assignment.project = project
    return assignment


def assignment_for_submit(assignment_id: int, user_id: int) -> tuple[Assignment, str | None] | None:
    """The caller's assignment `assignment_id` with its item and project, both the claim and
    the item row-locked (claim first, then item: the order every writer uses), and the
    caller's membership status in the project (None when no longer a member)."""
    found = fetch_models(
        f"SELECT {select_columns(Assignment, 'a')}, {select_columns(Item, 'i')}, {select_columns(Project, 'p')},"
        " (SELECT m.status FROM annotation_membership m WHERE m.project_id = a.project_id AND m.user_id = %s)"
        " FROM annotation_assignment a JOIN annotation_item i ON i.id = a.item_id"
        " JOIN annotation_project p ON p.id = a.project_id"
        f" WHERE a.id = %s AND a.annotator_id = %s {_lock('a, i')}",
        [user_id, assignment_id, user_id],
        Assignment,
        Item,
        Project,
    )
    if found is None:
        return None
    assignment, assignment.item, assignment.project, member_status = found
    return assignment, member_status


_CANDIDATE_SQL = """
SELECT {columns} FROM annotation_item i
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
  {sighted_filter}
  AND (SELECT COUNT(*) FROM annotation_assignment live
       WHERE live.item_id = i.id AND live.round = i.round
         AND (live.status = 'submitted' OR (live.status = 'claimed' AND live.expires_at > %(now)s)))
      < {needed}
ORDER BY {order}
LIMIT 1
{lock}
"""


_SIGHTED_FILTER = """AND NOT EXISTS (
    SELECT 1 FROM annotation_queuesighting seen WHERE seen.item_id = i.id AND seen.user_id = %(user)s)"""

# The votes an item needs: the kind's count by reference label; with adaptive overlap on, the
# engine's current target for the item where it asked for more (Item.votes_target).
_NEEDED_FIXED = "CASE WHEN i.reference_label = '' THEN CAST(%(needed_without)s AS integer) ELSE CAST(%(needed_with)s AS integer) END"
_NEEDED_ADAPTIVE = f"COALESCE(i.votes_target, {_NEEDED_FIXED})"


def claim_candidate(
    project_id: int,
    user_id: int,
    needed: tuple[int, int],
    *,
    pivot: float,
    avoid_group: str | None,
    now,
    adaptive: bool = False,
    adjudicator: bool = False,
    by_priority: bool = False,
) -> Item | None:
    """Lock and return one item the caller may claim now — of another assignment group than
    `avoid_group` while there is one (`Item.assignment_group`), open, in the sample, not a probe
    (kinds hand out probes themselves through `Kind.probe_for_annotator`), not the caller's
    own, not already held or labeled by the caller in its current round, not seen by an
    `adjudicator` caller in the adjudication queue (QueueSighting), and still short of
    votes (`needed` = (without a reference label, with one); with `adaptive` overlap, the
    item's `votes_target` where set) — starting at `pivot` in the shuffled order and wrapping around,
    skipping rows other claimers hold (SKIP LOCKED). With `by_priority` (an active-learning
    order, services/priorities.py) the walk is instead the stored priority's, lowest first,
    read through item_priority_idx. Call inside a transaction; the lock lasts until it ends.

    Hand-written SQL because this is the hottest query of the product (annotation/sql.py)."""
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
    # `avoid_group` is the latest item's `Item.assignment_group`; the same key in SQL.
    group_filters = (
        ['AND CASE WHEN i."group" = \'\' THEN i.derived_group ELSE i."group" END <> %(group)s', ""]
        if avoid_group
        else [""]
    )
    walks = (
        (("TRUE", "i.priority ASC, i.shuffle_key ASC"),)
        if by_priority
        else (("i.shuffle_key >= %(pivot)s", "i.shuffle_key ASC"), ("i.shuffle_key < %(pivot)s", "i.shuffle_key DESC"))
    )
    for group_filter in group_filters:
        for window, order in walks:
            sql = _CANDIDATE_SQL.format(
                columns=select_columns(Item, "i"),
                window=window,
                order=order,
                group_filter=group_filter,
                lock=lock,
                needed=_NEEDED_ADAPTIVE if adaptive else _NEEDED_FIXED,
                # Only an annotator who adjudicates can have seen items in the queue: the
                # others' query stays as it was.
                sighted_filter=_SIGHTED_FILTER if adjudicator else "",
            )
            found = fetch_models(sql, params, Item)
            if found is not None:
                return found[0]
    return None


def live_count(item_id: int, round_: int, now) -> int:
    with connection.cursor() as cursor:
        execute(
            cursor,
            "SELECT COUNT(*) FROM annotation_assignment WHERE item_id = %s AND round = %s"
            " AND (status = 'submitted' OR (status = 'claimed' AND expires_at > %s))",
            [item_id, round_, now],
        )
        return cursor.fetchone()[0]


def progress_for_annotator(
    project, user, votes_needed_by_reference: tuple[int, int], *, kind, settings: dict
) -> dict[str, int]:
    """How many items the caller labeled in the project, and how many more they could get at
    most: open items (not their own) minus those they hold or labeled in the current round.
    Open items whose free slots are all claimed by others still count, so this is an upper
    bound; the exact figure would need a per-item slot count, too slow for a progress bar
    that is read after every submit. The kind adds the probes it may still hand out
    (`Kind.probes_remaining_for_annotator`), so that `done + remaining` never grows when
    one arrives."""
    done = Assignment.objects.filter(project=project, annotator=user, status=Assignment.Status.SUBMITTED).count()
    open_items = Item.objects.filter(
        project=project, status=Item.Status.OPEN, in_sample=True, probe_of__isnull=True
    ).exclude(author=user)
    mine = (
        Assignment.objects.filter(
            project=project, annotator=user, item__status=Item.Status.OPEN, round=F("item__round")
        )
        .exclude(status=Assignment.Status.EXPIRED)
        .exclude(item__author=user)
        .filter(item__in_sample=True, item__probe_of__isnull=True)
    )
    remaining = max(0, open_items.count() - mine.count())
    probes = kind.probes_remaining_for_annotator(project, user, settings, ordinary_remaining=remaining)
    return {"done": done, "remaining": remaining + probes}
