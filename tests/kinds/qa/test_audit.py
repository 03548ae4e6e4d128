"""HeQ §3.4's final audit through HTTP: a seeded sample of questions per source from the
published sample file and authored questions, marked by a supervisor, reported with Wilson
intervals; the review coverage and rejection shares of the quality report."""

import json

import pytest

from tests.kinds.qa.test_api import V11, import_file, qa, submit  # noqa: F401 (qa is a fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture
def audited(qa):
    """The qa project with the HeQ v1.1 sample (Wikipedia and Geektime articles) imported
    beside our own paragraph, and one authored annotation of four questions."""
    qa["annotation"] = submit(qa, "a1")  # first, while our paragraph is the only one
    response = import_file(qa["client"]("sup"), V11)
    assert response.status_code == 201, response.content
    return qa


def published_questions_per_source() -> dict[str, int]:
    counts: dict[str, int] = {}
    for article in json.loads(V11.read_text(encoding="utf-8"))["data"]:
        source = article["source"].lower()
        for paragraph in article["paragraphs"]:
            kept = [q for q in paragraph["qas"] if q.get("question quality") != "rejected"]
            counts[source] = counts.get(source, 0) + len(kept)
    return counts


def draw(client, **body):
    return client.post("/api/projects/heq/question-audit/", body, format="json")


def test_draw_is_per_source_seeded_and_repeatable(audited):
    sup = audited["client"]("sup")
    response = draw(sup, per_source=10, seed=7)
    assert response.status_code == 201, response.content
    published = published_questions_per_source()
    # Our paragraph has no source: it falls under the default source's rule (wikipedia).
    assert response.json() == {"per_source": 10, "seed": 7, "drawn": {"geektime": 10, "wikipedia": 10}}
    first = sup.get("/api/projects/heq/question-audit/").json()["results"]
    assert len(first) == 20 and {row["source"] for row in first} == {"geektime", "wikipedia"}
    # Each entry carries what a supervisor judges: the paragraph, the question and its answer.
    for row in first:
        assert row["question"] and row["context"]
        if row["answer"] is not None:
            assert row["context"][row["answer"]["start"] :].startswith(row["answer"]["text"])
    # The same seed draws the same sample; another seed another one.
    assert draw(sup, per_source=10, seed=7).status_code == 201
    again = sup.get("/api/projects/heq/question-audit/").json()["results"]
    assert [(r["item"], r["question"]) for r in again] == [(r["item"], r["question"]) for r in first]
    assert draw(sup, per_source=10, seed=8).status_code == 201
    other = sup.get("/api/projects/heq/question-audit/").json()["results"]
    assert {(r["item"], r["question"]) for r in other} != {(r["item"], r["question"]) for r in first}
    # A source smaller than per_source is drawn whole.
    big = draw(sup, per_source=10_000, seed=1).json()["drawn"]
    assert big["geektime"] == published["geektime"]
    assert big["wikipedia"] == published["wikipedia"] + 4  # and our four authored questions


def test_marks_give_shares_with_wilson_intervals_and_fix_the_sample(audited):
    from annotation.metrics.intervals import proportion_interval
    from annotation.models import AuditEntry

    sup = audited["client"]("sup")
    assert draw(sup, per_source=5, seed=3).status_code == 201
    rows = sup.get("/api/projects/heq/question-audit/").json()["results"]
    verdicts = {}
    for index, row in enumerate(rows):
        if index == 7:
            continue  # one left unmarked
        question_correct = index % 4 != 0
        span_correct = None if index == 5 else index % 3 != 0
        marked = sup.post(
            f"/api/projects/heq/question-audit/{row['id']}/",
            {"question_correct": question_correct, "span_correct": span_correct},
            format="json",
        )
        assert marked.status_code == 200, marked.content
        verdicts[row["id"]] = (row["source"], question_correct, span_correct)
    figures = sup.get("/api/projects/heq/question-audit/").json()["figures"]
    report = sup.get("/api/projects/heq/report/").json()
    assert report["final_audit"] == figures
    assert figures["seed"] == 3 and figures["all"]["drawn"] == 10 and figures["all"]["marked"] == 9
    for source in ("geektime", "wikipedia"):
        mine = [v for v in verdicts.values() if v[0] == source]
        spans = [v[2] for v in mine if v[2] is not None]
        got = figures["sources"][source]
        assert got["question_correct"] == pytest.approx(proportion_interval(sum(v[1] for v in mine), len(mine)))
        assert got["span_correct"] == pytest.approx(proportion_interval(sum(spans), len(spans)))
    # The same draw again keeps the sample and its marks.
    assert draw(sup, per_source=5, seed=3).status_code == 201
    assert sup.get("/api/projects/heq/question-audit/").json()["figures"] == figures
    # Marked once, the sample stays: a new draw is refused and changes nothing.
    refused = draw(sup, per_source=5, seed=4)
    assert refused.status_code == 409 and refused.json()["errors"][0]["field"] == "seed"
    assert [r["id"] for r in sup.get("/api/projects/heq/question-audit/").json()["results"]] == [r["id"] for r in rows]
    assert AuditEntry.objects.filter(action="question_audit_mark").count() == 9
    assert AuditEntry.objects.filter(action="question_audit_draw").count() == 2


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"per_source": 0, "seed": 1}, "per_source"),
        ({"per_source": "10", "seed": 1}, "per_source"),
        ({"per_source": True, "seed": 1}, "per_source"),
        ({"per_source": 10}, "seed"),
        ({"per_source": 10, "seed": -1}, "seed"),
        ({"per_source": 10, "seed": 1, "source": "x"}, "source"),
    ],
)
def test_bad_draws_are_400_naming_the_field_and_store_nothing(audited, body, field):
    from annotation.models import QuestionAudit

    response = draw(audited["client"]("sup"), **body)
    assert response.status_code == 400 and response.json()["errors"][0]["field"] == field
    assert not QuestionAudit.objects.exists()


