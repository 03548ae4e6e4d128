"""The supervisor's pages and reports of a large project answer with a fixed number of
queries: the figures that need every vote are read as the aggregation job stored them
(services.figures), the item browser and the adjudication queue read one page. The
project is generated (items decided 2 of 3, some failed) at two sizes with the "large"
threshold set below both; each page must make the same number of queries at both."""

import pytest
from django.db import connection
from django.db.models import F
from django.test import Client
from django.test.utils import CaptureQueriesContext

pytestmark = pytest.mark.django_db

LABELS = ("entailment", "neutral", "contradiction")


def generated(project, annotators, n_items: int) -> None:
    """n_items items × 3 votes: every tenth failed its round, the others accepted."""
    from django.utils import timezone

    from annotation.models import Annotation, Assignment, ConsensusOutcome, Item

    now = timezone.now()
    items = Item.objects.bulk_create(
        Item(project=project, external_id=f"x{i}", payload={"premise": f"p{i}", "hypothesis": f"h{i}"}, position=i,
             reference_label=LABELS[i % 3], status="removed" if i % 10 == 9 else "accepted",
             gold_label="" if i % 10 == 9 else LABELS[i % 3])
        for i in range(n_items)
    )  # fmt: skip
    claims = Assignment.objects.bulk_create(
        Assignment(
            project=project,
            item=item,
            annotator=annotator,
            round=1,
            status="submitted",
            claimed_at=now,
            expires_at=now,
            submitted_at=now,
        )
        for item in items
        for annotator in annotators
    )
    Annotation.objects.bulk_create(
        Annotation(assignment=claim, item_id=claim.item_id, annotator_id=claim.annotator_id, round=1,
                   value={"label": LABELS[(claim.item_id + claim.annotator_id) % 3]},
                   review_required=claim.item_id % 7 == 0)
        for claim in claims
    )  # fmt: skip
    ConsensusOutcome.objects.bulk_create(
        ConsensusOutcome(item=item, round=1, outcome="failed" if item.status == "removed" else "accepted", gold=item.gold_label,
                         votes={LABELS[0]: 2, LABELS[1]: 1}, n_votes=3, agreement=2 / 3, label_changed=False, computed_at=now)
        for item in items
    )  # fmt: skip


PAGES = (
    "/p/{slug}/",
    "/api/projects/{slug}/annotators/",
    "/p/{slug}/annotators/",
    "/p/{slug}/dashboard/",
    "/api/projects/{slug}/report/",
    "/p/{slug}/adjudication/",
    "/api/projects/{slug}/adjudication/",
    "/console/p/{slug}/items/",
    "/console/p/{slug}/items/?page=2&after={deep}",
    "/api/projects/{slug}/reviews/pending/",
)


def page_queries(client, project) -> dict[str, int]:
    from annotation.models import Item

    # A deep page: the item browser's keyset cursor from an item far into the project.
    total = Item.objects.filter(project=project).count()
    deep = Item.objects.filter(project=project).order_by("position", "id").values_list("position", "id")[total - 20]
    counts = {}
    for page in PAGES:
        url = page.format(slug=project.slug, deep=f"{deep[0]}.{deep[1]}")
        with CaptureQueriesContext(connection) as captured:
            response = client.get(url)
        assert response.status_code == 200, (url, response.content[:300])
        counts[page] = len(captured)
    return counts


@pytest.mark.parametrize("sizes", [(50, 500)])
def test_page_queries_do_not_grow_with_the_items(sizes, make_user, settings):
    from annotation.models import Job, Membership
    from annotation.services.aggregation import aggregation_compute_job
    from annotation.services.projects import project_create

    settings.MASHOV_FIGURES_LIVE_ITEMS = 10  # both projects are "large"
    admin = make_user("root", staff=True)
    supervisor = make_user("sup")
    annotators = [make_user(f"a{i}") for i in range(3)]
    counts = []
    for size in sizes:
        project = project_create(actor=admin, slug=f"big{size}", name="big", kind="nli_relabel", language="he")
        Membership.objects.create(project=project, user=supervisor, role="supervisor", status="active")
        Membership.objects.bulk_create(
            Membership(project=project, user=a, role="annotator", status="active") for a in annotators
        )
        generated(project, annotators, size)
        aggregation_compute_job(Job.objects.create(kind="aggregation", project=project, status="running"))
        client = Client()
        client.force_login(supervisor)
        counts.append(page_queries(client, project))
    assert counts[0] == counts[1]
    for page, n in counts[1].items():
        assert n <= 25, (page, n)


