"""The rules that decide who gets work hold on every write, not only where work is handed out.

- Validation (HeQ §3.3): only questions of paragraphs in `settings.validate_splits` are
  validated, each by at most `settings.validators_per_question` validators. A submit naming
  another question is a 409, even when nobody served it; the cap holds under concurrent
  submits (a row lock on the question's annotation or paragraph).
- A disqualified member (docs/api.md "Users and membership": PATCH .../members/{username}/ status "disqualified") gets
  403 on next and submit; likewise on revising or withdrawing their items and on the
  revision list and page, whether disqualified in the relabel project or in the authoring
  project that generated the items."""

import json
import threading
from collections import Counter

import pytest

from tests.kinds.qa.test_api import PARAGRAPH, good_value, jsonl, upload
from tests.services.test_concurrency import run_threads

SUBMIT = "/api/validations/submit/"
VALIDATORS = 10
UNANSWERABLE = {"answerable": False, "answer": None}


def imported_question(qid: str, quality: str = "verified") -> dict:
    return {
        "id": qid,
        "question": "כמה עובדים יש בחברה?",
        "is_impossible": True,
        "answers": [],
        "question quality": quality,
    }


@pytest.fixture
def heq(make_user, client_for):
    """qa_authoring project heq-rules (validators_per_question 2, validate_splits dev and test)
    with a train and a dev paragraph, each carrying a question from the file and one the file
    marks rejected; author a1 has
    written questions on both; validators v0..v9 are active annotators."""
    from annotation.models import Annotation, Membership
    from annotation.services.projects import project_create

    admin = make_user("root", staff=True)
    project = project_create(actor=admin, slug="heq-rules", name="HeQ rules", kind="qa_authoring", language="he")
    users = {name: make_user(name) for name in ("sup", "a1", *(f"v{i}" for i in range(VALIDATORS)))}
    Membership.objects.create(project=project, user=users["sup"], role="supervisor", status="active")
    for name in ("a1", *(f"v{i}" for i in range(VALIDATORS))):
        Membership.objects.create(project=project, user=users[name], role="annotator", status="active", trusted=True)
    rows = [
        {
            "id": f"p-{split}",
            "context": PARAGRAPH,
            "title": f"ערים {split}",
            "split": split,
            "questions": [imported_question(f"imp-{split}"), imported_question(f"rejected-{split}", "rejected")],
        }
        for split in ("train", "dev")
    ]
    response = client_for(users["sup"]).post(
        "/api/projects/heq-rules/import/",
        {"file": upload("p.jsonl", jsonl(rows)), "format": "jsonl"},
        format="multipart",
    )
    assert response.status_code == 201, response.content
    author = client_for(users["a1"])
    for _ in rows:
        claimed = author.get("/api/projects/heq-rules/next/").json()
        assert (
            author.post(
                f"/api/assignments/{claimed['assignment']}/submit/", {"value": good_value()}, format="json"
            ).status_code
            == 201
        )
    by_split = {a.item.split: a for a in Annotation.objects.select_related("item")}
    items = {a.item.split: a.item for a in by_split.values()}
    return {"users": users, "client": lambda name: client_for(users[name]), "annotations": by_split, "items": items}


def targets(heq, split: str) -> list[tuple[dict, str]]:
    """(body naming the question, the field a refusal names) for the authored and the
    imported question of the paragraph in `split`."""
    return [
        ({"annotation": heq["annotations"][split].pk, "question": 0}, "question"),
        ({"item": heq["items"][split].pk, "question_key": f"imp-{split}"}, "question_key"),
    ]


@pytest.mark.django_db
def test_validation_of_a_question_outside_the_validated_splits_is_refused(heq):
    from annotation.models import QuestionValidation

    v0 = heq["client"]("v0")
    for body, field in targets(heq, "train"):
        response = v0.post(SUBMIT, {**body, **UNANSWERABLE}, format="json")
        assert response.status_code == 409, response.content
        assert response.json()["errors"][0]["field"] == field
        assert "split" in response.json()["errors"][0]["message"]
    assert not QuestionValidation.objects.exists()
    for body, _field in targets(heq, "dev"):
        assert v0.post(SUBMIT, {**body, **UNANSWERABLE}, format="json").status_code == 201
    assert QuestionValidation.objects.count() == 2


@pytest.mark.django_db
def test_validation_of_a_rejected_question_is_refused(heq):
    from annotation.models import QuestionValidation

    dev = heq["annotations"]["dev"]
    graded = heq["client"]("sup").post(
        f"/api/annotations/{dev.pk}/review/", {"grade": "rejected", "question": 1}, format="json"
    )
    assert graded.status_code == 201
    v0 = heq["client"]("v0")
    for body, field in (
        ({"annotation": dev.pk, "question": 1}, "question"),
        ({"item": heq["items"]["dev"].pk, "question_key": "rejected-dev"}, "question_key"),
    ):
        response = v0.post(SUBMIT, {**body, **UNANSWERABLE}, format="json")
        assert response.status_code == 409, response.content
        assert response.json()["errors"][0]["field"] == field
    assert not QuestionValidation.objects.exists()