def test_bad_marks_and_other_projects_ids_are_refused(audited, make_user, client_for):
    from annotation.models import Membership, QuestionAudit
    from annotation.services.projects import project_create

    sup = audited["client"]("sup")
    assert draw(sup, per_source=2, seed=1).status_code == 201
    entry = QuestionAudit.objects.first()
    url = f"/api/projects/heq/question-audit/{entry.pk}/"
    for body, field in (
        ({"question_correct": "yes"}, "question_correct"),
        ({"question_correct": True, "span_correct": 1}, "span_correct"),
        ({"question_correct": True, "note": "x"}, "note"),
    ):
        response = sup.post(url, body, format="json")
        assert response.status_code == 400 and response.json()["errors"][0]["field"] == field
    entry.refresh_from_db()
    assert entry.question_correct is None
    # Another project's supervisor cannot reach this sample through their own project.
    other = project_create(actor=audited["users"]["root"], slug="heq2", name="x", kind="qa_authoring", language="he")
    stranger = make_user("stranger")
    Membership.objects.create(project=other, user=stranger, role="supervisor", status="active")
    as_stranger = client_for(stranger)
    mark = {"question_correct": True, "span_correct": True}
    assert as_stranger.post(f"/api/projects/heq2/question-audit/{entry.pk}/", mark, format="json").status_code == 404
    assert as_stranger.post(url, mark, format="json").status_code == 404
    # Reviewers and annotators do not audit; an outsider does not see the project.
    assert audited["client"]("rev").get("/api/projects/heq/question-audit/").status_code == 403
    assert audited["client"]("a1").post(url, mark, format="json").status_code == 403
    entry.refresh_from_db()
    assert entry.question_correct is None


def test_rejected_and_removed_questions_are_not_drawn(audited):
    from annotation.models import Annotation, QuestionAudit

    rev, sup = audited["client"]("rev"), audited["client"]("sup")
    annotation = Annotation.objects.get(pk=audited["annotation"])
    assert (
        rev.post(f"/api/annotations/{annotation.pk}/review/", {"grade": "rejected", "question": 1}, format="json")
    ).status_code == 201
    assert draw(sup, per_source=10_000, seed=1).status_code == 201
    drawn = set(QuestionAudit.objects.filter(annotation=annotation).values_list("question", flat=True))
    assert drawn == {0, 2, 3}


def test_report_gives_review_coverage_and_rejection_shares(audited):
    rev, sup = audited["client"]("rev"), audited["client"]("sup")
    annotation = audited["annotation"]
    for question, grade in ((0, "good"), (1, "rejected"), (2, "verified")):
        assert (
            rev.post(f"/api/annotations/{annotation}/review/", {"grade": grade, "question": question}, format="json")
        ).status_code == 201
    report = sup.get("/api/projects/heq/report/").json()
    assert report["review_coverage"] == {"reviewed_share": 3 / 4, "rejected_share": 1 / 3}
    assert report["final_audit"] is None


def test_supervisor_page_draws_marks_and_shows_the_shares(audited):
    """The page's plain forms go through the same service; a reviewer neither sees the link
    nor opens the page."""
    from django.test import Client

    from annotation.models import QuestionAudit

    browser = Client()
    browser.force_login(audited["users"]["sup"])
    page = browser.get("/p/heq/question-audit/")
    assert page.status_code == 200 and 'id="audit-empty"' in page.content.decode()
    assert 'href="/p/heq/question-audit/"' in browser.get("/p/heq/").content.decode()
    drawn = browser.post("/p/heq/question-audit/", {"action": "draw", "per_source": "3", "seed": "5"})
    assert drawn.status_code == 302
    assert QuestionAudit.objects.count() == 6
    entry = QuestionAudit.objects.first()
    marked = browser.post(
        "/p/heq/question-audit/", {"id": str(entry.pk), "question_correct": "yes", "span_correct": "no"}
    )
    assert marked.status_code == 302
    entry.refresh_from_db()
    assert (entry.question_correct, entry.span_correct) == (True, False)
    html = browser.get("/p/heq/question-audit/").content.decode()
    assert 'id="audit-figures"' in html and f'id="audit-{entry.pk}" data-marked="yes"' in html
    # Bad input from the form: a message, nothing stored.
    for bad in ({"action": "draw", "per_source": "x", "seed": "5"}, {"id": "abc", "question_correct": "yes"}):
        assert browser.post("/p/heq/question-audit/", bad, follow=True).status_code == 200
    assert QuestionAudit.objects.count() == 6
    assert QuestionAudit.objects.filter(question_correct__isnull=False).count() == 1

    reviewer = Client()
    reviewer.force_login(audited["users"]["rev"])
    assert reviewer.get("/p/heq/question-audit/").status_code == 403
    assert 'href="/p/heq/question-audit/"' not in reviewer.get("/p/heq/").content.decode()