def test_a_large_project_shows_the_stored_figures(make_user, settings):
    """The stored figures are the ones a small project computes per request."""
    from annotation.models import Job, Membership
    from annotation.selectors.annotator_quality import annotator_quality_for_project
    from annotation.selectors.reports import report_for_project
    from annotation.services.aggregation import aggregation_compute_job
    from annotation.services.projects import project_create

    admin = make_user("root", staff=True)
    annotators = [make_user(f"a{i}") for i in range(3)]
    project = project_create(actor=admin, slug="same", name="same", kind="nli_relabel", language="he")
    Membership.objects.bulk_create(
        Membership(project=project, user=a, role="annotator", status="active") for a in annotators
    )
    generated(project, annotators, 40)
    aggregation_compute_job(Job.objects.create(kind="aggregation", project=project, status="running"))
    live_quality, live_report = annotator_quality_for_project(project), report_for_project(project)
    settings.MASHOV_FIGURES_LIVE_ITEMS = 10
    project._figures_live = None
    assert annotator_quality_for_project(project) == live_quality
    stored = report_for_project(project)
    assert stored.keys() == live_report.keys()
    assert stored["per_annotator"] == live_report["per_annotator"]
    assert stored["aggregation"] == live_report["aggregation"]


@pytest.mark.postgres
def test_the_review_queue_is_counted_through_its_index(make_user):
    """The review queue's count and its page read the annotations that need review through
    their partial index, not every annotation of the database (a scan of millions of
    rows on a large project)."""
    from annotation.models import Annotation, Membership
    from annotation.services.projects import project_create
    from annotation.services.reviews import annotations_pending_review

    admin = make_user("root", staff=True)
    supervisor = make_user("sup")
    annotators = [make_user(f"a{i}") for i in range(3)]
    project = project_create(actor=admin, slug="queue", name="queue", kind="nli_relabel", language="he")
    Membership.objects.create(project=project, user=supervisor, role="supervisor", status="active")
    generated(project, annotators, 2000)
    # A sample of the votes waits for review, as a trusted crew's would.
    Annotation.objects.filter(item__project=project).update(review_required=False)
    first = Annotation.objects.filter(item__project=project).order_by("id").values_list("pk", flat=True)[:20]
    Annotation.objects.filter(pk__in=list(first)).update(review_required=True)
    # Both tables: statistics an earlier test left on the item table (a project of a few
    # items) would have the planner walk this project's items instead of the queue's index.
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE annotation_item, annotation_annotation")
    pending = annotations_pending_review(user=supervisor, slug=project.slug)
    with CaptureQueriesContext(connection) as captured:
        assert len(pending) == 20
        assert len(pending[0:10]) == 10
    with connection.cursor() as cursor:
        plans = explained(cursor, captured, "review_required")
    assert len(plans) == 2, captured.captured_queries
    for plan in plans:
        assert "annotation_review_queue_idx" in plan, plan


def explained(cursor, captured, needle: str) -> list[str]:
    """The plans of the captured statements that contain `needle`."""
    plans = []
    for query in captured.captured_queries:
        if needle in query["sql"]:
            cursor.execute("EXPLAIN " + query["sql"])
            plans.append("\n".join(row[0] for row in cursor.fetchall()))
    return plans


