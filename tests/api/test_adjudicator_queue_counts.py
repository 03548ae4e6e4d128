"""The adjudication queue of an adjudicator who does not supervise, on a large project: its
count is the one PostgreSQL keeps (QueueCount) and its page and page-number skip read the
stored reasons' kept state (AdjudicationReason.waiting, .voters). Both must stay exactly the
queue computed the slow way from the rule (`queue_reference`: every stored reason's item
read for its status, an adjudication and the adjudicator's vote) after adjudications,
reopened items, votes submitted after an item entered the queue, deletes, imports, the
figures' runs and the sweep's fold, and under transactions that overlap."""

import json
import threading
from types import SimpleNamespace

import pytest
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.api.test_large_project_pages import LABELS, generated, queue_reference

pytestmark = pytest.mark.postgres


def queue_checked(project, users) -> dict:
    """Each user's queue as the product reads it — its kept count, all its ids, a slice past
    the first (the skip along the reasons' order) — compared with the slow reference;
    {username: count}."""
    from annotation.selectors.annotator_quality import adjudication_queue_for_project

    counts = {}
    for user in users:
        expected = queue_reference(project, user)
        ids = adjudication_queue_for_project(project, user, names=False).ids
        assert len(ids) == len(expected), (user.username, len(ids), len(expected))
        assert list(ids[0 : len(expected) + 5]) == expected, user.username
        assert list(ids[3:7]) == expected[3:7], user.username
        counts[user.username] = len(expected)
    return counts


def vote(item, annotator, label: str = "neutral") -> None:
    """`annotator`'s vote on `item` in its current round, as a submit stores it."""
    from annotation.models import Annotation, Assignment

    now = timezone.now()
    claim = Assignment.objects.create(project_id=item.project_id, item=item, annotator=annotator, round=item.round,
                                      status="submitted", claimed_at=now, expires_at=now, submitted_at=now)  # fmt: skip
    Annotation.objects.create(
        assignment=claim, item=item, annotator=annotator, round=item.round, value={"label": label}
    )


def aggregation_run(project) -> None:
    from annotation.models import Job
    from annotation.services.aggregation import aggregation_compute_job

    aggregation_compute_job(Job.objects.create(kind="aggregation", project=project, status="running"))


def queue_project(make_user, settings, slug: str = "kept"):
    """A large project (300 items × 3 votes, every tenth failed and waiting) whose figures
    stored their reasons; a supervisor; annotators a0–a2 who voted, a0 on two items in three
    only, and a3 who voted on nothing; a0 and a3 adjudicate without supervising."""
    from annotation.models import Annotation, Membership
    from annotation.services.projects import project_create

    settings.MASHOV_FIGURES_LIVE_ITEMS = 10
    admin, supervisor = make_user("root", staff=True), make_user("sup")
    annotators = [make_user(f"a{i}") for i in range(4)]
    project = project_create(actor=admin, slug=slug, name=slug, kind="nli_relabel", language="he")
    Membership.objects.create(project=project, user=supervisor, role="supervisor", status="active")
    Membership.objects.bulk_create(
        Membership(project=project, user=a, role="annotator", status="active", adjudicator=a.username in ("a0", "a3"))
        for a in annotators
    )
    generated(project, annotators[:3], 300)
    Annotation.objects.filter(annotator=annotators[0], item__position__in=range(0, 300, 3)).delete()
    aggregation_run(project)
    return project, admin, supervisor, annotators


