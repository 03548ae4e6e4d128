"""HeQ's review → feedback → disqualification loop through HTTP (HeQ §3.3; docs/api.md "Review and
feedback"): a trial annotator's paragraph waits for review, a reviewer grades each question
with a comment, the annotator reads grade and comment in their inbox (unread count, newest
first, mark read), the supervisor disqualifies them and they get no more work. Plus the
permission edges: annotators cannot review, nobody reads another's inbox, bad reviews are 400s
that store nothing."""

import json

import pytest

from tests.kinds.qa.test_api import PARAGRAPH, claim, good_value, jsonl, upload

pytestmark = pytest.mark.django_db
RLO = "\u202e"


@pytest.fixture
def loop(make_user, client_for):
    from annotation.models import Membership
    from annotation.services.projects import project_create

    admin = make_user("root", staff=True)
    project = project_create(actor=admin, slug="heq-loop", name="HeQ loop", kind="qa_authoring", language="he")
    users = {}
    for name, role, status in (
        ("sup", "supervisor", "active"),
        ("rev", "reviewer", "active"),
        ("newbie", "annotator", "trial"),
        ("other", "annotator", "active"),
    ):
        users[name] = make_user(name)
        Membership.objects.create(project=project, user=users[name], role=role, status=status)
    rows = [{"id": f"p{i}", "context": PARAGRAPH, "title": f"מאמר {i}"} for i in range(4)]
    response = client_for(users["sup"]).post(
        "/api/projects/heq-loop/import/",
        {"file": upload("p.jsonl", jsonl(rows)), "format": "jsonl"},
        format="multipart",
    )
    assert response.status_code == 201
    return {"users": users, "client": lambda name: client_for(users[name])}