def explained_unsorted(captured, needle: str) -> list[str]:
    """`explained` with sorts taken away: a few thousand items are sorted faster than walked
    along an index; a million are not (the planner walks the index there), as that size would."""
    with connection.cursor() as cursor:
        cursor.execute("SET enable_sort = off")
        try:
            return explained(cursor, captured, needle)
        finally:
            cursor.execute("RESET enable_sort")


@pytest.mark.postgres
def test_a_deep_page_of_the_item_browser_is_an_index_range(make_user):
    """The browser's page after (and before) a cursor deep in the project starts its read of
    the position index at the cursor, instead of reading the index from the project's first
    item and filtering (half a million entries half way through a million items)."""
    from annotation.models import Item, Membership
    from annotation.services.projects import project_create

    admin = make_user("root", staff=True)
    supervisor = make_user("sup")
    project = project_create(actor=admin, slug="deep", name="deep", kind="nli_relabel", language="he")
    Membership.objects.create(project=project, user=supervisor, role="supervisor", status="active")
    generated(project, [make_user("a0")], 3000)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE annotation_item")
    edge = Item.objects.filter(project=project).order_by("position", "id").values_list("position", "id")[2000]
    client = Client()
    client.force_login(supervisor)
    for direction in ("after", "before"):
        with CaptureQueriesContext(connection) as captured:
            response = client.get(f"/console/p/deep/items/?page=40&{direction}={edge[0]}.{edge[1]}")
        assert response.status_code == 200
        with connection.cursor() as cursor:
            plans = explained(cursor, captured, 'ORDER BY "annotation_item"."position"')
        assert len(plans) == 1, captured.captured_queries
        bound = '"position" >= ' if direction == "after" else '"position" <= '
        cond = [line for line in plans[0].splitlines() if "Index Cond" in line]
        assert cond and bound in cond[0], plans[0]


@pytest.mark.postgres
def test_the_suggestion_figures_read_only_the_votes_shown_a_suggestion(make_user):
    """The annotators' agreement with the model's suggestions (on the quality API of every
    project, large or small) reads the votes that were shown one through their partial
    index: a project that never showed a suggestion reads none of its millions of votes."""
    from annotation.selectors.annotator_quality import _suggestions
    from annotation.services.projects import project_create

    admin = make_user("root", staff=True)
    project = project_create(actor=admin, slug="hints", name="hints", kind="nli_relabel", language="he")
    generated(project, [make_user(f"a{i}") for i in range(3)], 2000)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE annotation_annotation")
    with CaptureQueriesContext(connection) as captured:
        assert _suggestions(project) == {}
    with connection.cursor() as cursor:
        plans = explained(cursor, captured, "suggested_label")
    assert len(plans) == 1, captured.captured_queries
    assert "annotation_suggested_idx" in plans[0], plans[0]