def test_the_kept_count_follows_every_change(make_user, settings):
    """Sequential changes of every kind, each followed by the comparison with the slow way."""
    from annotation.models import Adjudication, AdjudicationReason, Annotation, ConsensusOutcome, Item, QueueCount
    from annotation.services.adjudication import item_adjudicate
    from annotation.services.decisions import item_reopen_by_supervisor
    from annotation.services.figures import project_figures_store
    from annotation.services.imports import items_import
    from annotation.services.item_counts import item_counts_fold

    project, admin, supervisor, annotators = queue_project(make_user, settings)
    a0, a1, a2, a3 = annotators
    counts = queue_checked(project, annotators)
    assert counts["a3"] == 30 and counts["a1"] == 0 and 0 < counts["a0"] < 30

    waiting = list(Item.objects.filter(project=project, status="removed").order_by("position", "id"))
    # Adjudications: a supervisor's and an adjudicator's who voted on none of the items.
    item_adjudicate(user=supervisor, item_id=waiting[0].pk, data={"label": "neutral"})
    item_adjudicate(user=a3, item_id=waiting[1].pk, data={"label": "entailment"})
    assert queue_checked(project, annotators)["a3"] == 28

    # A reopened item leaves the queue (open), and comes back when its new round fails
    # again, with its new round's voters: a0 did not vote in round 2, a1 and a2 did.
    reopened = Item.objects.get(pk=waiting[0].pk)
    item_reopen_by_supervisor(user=supervisor, item=reopened, reason="look again")
    queue_checked(project, annotators)
    reopened.refresh_from_db()
    vote(reopened, a1)
    vote(reopened, a2, "contradiction")
    Item.objects.filter(pk=reopened.pk).update(status="removed")
    counts = queue_checked(project, annotators)
    assert reopened.pk in queue_reference(project, a0) and reopened.pk not in queue_reference(project, a1)

    # A vote submitted after its item entered the queue takes it out of its voter's queue.
    vote(waiting[5], a3)
    assert queue_checked(project, annotators)["a3"] == counts["a3"] - 1

    # Statuses changed in bulk, an edit of a vote's label (nothing changes), and back.
    Item.objects.filter(pk__in=[item.pk for item in waiting[6:12]]).update(status="open")
    Annotation.objects.filter(item=waiting[5], annotator=a3).update(value={"label": "entailment"})
    queue_checked(project, annotators)
    Item.objects.filter(pk__in=[item.pk for item in waiting[6:9]]).update(status="needs_revision")
    queue_checked(project, annotators)

    # Deletes: an item of the queue, a voter's votes, an adjudication, an adjudicator.
    Item.objects.get(pk=waiting[12].pk).delete()
    Annotation.objects.filter(annotator=a1, item_id__in=[item.pk for item in waiting[13:20]]).delete()
    Adjudication.objects.filter(item_id=waiting[1].pk).delete()
    queue_checked(project, annotators)
    a2.delete()
    queue_checked(project, [a0, a1, a3])

    # A full figures run writes again only the rows whose reasons changed: a row's kept
    # state is computed (its item locked until the run commits) only as it is inserted.
    kept = dict(AdjudicationReason.objects.filter(project=project).values_list("item_id", "pk"))
    project_figures_store(project)
    after = dict(AdjudicationReason.objects.filter(project=project).values_list("item_id", "pk"))
    stayed = set(after) & set(kept)
    assert len(stayed) > 20 and all(after[item_id] == kept[item_id] for item_id in stayed)
    queue_checked(project, [a0, a1, a3])

    # Imports: new items, some of which fail their round, enter the queue with the next
    # figures run (which deletes and writes the changed items' reasons again).
    rows = [{"id": f"new{i}", "premise": f"p{i}", "hypothesis": f"h{i}", "label": "neutral"} for i in range(20)]
    items_import(project=project, data="\n".join(json.dumps(row) for row in rows).encode(), fmt="jsonl", user=admin)
    now = timezone.now()
    for item in Item.objects.filter(project=project, external_id__startswith="new").order_by("id")[:8]:
        vote(item, a0)
        vote(item, a1, "entailment")
        Item.objects.filter(pk=item.pk).update(status="removed")
        ConsensusOutcome.objects.create(item=item, round=1, outcome="failed", gold="", votes={LABELS[0]: 1},
                                        n_votes=2, agreement=0.5, label_changed=False, computed_at=now)  # fmt: skip
    queue_checked(project, [a0, a1, a3])
    aggregation_run(project)
    assert queue_checked(project, [a0, a1, a3])["a3"] > counts["a3"]

    # The sweep folds each count into one row; the counts stay.
    before = queue_checked(project, [a0, a1, a3])
    item_counts_fold()
    assert QueueCount.objects.filter(project_id=project.pk, annotator_id=0).count() == 1
    assert queue_checked(project, [a0, a1, a3]) == before
    gone = project.pk
    project.delete()
    item_counts_fold()
    assert not QueueCount.objects.filter(project_id=gone).exists()


QUEUE_TABLES = ("annotation_item", "annotation_adjudicationreason", "annotation_annotation", "annotation_adjudication")


def test_the_adjudicators_page_reads_no_queue_to_count(make_user, settings):
    """The adjudicator's page and API make the same number of queries however many items
    wait (30 and 150), count from the kept rows (no COUNT over the reasons, the items or
    the votes), and read the page along the reasons' order index with a limit."""
    from annotation.models import Item, Membership
    from tests.api.test_large_project_pages import explained_unsorted, stored_project

    settings.MASHOV_FIGURES_LIVE_ITEMS = 10
    admin, supervisor, judge = make_user("root", staff=True), make_user("sup"), make_user("judge")
    annotators = [make_user(f"a{i}") for i in range(3)]
    queries: dict[str, list[int]] = {}
    for size in (300, 1500):
        project = stored_project(admin, f"counted{size}", size, supervisor, annotators)
        Membership.objects.create(project=project, user=judge, role="annotator", status="active", adjudicator=True)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE annotation_item, annotation_adjudicationreason, annotation_queuecount")
        client = Client()
        client.force_login(judge)
        for page in ("/p/{slug}/adjudication/", "/api/projects/{slug}/adjudication/", "/p/{slug}/adjudication/?page=3"):
            with CaptureQueriesContext(connection) as captured:
                response = client.get(page.format(slug=project.slug))
            assert response.status_code == 200
            queries.setdefault(page, []).append(len(captured))
            counts = [q["sql"] for q in captured.captured_queries if "COUNT(" in q["sql"].upper()
                      and any(f'"{table}"' in q["sql"] for table in QUEUE_TABLES)]  # fmt: skip
            assert not counts, counts
            assert any("annotation_queuecount" in q["sql"] for q in captured.captured_queries)
            last = SimpleNamespace(captured_queries=captured.captured_queries)
        waiting = Item.objects.filter(project=project, status="removed").count()
        assert f"{waiting}" in client.get(f"/p/{project.slug}/adjudication/").content.decode()
    assert all(first == second for first, second in queries.values()), queries
    # The deep page's skip and page, read along the reasons' order.
    plans = explained_unsorted(last, '"annotation_adjudicationreason"."waiting"')
    assert plans and all("adjudication_reason_order" in plan and "Limit" in plan for plan in plans), plans