def author(client):
    claimed = claim(client, "heq-loop")
    response = client.post(f"/api/assignments/{claimed['assignment']}/submit/", {"value": good_value()}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def test_review_feedback_disqualification_flow(loop):
    from annotation.models import Feedback, Review

    newbie, rev, sup = loop["client"]("newbie"), loop["client"]("rev"), loop["client"]("sup")
    annotation_id = author(newbie)

    pending = rev.get("/api/projects/heq-loop/reviews/pending/")
    assert pending.status_code == 200
    [entry] = pending.json()["results"]
    # The reviewer reads the annotator as the export's pseudonym, never the username.
    from django.contrib.auth import get_user_model

    from annotation.models import Project
    from annotation.selectors.names import annotator_pseudonym

    pseudonym = annotator_pseudonym(
        Project.objects.get(slug="heq-loop").pk, get_user_model().objects.get(username="newbie").pk
    )
    assert entry["annotation"] == annotation_id and entry["annotator"] == pseudonym
    assert entry["value"] == good_value() and entry["item"]["payload"]["context"] == PARAGRAPH and entry["graded"] == {}

    comment = f"  השאלה מעתיקה את המשפט מהפסקה; נסו לנסח מחדש.{RLO}\n"  # kept exactly, bidi control included
    graded = rev.post(
        f"/api/annotations/{annotation_id}/review/",
        {"grade": "verified", "comment": comment, "question": 0},
        format="json",
    )
    assert graded.status_code == 201, graded.content
    assert graded.json()["grade"] == "verified" and graded.json()["comment"] == comment
    rev.post(
        f"/api/annotations/{annotation_id}/review/",
        {"grade": "rejected", "comment": "לא ברור", "question": 2},
        format="json",
    )
    # Still pending: two of four questions graded.
    [entry] = rev.get("/api/projects/heq-loop/reviews/pending/").json()["results"]
    assert set(entry["graded"]) == {"0", "2"}
    # Re-grading replaces the grade (200) and updates that question's one message (it used to
    # send a second message for the same question).
    regraded = rev.post(
        f"/api/annotations/{annotation_id}/review/", {"grade": "good", "question": 0, "comment": comment}, format="json"
    )
    assert regraded.status_code == 200 and Review.objects.get(annotation_id=annotation_id, question=0).grade == "good"

    inbox = newbie.get("/api/me/feedback/")
    assert inbox.status_code == 200
    body = inbox.json()
    assert body["unread"] == 2 and body["count"] == 2
    newest, oldest = body["results"]
    assert (newest["grade"], newest["question"], newest["message"]) == ("good", 0, comment)
    assert (oldest["grade"], oldest["message"], oldest["question_text"]) == (
        "rejected",
        "לא ברור",
        good_value()["questions"][2]["question"],
    )
    assert newest["project"] == "heq-loop" and newest["direction"] == "rtl"
    assert newest["read"] is False and newest["item"] == entry["item"]["external_id"]

    # Mark read: the count drops; marking twice keeps the first time; others' messages are 404.
    read = newbie.post(f"/api/me/feedback/{oldest['id']}/read/")
    assert read.status_code == 200 and read.json()["read"] is True
    first_time = read.json()["read_at"]
    assert newbie.post(f"/api/me/feedback/{oldest['id']}/read/").json()["read_at"] == first_time
    assert newbie.get("/api/me/feedback/").json()["unread"] == 1
    assert [m["id"] for m in newbie.get("/api/me/feedback/?unread=true").json()["results"]] == [newest["id"]]
    assert loop["client"]("other").post(f"/api/me/feedback/{newest['id']}/read/").status_code == 404
    assert loop["client"]("other").get("/api/me/feedback/").json()["count"] == 0
    assert Feedback.objects.get(pk=newest["id"]).read_at is None

    # The supervisor reads the grades in the report and disqualifies the member.
    report = sup.get("/api/projects/heq-loop/report/").json()
    [row] = report["grades_per_annotator"]
    assert row["annotator"] == "newbie" and row["totals"] == {"rejected": 1, "verified": 0, "good": 1, "gold": 0}
    changed = sup.patch("/api/projects/heq-loop/members/newbie/", {"status": "disqualified"}, format="json")
    assert changed.status_code == 200 and changed.json()["status"] == "disqualified"
    assert newbie.get("/api/projects/heq-loop/next/").status_code == 403
    # Feedback stays readable after disqualification.
    assert newbie.get("/api/me/feedback/").json()["count"] == 2


def test_promoting_a_trial_member_to_trusted_makes_review_a_sample(loop):
    from annotation.models import Annotation, Project

    sup = loop["client"]("sup")
    project = Project.objects.get(slug="heq-loop")
    project.settings = {**project.settings, "review_rate": 0.0}
    project.save()
    first = author(loop["client"]("newbie"))
    assert Annotation.objects.get(pk=first).review_required
    assert (
        sup.patch(
            "/api/projects/heq-loop/members/newbie/", {"status": "active", "trusted": True}, format="json"
        ).status_code
        == 200
    )
    second = author(loop["client"]("newbie"))
    assert not Annotation.objects.get(pk=second).review_required
    pending = [
        e["annotation"] for e in loop["client"]("rev").get("/api/projects/heq-loop/reviews/pending/").json()["results"]
    ]
    assert pending == [first]


@pytest.mark.parametrize(
    "body, field",
    [
        ({"grade": "excellent", "question": 0}, "grade"),
        ({"grade": "gold"}, "question"),
        ({"grade": "gold", "question": 4}, "question"),
        ({"grade": "gold", "question": True}, "question"),
        ({"grade": "gold", "question": 0, "comment": 5}, "comment"),
        ({"grade": "gold", "question": 0, "score": 1}, "score"),
    ],
)
def test_bad_reviews_are_400_and_store_nothing(loop, body, field):
    from annotation.models import Feedback, Review

    annotation_id = author(loop["client"]("newbie"))
    response = loop["client"]("rev").post(f"/api/annotations/{annotation_id}/review/", body, format="json")
    assert response.status_code == 400, response.content
    assert field in [e["field"] for e in response.json()["errors"]]
    assert Review.objects.count() == 0 and Feedback.objects.count() == 0


def test_who_may_review(loop, make_user, client_for):
    annotation_id = author(loop["client"]("newbie"))
    url = f"/api/annotations/{annotation_id}/review/"
    body = {"grade": "gold", "question": 0}
    assert loop["client"]("other").post(url, body, format="json").status_code == 403  # an annotator
    assert loop["client"]("other").get("/api/projects/heq-loop/reviews/pending/").status_code == 403
    stranger = client_for(make_user("stranger"))
    assert stranger.post(url, body, format="json").status_code == 404  # not a member: not revealed
    assert stranger.get("/api/projects/heq-loop/reviews/pending/").status_code == 404
    assert loop["client"]("rev").post("/api/annotations/999999/review/", body, format="json").status_code == 404
    assert loop["client"]("sup").post(url, body, format="json").status_code == 201
    from rest_framework.test import APIClient

    assert APIClient().get("/api/me/feedback/").status_code == 401


def test_validation_is_blind_and_refuses_bad_spans(loop):
    from annotation.models import Project, QuestionValidation

    project = Project.objects.get(slug="heq-loop")
    project.settings = {**project.settings, "validate_splits": ["train", "dev", "test"], "validators_per_question": 1}
    project.save()
    annotation_id = author(loop["client"]("newbie"))
    # The author gets none of their own; a trial annotator may not validate.
    assert loop["client"]("newbie").get("/api/projects/heq-loop/validations/next/").status_code == 403
    other = loop["client"]("other")
    got = other.get("/api/projects/heq-loop/validations/next/")
    assert got.status_code == 200
    body = got.json()
    assert body["annotation"] == annotation_id and body["remaining"] == 4
    assert "answer" not in json.dumps(body) and "answerable" not in json.dumps(body)
    url = "/api/validations/submit/"
    index = body["question"]
    bad = other.post(
        url,
        {"annotation": annotation_id, "question": index, "answerable": True, "answer": {"start": 3, "text": "ירושלים"}},
        format="json",
    )
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "answer.text"
    bad = other.post(
        url,
        {
            "annotation": annotation_id,
            "question": index,
            "answerable": False,
            "answer": {"start": 0, "text": PARAGRAPH[:3]},
        },
        format="json",
    )
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "answer"
    assert (
        other.post(
            url, {"annotation": annotation_id, "question": 9, "answerable": False, "answer": None}, format="json"
        ).status_code
        == 400
    )
    assert QuestionValidation.objects.count() == 0
    ok = other.post(
        url, {"annotation": annotation_id, "question": index, "answerable": False, "answer": None}, format="json"
    )
    assert ok.status_code == 201 and ok.json()["answer"] is None
    again = other.post(
        url, {"annotation": annotation_id, "question": index, "answerable": False, "answer": None}, format="json"
    )
    assert again.status_code == 409
    seen = {index}
    while (got := other.get("/api/projects/heq-loop/validations/next/")).status_code == 200:
        seen.add(got.json()["question"])
        other.post(
            url,
            {"annotation": annotation_id, "question": got.json()["question"], "answerable": False, "answer": None},
            format="json",
        )
    assert got.status_code == 204 and seen == {0, 1, 2, 3}
    assert (
        loop["client"]("newbie")
        .post(url, {"annotation": annotation_id, "question": 0, "answerable": False, "answer": None}, format="json")
        .status_code
        == 403
    )


def test_a_validators_api_answer_loses_trailing_punctuation_as_on_the_page(loop):
    """A validator's span through the API follows the page's rule: "רבות." is stored as
    "רבות" (static/qa/morphology.js trimEnd), and answered with what was stored."""
    from annotation.models import Project, QuestionValidation

    project = Project.objects.get(slug="heq-loop")
    project.settings = {**project.settings, "validate_splits": ["train", "dev", "test"], "validators_per_question": 1}
    project.save()
    annotation_id = author(loop["client"]("newbie"))
    other = loop["client"]("other")
    body = other.get("/api/projects/heq-loop/validations/next/").json()
    dotted = PARAGRAPH.index("רבות.")
    ok = other.post(
        "/api/validations/submit/",
        {
            "annotation": annotation_id,
            "question": body["question"],
            "answerable": True,
            "answer": {"start": dotted, "text": "רבות."},
        },
        format="json",
    )
    assert ok.status_code == 201, ok.content
    assert ok.json()["answer"] == {"start": dotted, "text": "רבות"}
    stored = QuestionValidation.objects.get()
    assert (stored.answer_start, stored.answer_text) == (dotted, "רבות")


def test_schema_documents_the_heq_endpoints(loop):
    schema = loop["client"]("sup").get("/api/schema/?format=json")
    assert schema.status_code == 200
    paths = json.loads(schema.content)["paths"]
    for path in (
        "/api/projects/{slug}/reviews/pending/",
        "/api/annotations/{annotation_id}/review/",
        "/api/me/feedback/",
        "/api/me/feedback/{feedback_id}/read/",
        "/api/projects/{slug}/validations/next/",
        "/api/validations/submit/",
        "/api/projects/{slug}/questions/export/",
    ):
        assert path in paths, path


def test_report_and_pending_list_queries_do_not_grow_with_the_work(loop):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    rev, sup = loop["client"]("rev"), loop["client"]("sup")

    def counts():
        with CaptureQueriesContext(connection) as report:
            assert sup.get("/api/projects/heq-loop/report/").status_code == 200
        with CaptureQueriesContext(connection) as pending:
            assert rev.get("/api/projects/heq-loop/reviews/pending/").status_code == 200
        with CaptureQueriesContext(connection) as inbox:
            assert loop["client"]("newbie").get("/api/me/feedback/").status_code == 200
        return len(report), len(pending), len(inbox)

    first = author(loop["client"]("newbie"))
    rev.post(f"/api/annotations/{first}/review/", {"grade": "good", "question": 0}, format="json")
    small = counts()
    for _ in range(3):
        annotation_id = author(loop["client"]("newbie"))
        for index in range(3):
            rev.post(f"/api/annotations/{annotation_id}/review/", {"grade": "gold", "question": index}, format="json")
    assert counts() == small


# --- validation of the imported file's questions (HeQ §3.3) -----------------------------------

JERUSALEM = "ירושלים"
IMPORTED = {
    "version": "v1.1",
    "data": [
        {
            "title": "ערים",
            "source": "Wikipedia",
            "paragraphs": [
                {
                    "context": PARAGRAPH,
                    "qas": [
                        {
                            "question": "היכן נוסדה החברה?",
                            "id": "q-answerable",
                            "answers": [{"text": JERUSALEM, "answer_start": PARAGRAPH.index("בירושלים") + 1}],
                            "is_impossible": False,
                            "WH Question": "היכן",
                            "question quality": "good",
                            "wrong_answers": [],
                        },
                        {
                            "question": "כמה עובדים יש בה?",
                            "id": "q-impossible",
                            "answers": [],
                            "is_impossible": True,
                            "WH Question": "כמה",
                            "question quality": "verified",
                            "wrong_answers": [{"text": "1999", "answer_start": PARAGRAPH.index("1999")}],
                        },
                        {
                            "question": "מה?",
                            "id": "q-rejected",
                            "answers": [{"text": "1948", "answer_start": PARAGRAPH.index("1948")}],
                            "is_impossible": False,
                            "WH Question": "מה",
                            "question quality": "rejected",
                            "wrong_answers": [],
                        },
                    ],
                }
            ],
        }
    ],
}
SUBMIT = "/api/validations/submit/"


@pytest.fixture
def imported(make_user, client_for):
    """A project whose file brought three questions (one answerable, one unanswerable, one
    marked rejected); validators: v1, v2 (active annotators), rev; t1 is on trial."""
    from annotation.models import Item, Membership
    from annotation.services.projects import project_create
    from tests.kinds.qa.test_api import upload as upload_file

    admin = make_user("root", staff=True)
    project = project_create(
        actor=admin,
        slug="heq-imp",
        name="HeQ imported",
        kind="qa_authoring",
        language="he",
        settings={"validate_splits": ["train", "dev", "test"], "validators_per_question": 2},
    )
    users = {}
    for name, role, status in (
        ("sup", "supervisor", "active"),
        ("rev", "reviewer", "active"),
        ("v1", "annotator", "active"),
        ("v2", "annotator", "active"),
        ("t1", "annotator", "trial"),
    ):
        users[name] = make_user(name)
        Membership.objects.create(project=project, user=users[name], role=role, status=status)
    data = json.dumps(IMPORTED, ensure_ascii=False)
    response = client_for(users["sup"]).post(
        "/api/projects/heq-imp/import/", {"file": upload_file("f.json", data), "format": "squad"}, format="multipart"
    )
    assert response.status_code == 201, response.content
    item = Item.objects.get(project=project)
    return {"project": project, "item": item, "users": users, "client": lambda name: client_for(users[name])}


def drain(client, slug="heq-imp"):
    """Every question the queue serves to `client`, answering each as unanswerable."""
    served = []
    while (got := client.get(f"/api/projects/{slug}/validations/next/")).status_code == 200:
        body = got.json()
        served.append(body)
        target = (
            {"item": body["item"]["id"], "question_key": body["question_key"]}
            if body["annotation"] is None
            else {"annotation": body["annotation"], "question": body["question"]}
        )
        assert client.post(SUBMIT, {**target, "answerable": False, "answer": None}, format="json").status_code == 201
    assert got.status_code == 204
    return served


def test_imported_questions_are_served_blind_stored_and_counted(imported):
    from annotation.models import QuestionValidation

    v1, item = imported["client"]("v1"), imported["item"]
    got = v1.get("/api/projects/heq-imp/validations/next/")
    assert got.status_code == 200
    body = got.json()
    assert body["annotation"] is None and body["question_key"] in ("q-answerable", "q-impossible")
    assert body["item"]["id"] == item.pk and set(body["item"]["payload"]) == {"context", "title"}
    assert set(body) == {"annotation", "question", "question_key", "question_text", "item", "remaining"}
    assert body["remaining"] == 2  # the file's "rejected" question is not served
    # Blind: nothing of the file's answers, flags or grades.
    dumped = json.dumps(body, ensure_ascii=False)
    for leak in ("answers", "is_impossible", "wrong_answers", "quality", "WH Question", "answer_start"):
        assert leak not in dumped

    start = PARAGRAPH.index("בירושלים")
    stored = v1.post(
        SUBMIT,
        {
            "item": item.pk,
            "question_key": "q-answerable",
            "answerable": True,
            "answer": {"start": start, "text": "ב" + JERUSALEM},
        },
        format="json",
    )
    assert stored.status_code == 201, stored.content
    assert stored.json() == {
        **stored.json(),
        "annotation": None,
        "item": item.pk,
        "question": 0,
        "question_key": "q-answerable",
        "answer": {"start": start, "text": "ב" + JERUSALEM},
    }
    again = v1.post(
        SUBMIT, {"item": item.pk, "question_key": "q-answerable", "answerable": False, "answer": None}, format="json"
    )
    assert again.status_code == 409 and again.json()["errors"][0]["field"] == "question_key"
    assert [b["question_key"] for b in drain(v1)] == ["q-impossible"]
    row = QuestionValidation.objects.get(validator=imported["users"]["v1"], question_key="q-answerable")
    assert (row.annotation_id, row.item_id, row.question, row.answer_start, row.answer_text) == (
        None,
        item.pk,
        0,
        start,
        "ב" + JERUSALEM,
    )

    # validators_per_question = 2: after v2 answers both, a third validator gets nothing.
    assert {b["question_key"] for b in drain(imported["client"]("v2"))} == {"q-answerable", "q-impossible"}
    assert imported["client"]("rev").get("/api/projects/heq-imp/validations/next/").status_code == 204
    assert QuestionValidation.objects.filter(item=item).count() == 4
    # A trial annotator validates nothing, imported or not.
    assert imported["client"]("t1").get("/api/projects/heq-imp/validations/next/").status_code == 403
    assert (
        imported["client"]("t1")
        .post(
            SUBMIT,
            {"item": item.pk, "question_key": "q-answerable", "answerable": False, "answer": None},
            format="json",
        )
        .status_code
        == 403
    )


def test_imported_questions_follow_validate_splits(imported):
    from annotation.kinds.qa.questions import project_article_splits
    from annotation.kinds.registry import get_kind

    project = imported["project"]
    (split,) = set(project_article_splits(project, get_kind(project.kind).settings_for(project.settings)).values())
    others = [s for s in ("train", "dev", "test") if s != split]
    project.settings = {**project.settings, "validate_splits": others}
    project.save()
    assert imported["client"]("v1").get("/api/projects/heq-imp/validations/next/").status_code == 204
    project.settings = {**project.settings, "validate_splits": [split]}
    project.save()
    assert imported["client"]("v1").get("/api/projects/heq-imp/validations/next/").status_code == 200


@pytest.mark.parametrize(
    "body, field, status",
    [
        ({"answerable": False, "answer": None}, "annotation", 400),
        (
            {
                "annotation": 1,
                "question": 0,
                "item": "ITEM",
                "question_key": "q-answerable",
                "answerable": False,
                "answer": None,
            },
            "item",
            400,
        ),
        ({"item": True, "question_key": "q-answerable", "answerable": False, "answer": None}, "item", 400),
        ({"item": "ITEM", "answerable": False, "answer": None}, "question_key", 400),
        ({"item": "ITEM", "question_key": "nope", "answerable": False, "answer": None}, "question_key", 400),
        ({"item": "ITEM", "question_key": 7, "answerable": False, "answer": None}, "question_key", 400),
        (
            {
                "item": "ITEM",
                "question_key": "q-answerable",
                "answerable": True,
                "answer": {"start": 0, "text": JERUSALEM},
            },
            "answer.text",
            400,
        ),
        ({"item": "ITEM", "question_key": "q-answerable", "answerable": "yes", "answer": None}, "answerable", 400),
        (
            {"item": "ITEM", "question_key": "q-answerable", "answerable": False, "answer": None, "extra": 1},
            "extra",
            400,
        ),
        ({"item": 999999, "question_key": "q-answerable", "answerable": False, "answer": None}, None, 404),
    ],
)
def test_bad_validations_of_imported_questions_store_nothing(imported, body, field, status):
    from annotation.models import QuestionValidation

    body = {key: imported["item"].pk if value == "ITEM" else value for key, value in body.items()}
    response = imported["client"]("v1").post(SUBMIT, body, format="json")
    assert response.status_code == status, response.content
    if field:
        assert field in [e["field"] for e in response.json()["errors"]]
    assert QuestionValidation.objects.count() == 0


def test_imported_questions_of_other_projects_are_not_found(imported, make_user, client_for):
    stranger = client_for(make_user("stranger"))
    body = {"item": imported["item"].pk, "question_key": "q-answerable", "answerable": False, "answer": None}
    assert stranger.post(SUBMIT, body, format="json").status_code == 404
    assert stranger.get("/api/projects/heq-imp/validations/next/").status_code == 404


def test_database_keeps_one_target_and_one_answer_per_validator(imported):
    from django.db import IntegrityError, transaction

    from annotation.models import QuestionValidation

    item, v1 = imported["item"], imported["users"]["v1"]
    annotation_id = None
    bad = [
        {"item": None, "question_key": ""},  # neither target
        {"item": item, "question_key": ""},  # an imported question needs its key
    ]
    for fields in bad:
        with pytest.raises(IntegrityError), transaction.atomic():
            QuestionValidation.objects.create(annotation_id=annotation_id, question=0, validator=v1, **fields)
    QuestionValidation.objects.create(item=item, question=0, question_key="q-answerable", validator=v1)
    with pytest.raises(IntegrityError), transaction.atomic():
        QuestionValidation.objects.create(item=item, question=0, question_key="q-answerable", validator=v1)
    # The same validator on another imported question is fine.
    QuestionValidation.objects.create(item=item, question=1, question_key="q-impossible", validator=v1)


def test_database_refuses_both_targets(loop):
    from django.db import IntegrityError, transaction

    from annotation.models import Item, QuestionValidation

    annotation_id = author(loop["client"]("newbie"))
    item = Item.objects.filter(project__slug="heq-loop").first()
    other = loop["users"]["other"]
    with pytest.raises(IntegrityError), transaction.atomic():
        QuestionValidation.objects.create(
            annotation_id=annotation_id, item=item, question=0, question_key="k", validator=other
        )
    with pytest.raises(IntegrityError), transaction.atomic():
        QuestionValidation.objects.create(annotation_id=annotation_id, question=0, question_key="k", validator=other)
    QuestionValidation.objects.create(annotation_id=annotation_id, question=0, validator=other)
    with pytest.raises(IntegrityError), transaction.atomic():
        QuestionValidation.objects.create(annotation_id=annotation_id, question=0, validator=other)


def test_report_scores_validators_against_the_files_answers(imported):
    item = imported["item"]
    start = PARAGRAPH.index("בירושלים")
    v1, v2 = imported["client"]("v1"), imported["client"]("v2")
    v1.post(
        SUBMIT,
        {
            "item": item.pk,
            "question_key": "q-answerable",
            "answerable": True,
            "answer": {"start": start, "text": "ב" + JERUSALEM},
        },
        format="json",
    )
    v1.post(
        SUBMIT, {"item": item.pk, "question_key": "q-impossible", "answerable": False, "answer": None}, format="json"
    )
    v2.post(
        SUBMIT,
        {
            "item": item.pk,
            "question_key": "q-answerable",
            "answerable": True,
            "answer": {"start": start + 1, "text": JERUSALEM},
        },
        format="json",
    )
    report = imported["client"]("sup").get("/api/projects/heq-imp/report/").json()
    agreement = report["span_agreement"]
    # v1: prefixed span (EM 0, F1 0, TLNLS 7/8) and agreeing "no answer" (1, 1, 1); v2: exact (1, 1, 1).
    assert agreement["pairs"] == 3 and agreement["by_origin"]["imported"]["pairs"] == 3
    assert agreement["by_origin"]["authored"] == {"pairs": 0, "em": None, "f1": None, "tlnls": None}
    assert agreement["em"] == pytest.approx(2 / 3) and agreement["f1"] == pytest.approx(2 / 3)
    assert agreement["tlnls"] == pytest.approx((7 / 8 + 1 + 1) / 3)
    per = {row["validator"]: row for row in agreement["per_validator"]}
    assert per["v1"]["em"] == 0.5 and per["v1"]["tlnls"] == pytest.approx((7 / 8 + 1) / 2) and per["v2"]["em"] == 1.0
    # Two questions to validate (the rejected one is not), one of them has its two answers.
    assert report["validation"] == {
        "splits": ["train", "dev", "test"],
        "validators_per_question": 2,
        "questions": 2,
        "authored": 0,
        "imported": 2,
        "complete": 1,
        "answers": 3,
    }


def test_squad_export_adds_validator_spans_to_imported_answers(imported):
    from tests.kinds.qa.test_api import export

    item, sup = imported["item"], imported["client"]("sup")
    before = json.loads(export(sup, "heq-imp"))
    start = PARAGRAPH.index("בירושלים")
    # v1's prefixed span is new; v2 repeats the file's span (not added twice); an "unanswerable"
    # answer and any answer to an unanswerable question add nothing.
    imported["client"]("v1").post(
        SUBMIT,
        {
            "item": item.pk,
            "question_key": "q-answerable",
            "answerable": True,
            "answer": {"start": start, "text": "ב" + JERUSALEM},
        },
        format="json",
    )
    imported["client"]("v2").post(
        SUBMIT,
        {
            "item": item.pk,
            "question_key": "q-answerable",
            "answerable": True,
            "answer": {"start": start + 1, "text": JERUSALEM},
        },
        format="json",
    )
    imported["client"]("v1").post(
        SUBMIT,
        {
            "item": item.pk,
            "question_key": "q-impossible",
            "answerable": True,
            "answer": {"start": PARAGRAPH.index("1999"), "text": "1999"},
        },
        format="json",
    )
    imported["client"]("rev").post(
        SUBMIT, {"item": item.pk, "question_key": "q-answerable", "answerable": False, "answer": None}, format="json"
    )
    after = json.loads(export(sup, "heq-imp"))
    expected = before
    expected["data"][0]["paragraphs"][0]["qas"][0]["answers"].append({"text": "ב" + JERUSALEM, "answer_start": start})
    assert after == expected
    qas = after["data"][0]["paragraphs"][0]["qas"]
    assert qas[1]["answers"] == [] and qas[1]["is_impossible"] is True
    # The item's payload is untouched (the extra span lives in the validation only).
    item.refresh_from_db()
    assert item.payload["questions"][0]["answers"] == IMPORTED["data"][0]["paragraphs"][0]["qas"][0]["answers"]


def test_grade_regrade_and_comment_send_one_message_per_question(loop):
    """The reviewer grades, regrades, then comments: the annotator has one message for the
    question, with the last grade and comment, unread again after each change and on top."""
    from annotation.models import Feedback

    newbie, rev = loop["client"]("newbie"), loop["client"]("rev")
    annotation_id = author(newbie)
    review = f"/api/annotations/{annotation_id}/review/"
    rev.post(review, {"grade": "verified", "question": 1}, format="json")
    [message] = newbie.get("/api/me/feedback/").json()["results"]
    newbie.post(f"/api/me/feedback/{message['id']}/read/")
    rev.post(review, {"grade": "rejected", "question": 0, "comment": "שאלה אחרת"}, format="json")
    rev.post(review, {"grade": "good", "question": 1}, format="json")
    rev.post(review, {"grade": "good", "question": 1, "comment": "ניסוח יפה‏!"}, format="json")
    body = newbie.get("/api/me/feedback/").json()
    assert body["count"] == 2 and body["unread"] == 2
    top = body["results"][0]
    assert (top["id"], top["question"], top["grade"], top["message"], top["read"]) == (
        message["id"],
        1,
        "good",
        "ניסוח יפה‏!",
        False,
    )
    # Sending the same grade and comment again changes nothing: still read once read.
    newbie.post(f"/api/me/feedback/{message['id']}/read/")
    rev.post(review, {"grade": "good", "question": 1, "comment": "ניסוח יפה‏!"}, format="json")
    assert Feedback.objects.get(pk=message["id"]).read_at is not None
    assert Feedback.objects.filter(review__annotation_id=annotation_id).count() == 2