@pytest.mark.postgres
def test_the_status_counts_are_kept_by_the_database(make_user):
    """The items per status (project page, dashboard, report API, item browser) are the
    counts PostgreSQL keeps through the item table's triggers: exact after inserts, status
    changes one by one and in bulk, probes and deletions, read in one query of the kept
    rows without reading the items; the sweep folds each count into one row, and drops
    a deleted project's."""
    from annotation.models import Item, ItemStatusCount
    from annotation.selectors.reports import item_counts_for_project, status_counts_for_project
    from annotation.services.item_counts import item_counts_fold
    from annotation.services.projects import project_create

    admin = make_user("root", staff=True)
    project = project_create(actor=admin, slug="counted", name="counted", kind="nli_relabel", language="he")
    other = project_create(actor=admin, slug="other", name="other", kind="nli_relabel", language="he")
    generated(project, [make_user("a0")], 300)
    generated(other, [make_user("a1")], 20)
    originals = list(Item.objects.filter(project=project).order_by("id")[:7])
    for number, original in enumerate(originals):
        Item.objects.create(project=project, external_id=f"probe-{number}", payload=original.payload,
                            probe_of=original, status=Item.Status.OPEN)  # fmt: skip
    Item.objects.filter(project=project, status=Item.Status.REMOVED)[:1].get().delete()
    one = Item.objects.filter(project=project, status=Item.Status.ACCEPTED).first()
    one.status = Item.Status.NEEDS_REVISION
    one.save(update_fields=["status"])
    Item.objects.filter(project=project, position__lt=50, status=Item.Status.ACCEPTED).update(
        status=Item.Status.OPEN, priority=1.0
    )
    Item.objects.filter(project=project, position__gte=290).update(priority=2.0)  # no status: nothing kept

    def counted(probe: bool) -> dict:
        items = Item.objects.filter(project=project, probe_of__isnull=not probe)
        return {(status, probe): n for status in Item.Status.values if (n := items.filter(status=status).count())}

    expected = {**counted(False), **counted(True)}
    assert sum(expected.values()) == 306
    with CaptureQueriesContext(connection) as captured:
        assert item_counts_for_project(project) == expected
    assert len(captured) == 1 and "annotation_itemstatuscount" in captured[0]["sql"], captured.captured_queries
    assert status_counts_for_project(project)["total"] == 299
    assert ItemStatusCount.objects.filter(project_id=project.pk).count() > len(expected)

    item_counts_fold()
    assert ItemStatusCount.objects.filter(project_id=project.pk).count() == len(expected)
    assert item_counts_for_project(project) == expected
    gone = other.pk
    other.delete()
    item_counts_fold()
    assert not ItemStatusCount.objects.filter(project_id=gone).exists()
    assert item_counts_for_project(project) == expected


@pytest.mark.postgres
@pytest.mark.parametrize(
    "page",
    ["/p/{slug}/", "/p/{slug}/dashboard/", "/console/p/{slug}/items/", "/console/p/{slug}/items/?status=removed"],
)
def test_the_pages_count_no_items(page, make_user, settings):
    """The project page, the dashboard and the item browser (unfiltered or by status) of a
    large project count none of its items: the kept counts give the figures and the
    browser's number of items and pages."""
    from annotation.models import Job, Membership
    from annotation.services.aggregation import aggregation_compute_job
    from annotation.services.projects import project_create

    settings.MASHOV_FIGURES_LIVE_ITEMS = 10
    admin = make_user("root", staff=True)
    supervisor = make_user("sup")
    project = project_create(actor=admin, slug="nocount", name="nocount", kind="nli_relabel", language="he")
    Membership.objects.create(project=project, user=supervisor, role="supervisor", status="active")
    generated(project, [make_user("a0")], 120)
    aggregation_compute_job(Job.objects.create(kind="aggregation", project=project, status="running"))
    client = Client()
    client.force_login(supervisor)
    with CaptureQueriesContext(connection) as captured:
        response = client.get(page.format(slug=project.slug))
    assert response.status_code == 200
    counts = [
        q["sql"] for q in captured.captured_queries if "COUNT(" in q["sql"] and 'FROM "annotation_item"' in q["sql"]
    ]
    assert not counts, counts
    expected = "12 items" if "removed" in page else "120 items"
    if "items" in page:
        assert expected in response.content.decode()


def stored_project(admin, slug: str, size: int, supervisor, annotators):
    """A generated project of `size` items whose aggregation job stored its figures (and
    its queue's reasons), supervised by `supervisor`."""
    from annotation.models import Job, Membership
    from annotation.services.aggregation import aggregation_compute_job
    from annotation.services.projects import project_create

    project = project_create(actor=admin, slug=slug, name=slug, kind="nli_relabel", language="he")
    Membership.objects.create(project=project, user=supervisor, role="supervisor", status="active")
    generated(project, annotators, size)
    aggregation_compute_job(Job.objects.create(kind="aggregation", project=project, status="running"))
    return project


# An adjudicator's page, read from the stored reasons' kept state (test_adjudicator_queue_counts).
WAITING = '"annotation_adjudicationreason"."waiting"'


