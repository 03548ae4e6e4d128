"""Agreement and report endpoints and the consensus dashboard, through HTTP, on a
hand-made project whose votes go through annotation_submit and the consensus step."""

from datetime import timedelta

import krippendorff
import numpy as np
import pytest

LABELS = ["entailment", "neutral", "contradiction"]
# external id, intended (original) label, votes (annotator, label). consensus_n=3,
# consensus_k=2, no author users: the original label is the third vote.
SPEC = [
    ("i1", "entailment", [("ann1", "entailment"), ("ann2", "entailment")]),  # 3-0 accepted e
    ("i2", "entailment", [("ann1", "neutral"), ("ann2", "neutral")]),  # 2-1 accepted n, label changed
    ("i3", "contradiction", [("ann1", "contradiction"), ("ann3", "neutral")]),  # 2-1 accepted c
    ("i4", "neutral", [("ann2", "entailment"), ("ann3", "contradiction")]),  # 1-1-1 failed → removed
    ("i5", "contradiction", [("ann2", "contradiction"), ("ann3", "contradiction")]),  # 3-0 accepted c
]


def users():
    from django.contrib.auth import get_user_model

    return {u.username: u for u in get_user_model().objects.all()}


@pytest.fixture
def voted(nli_project, make_user, settings, django_capture_on_commit_callbacks):
    """nli_project (k=2 of n=3) with SPEC's votes submitted and the consensus decided.
    Tasks run in-process on commit on either stack (no worker needed here)."""
    from django.utils import timezone

    from annotation.models import Assignment, Item
    from annotation.services.assignments import annotation_submit

    settings.CELERY_TASK_ALWAYS_EAGER = True
    nli_project.settings = {**nli_project.settings, "consensus_k": 2, "consensus_n": 3}
    nli_project.save(update_fields=["settings"])
    make_user("outsider")
    people = users()
    now = timezone.now()
    for position, (external_id, intended, votes) in enumerate(SPEC):
        item = Item.objects.create(
            project=nli_project,
            external_id=external_id,
            payload={"premise": f"متن {external_id}", "hypothesis": "فرضیه"},
            reference_label=intended,
            position=position,
        )
        for name, label in votes:
            assignment = Assignment.objects.create(
                project=nli_project,
                item=item,
                annotator=people[name],
                round=1,
                claimed_at=now,
                expires_at=now + timedelta(hours=1),
            )
            with django_capture_on_commit_callbacks(execute=True):
                annotation_submit(user=people[name], assignment_id=assignment.pk, value={"label": label})
    return nli_project


def expected_alpha():
    coders = ["ann1", "ann2", "ann3", "original"]
    matrix = np.full((4, len(SPEC)), np.nan)
    for u, (_, intended, votes) in enumerate(SPEC):
        matrix[3, u] = LABELS.index(intended)
        for name, label in votes:
            matrix[coders.index(name), u] = LABELS.index(label)
    return krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")


def recompute(client, slug):
    from annotation.tasks import run_job

    response = client.post(f"/api/projects/{slug}/agreement/")
    assert response.status_code == 202, response.content
    job_id = response.json()["job"]
    run_job(job_id)  # what the worker does with the message
    assert client.get(f"/api/jobs/{job_id}/").json()["status"] == "done"
    return job_id


@pytest.mark.django_db
def test_agreement_permissions(voted, client_for, api_client):
    people = users()
    url = f"/api/projects/{voted.slug}/agreement/"
    assert api_client.get(url).status_code == 401
    assert client_for(people["ann1"]).post(url).status_code == 403
    assert client_for(people["ann1"]).get(url).status_code == 403
    assert client_for(people["rev"]).post(url).status_code == 403
    assert client_for(people["rev"]).get(url).status_code == 200
    assert client_for(people["outsider"]).get(url).status_code == 404
    assert client_for(people["outsider"]).post(url).status_code == 404
    assert client_for(people["sup"]).get("/api/projects/nope/agreement/").status_code == 404
    report_url = f"/api/projects/{voted.slug}/report/"
    assert client_for(people["ann1"]).get(report_url).status_code == 403
    assert client_for(people["outsider"]).get(report_url).status_code == 404
    assert client_for(people["rev"]).get(report_url).status_code == 200