@pytest.mark.django_db
def test_validation_stops_at_validators_per_question(heq):
    from annotation.models import QuestionValidation

    for body, field in targets(heq, "dev"):
        for name in ("v0", "v1"):
            assert heq["client"](name).post(SUBMIT, {**body, **UNANSWERABLE}, format="json").status_code == 201
        third = heq["client"]("v2").post(SUBMIT, {**body, **UNANSWERABLE}, format="json")
        assert third.status_code == 409, third.content
        assert third.json()["errors"][0]["field"] == field
        # The validator who already answered still hears that they did.
        again = heq["client"]("v0").post(SUBMIT, {**body, **UNANSWERABLE}, format="json")
        assert again.status_code == 409 and "already answered" in again.json()["errors"][0]["message"]
    assert QuestionValidation.objects.count() == 4
    assert not QuestionValidation.objects.filter(validator=heq["users"]["v2"]).exists()


@pytest.mark.postgres
def test_concurrent_validations_never_exceed_the_cap(transactional_db, heq):
    from annotation.errors import Conflict
    from annotation.kinds.qa.validation import validation_submit
    from annotation.models import QuestionValidation

    for body, _field in targets(heq, "dev"):
        outcomes = Counter()
        lock = threading.Lock()
        target = {
            "annotation_id": body.get("annotation"),
            "question": body.get("question"),
            "item_id": body.get("item"),
            "question_key": body.get("question_key"),
        }

        def validate(user):
            try:
                validation_submit(user=user, answerable=False, answer=None, **target)
                outcome = "stored"
            except Conflict:
                outcome = "conflict"
            with lock:
                outcomes[outcome] += 1

        errors = run_threads(validate, [(heq["users"][f"v{i}"],) for i in range(VALIDATORS)])
        assert errors == [], errors[0]
        assert outcomes == {"stored": 2, "conflict": VALIDATORS - 2}
    assert QuestionValidation.objects.filter(annotation=heq["annotations"]["dev"]).count() == 2
    assert QuestionValidation.objects.filter(item=heq["items"]["dev"]).count() == 2


# --- disqualified authors ---------------------------------------------------------------------


@pytest.fixture
def failed_pairs(make_user, client_for):
    """fa-rules (nli_relabel, supervisor sup) holds a failed pair by its annotator author-a;
    fa-rel (nli_relabel) receives pairs of fa-auth (nli_authoring, linked by an admin) and
    holds a failed pair by b-author, an annotator of fa-auth only."""
    from annotation.models import Item, Membership
    from annotation.services.projects import project_create

    admin = make_user("root", staff=True)
    users = {name: make_user(name) for name in ("sup", "author-a", "b-author")}
    rules = project_create(actor=admin, slug="fa-rules", name="Rules", kind="nli_relabel", language="fa")
    rel = project_create(actor=admin, slug="fa-rel", name="Relabel", kind="nli_relabel", language="fa")
    auth = project_create(
        actor=admin,
        slug="fa-auth",
        name="Authoring",
        kind="nli_authoring",
        language="fa",
        settings={"relabel_project": "fa-rel"},
    )
    for project in (rules, rel, auth):
        Membership.objects.create(project=project, user=users["sup"], role="supervisor", status="active")
    Membership.objects.create(project=rules, user=users["author-a"], role="annotator", status="active")
    Membership.objects.create(project=auth, user=users["b-author"], role="annotator", status="active")
    items = {
        "author-a": Item.objects.create(
            project=rules,
            external_id="x1",
            payload={"premise": "p", "hypothesis": "h"},
            reference_label="entailment",
            author=users["author-a"],
            status=Item.Status.NEEDS_REVISION,
        ),
        "b-author": Item.objects.create(
            project=rel,
            external_id="q1-7-e",
            payload={"premise": "p", "hypothesis": "h"},
            reference_label="entailment",
            group="fa-auth:q1",
            author=users["b-author"],
            status=Item.Status.NEEDS_REVISION,
        ),
    }
    return {"users": users, "items": items, "client": lambda name: client_for(users[name])}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("author", "relabel", "disqualified_in"), [("author-a", "fa-rules", "fa-rules"), ("b-author", "fa-rel", "fa-auth")]
)
def test_a_disqualified_author_neither_revises_nor_reopens(failed_pairs, client, author, relabel, disqualified_in):
    from annotation.models import Item, ItemRevision

    me = failed_pairs["client"](author)
    item = failed_pairs["items"][author]
    assert me.get(f"/api/projects/{relabel}/revisions/").json()["results"][0]["id"] == item.pk
    sup = failed_pairs["client"]("sup")
    changed = sup.patch(f"/api/projects/{disqualified_in}/members/{author}/", {"status": "disqualified"}, format="json")
    assert changed.status_code == 200, changed.content

    for body in ({"hypothesis": "h2"}, {"withdraw": True}):
        response = me.post(f"/api/items/{item.pk}/revise/", body, format="json")
        assert response.status_code == 403, (body, response.content)
    item.refresh_from_db()
    assert (item.status, item.round, item.payload) == (
        Item.Status.NEEDS_REVISION,
        1,
        {"premise": "p", "hypothesis": "h"},
    )
    assert not ItemRevision.objects.exists()
    assert me.get(f"/api/projects/{relabel}/revisions/").status_code == 403
    client.force_login(failed_pairs["users"][author])
    assert client.get(f"/p/{relabel}/revisions/").status_code == 403

    # Reinstated, they revise as before.
    assert (
        sup.patch(f"/api/projects/{disqualified_in}/members/{author}/", {"status": "active"}, format="json").status_code
        == 200
    )
    assert me.post(f"/api/items/{item.pk}/revise/", {"hypothesis": "h2"}, format="json").status_code == 200
    assert json.loads(me.get(f"/api/projects/{relabel}/revisions/").content)["results"] == []