def queue_read(project, user, page: str, *, waiting: int):
    """`user`'s read of `page` (the queue's page or API) with its statements captured,
    checked to count `waiting` items and to read the stored reasons of its page's items
    alone (one query by their ids)."""
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE annotation_item; ANALYZE annotation_adjudicationreason")
    client = Client()
    client.force_login(user)
    with CaptureQueriesContext(connection) as captured:
        response = client.get(page.format(slug=project.slug))
    assert response.status_code == 200
    assert (str(waiting) if "api" not in page else f'"count":{waiting}') in response.content.decode()
    reasons = [q["sql"] for q in captured.captured_queries if 'FROM "annotation_adjudicationreason"' in q["sql"]
               and "COUNT(" not in q["sql"] and "EXISTS" not in q["sql"] and WAITING not in q["sql"]]  # fmt: skip
    assert len(reasons) == 1 and "ANY(" in reasons[0], reasons
    return captured, response


@pytest.mark.postgres
@pytest.mark.parametrize("page", ["/p/{slug}/adjudication/", "/api/projects/{slug}/adjudication/"])
def test_the_adjudication_queue_of_a_large_project_reads_its_page_alone(page, make_user, settings):
    """A supervisor's page of a large project's queue reads its items along the position
    index with a limit, each probed for a stored reason, and the reasons of that page's
    items only: not every waiting item's reasons and positions (70,000 of a million)."""
    settings.MASHOV_FIGURES_LIVE_ITEMS = 10
    supervisor = make_user("sup")
    annotators = [make_user(f"a{i}") for i in range(3)]
    project = stored_project(make_user("root", staff=True), "queued", 3000, supervisor, annotators)
    captured, _response = queue_read(project, supervisor, page, waiting=300)
    plans = explained_unsorted(captured, 'EXISTS(SELECT 1 AS "a" FROM "annotation_adjudicationreason"')
    assert len(plans) == 1, captured.captured_queries
    assert "Limit" in plans[0] and "item_source_order_idx" in plans[0], plans[0]


@pytest.mark.postgres
@pytest.mark.parametrize("page", ["/p/{slug}/adjudication/", "/api/projects/{slug}/adjudication/"])
def test_an_adjudicator_reads_and_remembers_the_page_alone(page, make_user, settings):
    """An adjudicator who does not supervise reads a large project's queue a page at a time:
    the page along the stored reasons' order index with a limit, that page's reasons only,
    and the kept count; what they were shown (the page, with its votes) is what is
    remembered, so the assignment engine never serves it to them. The same number of
    queries at two sizes."""
    from annotation.models import Item, Membership, QueueSighting

    settings.MASHOV_FIGURES_LIVE_ITEMS = 10
    admin, supervisor, judge = make_user("root", staff=True), make_user("sup"), make_user("judge")
    annotators = [make_user(f"a{i}") for i in range(3)]
    counts = []
    for size in (600, 3000):
        project = stored_project(admin, f"judged{size}", size, supervisor, annotators)
        Membership.objects.create(project=project, user=judge, role="annotator", status="active", adjudicator=True)
        waiting = size // 10
        captured, response = queue_read(project, judge, page, waiting=waiting)
        counts.append(len(captured))
        shown = len(response.json()["results"]) if "api" in page else 20
        seen = set(QueueSighting.objects.filter(user=judge, item__project=project).values_list("item_id", flat=True))
        first = Item.objects.filter(project=project, status="removed").order_by("position", "id")
        assert seen == set(first.values_list("pk", flat=True)[:shown])
        assert 0 < len(seen) < waiting
    assert counts[0] == counts[1]
    plans = explained_unsorted(captured, WAITING)
    assert len(plans) == 1, captured.captured_queries
    assert "Limit" in plans[0] and "adjudication_reason_order" in plans[0], plans[0]