@pytest.mark.django_db
def test_agreement_post_then_get(voted, client_for):
    from annotation.models import Job

    sup = client_for(users()["sup"])
    url = f"/api/projects/{voted.slug}/agreement/"
    assert sup.get(url).json() == []
    job_id = recompute(sup, voted.slug)
    assert Job.objects.get(pk=job_id).kind == "agreement"
    rows = sup.get(url).json()
    assert [row["scope"] for row in rows] == [{"round": 1}, {"round": "all"}]
    first = rows[0]
    assert set(first) == {"scope", "level", "alpha", "ci_low", "ci_high", "units", "coders", "computed_at"}
    assert first["level"] == "nominal"
    assert first["alpha"] == pytest.approx(expected_alpha(), abs=1e-12)
    assert first["ci_low"] <= first["alpha"] <= first["ci_high"]
    assert (first["units"], first["coders"]) == (5, 4)
    # Idempotency-Key: the same key returns the first job and queues nothing new.
    a = sup.post(url, HTTP_IDEMPOTENCY_KEY="k-1")
    b = sup.post(url, HTTP_IDEMPOTENCY_KEY="k-1")
    assert a.status_code == b.status_code == 202 and a.json() == b.json()


@pytest.mark.django_db
def test_undefined_alpha_has_a_reason(nli_project, client_for):
    from django.utils import timezone

    from annotation.models import AgreementReport
    from annotation.services.agreement import scope_key

    AgreementReport.objects.create(
        project=nli_project,
        scope={"round": 1},
        scope_key=scope_key({"round": 1}),
        level="nominal",
        alpha=None,
        units=3,
        coders=3,
        reason="all pairable values are identical",
        computed_at=timezone.now(),
    )
    rows = client_for(users()["sup"]).get(f"/api/projects/{nli_project.slug}/agreement/").json()
    assert rows[0]["alpha"] is None and rows[0]["reason"] == "all pairable values are identical"


@pytest.mark.django_db
def test_report_figures(voted, client_for, django_assert_max_num_queries):
    sup = client_for(users()["sup"])
    recompute(sup, voted.slug)
    # auth, project, membership, whether the caller sees names and whether the project is
    # small enough for live figures, then the report's own (the status counts are two: every
    # item from the index alone, less the probes)
    with django_assert_max_num_queries(12):
        response = sup.get(f"/api/projects/{voted.slug}/report/")
    assert response.status_code == 200
    report = response.json()
    assert report["kind"] == "nli_relabel"
    counts = report["status_counts"]
    assert (counts["accepted"], counts["removed"], counts["total"]) == (4, 1, 5)
    assert report["outcomes_per_round"] == [{"round": 1, "accepted": 4, "failed": 1, "label_changed": 1}]
    assert report["label_changed"] == 1
    confusion = report["confusion"]
    assert confusion["labels"] == LABELS
    #                intended ↓ / consensus →  e  n  c
    assert confusion["matrix"] == [[1, 1, 0], [0, 0, 0], [0, 0, 2]]
    assert (confusion["total"], confusion["agree"]) == (4, 3)
    assert {r["annotator"]: (r["agree"], r["total"]) for r in report["per_annotator"]} == {
        "ann1": (3, 3),
        "ann2": (3, 3),
        "ann3": (1, 2),
    }
    assert [r["scope"] for r in report["agreement"]] == [{"round": 1}, {"round": "all"}]
    assert report["agreement"][0]["alpha"] == pytest.approx(expected_alpha(), abs=1e-12)