class Held(threading.Thread):
    """`work` in a transaction of its own connection, left open until `finish()`."""

    def __init__(self, work):
        super().__init__(daemon=True)
        self.work, self.worked, self.released = work, threading.Event(), threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with transaction.atomic():
                self.work()
                self.worked.set()
                self.released.wait(60)
        except BaseException as error:  # re-raised by finish()
            self.error = error
        finally:
            self.worked.set()
            connection.close()

    def finish(self) -> None:
        self.released.set()
        self.join(60)
        assert not self.is_alive()
        if self.error is not None:
            raise self.error


def overlapped(first, second, *, waits: bool = True) -> None:
    """`first` done and left uncommitted while `second` runs in another transaction; with
    `waits`, `second` is checked to wait for `first`'s commit (a lock both take)."""
    held = Held(first)
    held.start()
    assert held.worked.wait(60)
    other = Held(second)
    other.start()
    if waits:
        assert not other.worked.wait(0.5), "the second change did not wait for the first"
    held.finish()
    assert other.worked.wait(60)
    other.finish()


@pytest.mark.django_db(transaction=True)
def test_the_kept_count_stays_exact_under_overlapping_changes(make_user, settings):
    """Two transactions change the same waiting item at once — whichever commits first,
    what the last one computes reads the other's change: an adjudication and a vote, a
    status change and a vote (either order), a stored reason written by the figures run and
    a vote or an adjudication (either order), a deleted vote and the reason written; and
    adjudications of different items by two adjudicators at the same moment."""
    from annotation.models import Adjudication, AdjudicationReason, Annotation, Item
    from annotation.services.adjudication import item_adjudicate

    project, _admin, supervisor, annotators = queue_project(make_user, settings, slug="overlap")
    a0, a1, _a2, a3 = annotators
    queue_checked(project, annotators)
    waiting = list(Item.objects.filter(project=project, status="removed").order_by("position", "id"))

    def adjudicated(item):
        def work():
            locked = Item.objects.select_for_update().get(pk=item.pk)
            Adjudication.objects.create(item=locked, round=locked.round, label="neutral")

        return work

    def status(item, value):
        return lambda: Item.objects.filter(pk=item.pk).update(status=value)

    def reason_written(item):
        def work():
            AdjudicationReason.objects.filter(project=project, item_id=item.pk).delete()
            AdjudicationReason.objects.create(project=project, item_id=item.pk, reasons=["failed"],
                                              position=item.position)  # fmt: skip

        return work

    overlapped(adjudicated(waiting[0]), lambda: vote(waiting[0], a3))
    queue_checked(project, annotators)
    overlapped(status(waiting[1], "open"), lambda: vote(waiting[1], a3))
    overlapped(lambda: vote(waiting[2], a3), status(waiting[2], "open"))
    queue_checked(project, annotators)
    Item.objects.filter(pk__in=[waiting[1].pk, waiting[2].pk]).update(status="removed")
    queue_checked(project, annotators)
    overlapped(reason_written(waiting[3]), lambda: vote(waiting[3], a3))
    # A reason's row inserted where none was: the insert waits for the vote's item lock.
    AdjudicationReason.objects.filter(project=project, item_id=waiting[4].pk).delete()
    overlapped(lambda: vote(waiting[4], a3), reason_written(waiting[4]))
    overlapped(reason_written(waiting[5]), adjudicated(waiting[5]))
    queue_checked(project, annotators)
    overlapped(lambda: Annotation.objects.filter(item=waiting[6], annotator=a1).delete(), reason_written(waiting[6]))
    queue_checked(project, annotators)

    # Two adjudicators deciding different items at the same moment.
    start = threading.Barrier(2)

    def decide(user, item):
        def work():
            start.wait(30)
            item_adjudicate(user=user, item_id=item.pk, data={"label": "neutral"})

        return work

    deciders = [Held(decide(supervisor, waiting[7])), Held(decide(a3, waiting[8]))]
    for held in deciders:
        held.released.set()  # each commits as soon as it decided (the audit log orders them)
        held.start()
    for held in deciders:
        held.finish()
    assert queue_checked(project, annotators)["a0"] == len(queue_reference(project, a0))