@pytest.mark.postgres
def test_a_decision_reads_its_items_reason_alone(make_user, settings):
    """The adjudicate POST of a large project reads the decided item's stored reason, not
    every waiting item's."""
    from annotation.models import Adjudication, Item

    settings.MASHOV_FIGURES_LIVE_ITEMS = 10
    supervisor = make_user("sup")
    annotators = [make_user(f"a{i}") for i in range(3)]
    project = stored_project(make_user("root", staff=True), "decided", 200, supervisor, annotators)
    failed = Item.objects.filter(project=project, status="removed").order_by("position").first()
    client = Client()
    client.force_login(supervisor)
    with CaptureQueriesContext(connection) as captured:
        response = client.post(
            f"/api/items/{failed.pk}/adjudicate/", {"label": "neutral"}, content_type="application/json"
        )
    assert response.status_code == 201, response.content
    assert "failed" in response.json()["reasons"]
    reads = [q["sql"] for q in captured.captured_queries if 'FROM "annotation_adjudicationreason"' in q["sql"]]
    assert reads and all(f'"item_id" = {failed.pk}' in sql for sql in reads), reads
    assert Adjudication.objects.get(item=failed).reasons == response.json()["reasons"]
    again = client.post(f"/api/items/{failed.pk}/adjudicate/", {"label": "neutral"}, content_type="application/json")
    assert again.status_code == 409


@pytest.mark.postgres
@pytest.mark.parametrize("status", ["", "removed"])
def test_a_typed_deep_page_of_the_item_browser_skips_along_the_index(status, make_user):
    """A page number typed without a cursor (`?page=N`) shows the items an OFFSET over the
    rows would, but skips only the (position, id) of the items before it (an index-only
    read with a limit of the source order index, or by status of the status's range of the
    status order index), and then reads the page by keyset from there."""
    from annotation.models import Item, Membership
    from annotation.services.projects import project_create

    admin = make_user("root", staff=True)
    supervisor = make_user("sup")
    project = project_create(actor=admin, slug="typed", name="typed", kind="nli_relabel", language="he")
    Membership.objects.create(project=project, user=supervisor, role="supervisor", status="active")
    generated(project, [make_user("a0")], 3000)
    # Positions that repeat (a second file) and leave gaps: the page is still the rows'.
    Item.objects.filter(project=project, position__gte=2000).update(position=F("position") - 1500)
    Item.objects.filter(project=project, position__lt=100).delete()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE annotation_item")
    client = Client()
    client.force_login(supervisor)
    query = f"&status={status}" if status else ""
    listed = Item.objects.filter(project=project, **({"status": status} if status else {})).order_by("position", "id")
    number = 5 if status else 40
    with CaptureQueriesContext(connection) as captured:
        response = client.get(f"/console/p/typed/items/?page={number}{query}")
    assert response.status_code == 200
    size = len(response.context["page"].items)
    expected = list(listed.values_list("pk", flat=True)[(number - 1) * 50 : number * 50])
    assert [item.pk for item in response.context["page"].items] == expected and size == len(expected) > 0
    skips = [q["sql"] for q in captured.captured_queries if "OFFSET" in q["sql"] and "ORDER BY" in q["sql"]]
    assert len(skips) == 1 and '"annotation_item"."payload"' not in skips[0].split("FROM")[0], skips
    # By status the skip reads the status's own range of the (status, position) index.
    plans = explained_unsorted(captured, "ORDER BY 1 ASC, 2 ASC LIMIT 1 OFFSET")
    assert len(plans) == 1 and "Limit" in plans[0], plans
    index = "item_status_order_idx" if status else "item_source_order_idx"
    assert f"Index Only Scan using {index}" in plans[0], plans[0]


def queue_reference(project, user=None) -> list[int]:
    """The queue's item ids in order, read plainly from the rule: the items with a stored
    reason, not adjudicated in their round, in (position, id) order; for an adjudicator who
    does not supervise (`user`), never an open item nor one they voted on in its round."""
    from annotation.models import Adjudication, AdjudicationReason, Annotation, Item

    stored = set(AdjudicationReason.objects.filter(project=project).values_list("item_id", flat=True))
    decided = set(Adjudication.objects.filter(item__project=project).values_list("item_id", "round"))
    voted = set(Annotation.objects.filter(annotator=user).values_list("item_id", "round")) if user else set()
    return [
        pk
        for pk, round_, status in Item.objects.filter(project=project)
        .order_by("position", "id")
        .values_list("pk", "round", "status")
        if pk in stored and (pk, round_) not in decided and not (user and (status == "open" or (pk, round_) in voted))
    ]