@pytest.mark.django_db
def test_report_query_count_does_not_grow(voted, client_for, django_assert_num_queries):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotation.models import Annotation, ConsensusOutcome, Item

    sup = client_for(users()["sup"])
    url = f"/api/projects/{voted.slug}/report/"
    sup.get(url)  # token and session warm-up
    with CaptureQueriesContext(connection) as small:
        sup.get(url)
    # Ten times the items, outcomes and votes.
    template = list(Annotation.objects.select_related("assignment").filter(item__project=voted))
    for n in range(45):
        item = Item.objects.create(
            project=voted,
            external_id=f"more{n}",
            payload={"premise": "p", "hypothesis": "h"},
            reference_label="neutral",
            status="accepted",
            gold_label="neutral",
        )
        ConsensusOutcome.objects.create(
            item=item, round=1, outcome="accepted", gold="neutral", votes={}, n_votes=3, agreement=1.0
        )
        for annotation in template[:2]:
            assignment = annotation.assignment
            assignment.pk = None
            assignment.item = item
            assignment.save()
            Annotation.objects.create(
                assignment=assignment,
                item=item,
                annotator_id=annotation.annotator_id,
                round=1,
                value={"label": "neutral"},
            )
    with django_assert_num_queries(len(small.captured_queries)):
        assert sup.get(url).status_code == 200


@pytest.mark.django_db
def test_dashboard_page(voted, client, client_for):

    people = users()
    recompute(client_for(people["sup"]), voted.slug)
    url = f"/p/{voted.slug}/dashboard/"

    client.force_login(people["sup"])
    response = client.get(url)
    assert response.status_code == 200
    html = response.content.decode()
    assert '<span class="n-accepted">4</span>' in html and '<span class="n-failed">1</span>' in html
    assert "<bdi>ann3</bdi>" in html and "50.0%" in html and "(1/2)" in html
    assert f"{expected_alpha():.3f}" in html
    assert 'class="heat-5 diagonal"><span class="n">2</span>' in html  # contradiction → contradiction, the peak
    assert "<svg" in html and "style=" not in html and "<script" not in html
    assert 'dir="ltr"' in html and 'lang="en"' in html
    assert "Recompute agreement" in html

    client.force_login(people["rev"])
    page = client.get(url)
    assert page.status_code == 200 and "Recompute agreement" not in page.content.decode()
    client.force_login(people["ann1"])
    assert client.get(url).status_code == 403
    client.force_login(people["outsider"])
    assert client.get(url).status_code == 404


@pytest.mark.django_db
def test_dashboard_in_persian_is_rtl(voted, client):
    client.force_login(users()["sup"])
    client.cookies["django_language"] = "fa"
    html = client.get(f"/p/{voted.slug}/dashboard/").content.decode()
    assert 'dir="rtl"' in html and 'lang="fa"' in html


@pytest.mark.django_db
def test_dashboard_recompute_button(voted, django_capture_on_commit_callbacks):
    from django.test import Client

    from annotation.models import AgreementReport, Job

    people = users()
    url = f"/p/{voted.slug}/dashboard/recompute/"
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(people["sup"])
    assert strict.post(url).status_code == 403  # no CSRF token
    assert not Job.objects.filter(kind="agreement").exists()  # (the votes requested aggregation jobs)

    page = strict.get(f"/p/{voted.slug}/dashboard/")
    token = page.cookies["csrftoken"].value if "csrftoken" in page.cookies else strict.cookies["csrftoken"].value
    with django_capture_on_commit_callbacks(execute=True):  # in-process on either stack (eager in this test)
        response = strict.post(url, {"csrfmiddlewaretoken": token})
    assert response.status_code == 302 and response["Location"] == f"/p/{voted.slug}/dashboard/"
    job = Job.objects.get(kind="agreement")
    assert job.status == "done"
    assert AgreementReport.objects.filter(project=voted).count() == 2
    assert f"job #{job.pk}" in strict.get(response["Location"]).content.decode()

    other = Client()
    other.force_login(people["rev"])
    assert other.post(url).status_code == 403
    other.force_login(people["ann1"])
    assert other.post(url).status_code == 403