@pytest.mark.postgres
def test_a_typed_deep_page_of_the_queue_skips_along_the_reasons_order(make_user, settings):
    """A page number of a large project's adjudication queue shows the items an OFFSET over
    the waiting items would, and its count is theirs — for a supervisor, and for an
    adjudicator who does not supervise and voted on some of them — with positions that
    repeat across files, items reopened and adjudicated since the figures were stored. The
    skip reads the stored reasons along their own (position, item) index, never the items
    before the page (an adjudicator's their kept state alone); the adjudicator's count is
    the kept one (test_adjudicator_queue_counts); every page past the first costs the same
    number of queries."""
    from annotation.models import Adjudication, Annotation, Item, Job, Membership
    from annotation.services.aggregation import aggregation_compute_job
    from annotation.services.projects import project_create

    settings.MASHOV_FIGURES_LIVE_ITEMS = 10
    admin, supervisor = make_user("root", staff=True), make_user("sup")
    annotators = [make_user(f"a{i}") for i in range(3)]
    judge = annotators[0]
    project = project_create(actor=admin, slug="skipped", name="skipped", kind="nli_relabel", language="he")
    Membership.objects.create(project=project, user=supervisor, role="supervisor", status="active")
    Membership.objects.create(project=project, user=judge, role="annotator", status="active", adjudicator=True)
    generated(project, annotators, 1500)
    # A second file's positions repeat the first's; the judge skipped a third of the items.
    Item.objects.filter(project=project, position__gte=900).update(position=F("position") - 600)
    Annotation.objects.filter(annotator=judge, item__position__in=range(0, 1500, 3)).delete()
    aggregation_compute_job(Job.objects.create(kind="aggregation", project=project, status="running"))
    failed = list(Item.objects.filter(project=project, status="removed").order_by("position", "id"))
    Item.objects.filter(pk__in=[item.pk for item in failed[3:9]]).update(status="open")
    for item in failed[20:26]:
        Adjudication.objects.create(item=item, round=item.round, label="neutral")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE annotation_item, annotation_adjudicationreason, annotation_annotation")

    for user, reference in ((supervisor, queue_reference(project)), (judge, queue_reference(project, judge))):
        client = Client()
        client.force_login(user)
        pages = -(-len(reference) // 20)
        assert pages >= 3
        queries = {}
        for number in range(1, pages + 2):
            with CaptureQueriesContext(connection) as captured:
                response = client.get(f"/p/{project.slug}/adjudication/?page={number}")
            assert response.status_code == 200
            page = response.context["page"]
            shown = min(number, pages)
            assert page.paginator.count == len(reference), user
            assert [row["id"] for row in page.object_list] == reference[(shown - 1) * 20 : shown * 20], (user, number)
            queries[number] = len(captured)
            if number == 1:
                first = captured
        assert len(set(queries[n] for n in range(2, pages + 1))) == 1, queries
        skips = [q["sql"] for q in captured.captured_queries if "ORDER BY 1 ASC, 2 ASC LIMIT 1 OFFSET" in q["sql"]]
        assert len(skips) == 1 and 'FROM "annotation_adjudicationreason"' in skips[0].split("WHERE")[0], skips
        plans = explained_unsorted(captured, "ORDER BY 1 ASC, 2 ASC LIMIT 1 OFFSET")
        assert plans and "adjudication_reason_order" in plans[0], plans
        assert "Seq Scan on annotation_item" not in plans[0], plans[0]
    # The adjudicator's count (the judge's first page, read last) is the kept one: no count
    # of the reasons' rows.
    assert not [
        q for q in first.captured_queries if 'COUNT(*) AS "__count" FROM "annotation_adjudicationreason"' in q["sql"]
    ]
    assert any("annotation_queuecount" in q["sql"] for q in first.captured_queries)
