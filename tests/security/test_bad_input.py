"""A deterministic corpus of bad input, sent through HTTP into every writable API operation
and every query parameter: NUL characters, lone surrogates, NaN/Infinity, deep nesting,
ids and numbers beyond 64 bits, huge strings and wrong types.

Every probe must end in a refusal the client can act on — 400 naming a field, 404, 409 or
413 — never a 5xx, and must store nothing. tests/api/test_fuzz_schema.py fuzzes the schema
at random; this file is the explicit list of the probes that once gave 500s."""

import json
import re

import pytest

from tests.kinds.qa.test_api import PARAGRAPH, good_value, jsonl, upload

pytestmark = pytest.mark.django_db

REFUSALS = {400, 404, 409, 413}
PLACEHOLDER = "@@bad@@"

# name → the value as JSON text (some cannot come from json.dumps: NaN is not JSON, and a
# lone surrogate is a legal JSON escape but no Python str json.dumps would give back).
BAD_VALUES = {
    "nul": json.dumps("a\x00b"),
    "nul-only": json.dumps("\x00"),
    "lone-surrogate": '"a\\ud800b"',
    "nan": "NaN",
    "infinity": "Infinity",
    "minus-infinity": "-Infinity",
    "float-overflow": "1e400",
    "list-depth-100": "[" * 100 + "]" * 100,
    "list-depth-1000": "[" * 1_000 + "]" * 1_000,
    "list-depth-3000": "[" * 3_000 + "]" * 3_000,
    "object-depth-1000": '{"a":' * 1_000 + "1" + "}" * 1_000,
    "int-2^63": str(2**63),
    "int-2^64": str(2**64),
    "int-minus-2^63-1": str(-(2**63) - 1),
    "int-10^12": str(10**12),
    "int-5000-digits": "9" * 5_000,
    "huge-string": json.dumps("x" * 1_000_000),
    "object": '{"a": 1}',
    "list": "[1]",
    "true": "true",
    "negative": "-1",
    "fraction": "1.5",
}

# Values some fields take as they are: a flag may be true, a seed may be large.
ACCEPTED = {
    ("sample", "seed", "int-10^12"),
    ("validation-submit", "answerable", "true"),
    ("member-add", "trusted", "true"),
    ("member-update", "trusted", "true"),
    ("member-update", "adjudicator", "true"),
    ("intrinsic", "all", "true"),
    ("question-audit-mark", "question_correct", "true"),
    ("question-audit-mark", "span_correct", "true"),
    ("question-audit-draw", "seed", "int-10^12"),
    ("adjudicate", "override", "true"),  # JSON true: the valid body's own value
    ("draft-save", "value", "object"),  # a draft is any JSON object
    ("bias", "smoothing", "int-10^12"),
    ("bias", "smoothing", "fraction"),
    ("splits", "seed", "int-10^12"),
    ("splits", "seed", "negative"),
    ("splits", "shares", "object"),  # {"a": 1}: one split with every item
}


@pytest.fixture
def world(make_user, client_for, nli_project):
    """An nli_relabel project with an item claimed by ann1, and a qa_authoring project in
    which the trial annotator t1 has authored a paragraph's questions and the reviewer has
    graded one (so an annotation, a feedback message and a validation target exist)."""
    from django.contrib.auth import get_user_model

    from annotation.models import AccountInvitation, Membership, Project
    from annotation.services.projects import project_create

    users = {user.username: user for user in get_user_model().objects.all()}
    client = lambda name: client_for(users[name])  # noqa: E731
    # sup owns fa-nli (it may hand it on) and created ann2's account, never used to log in
    # (it may set its password).
    Project.objects.filter(pk=nli_project.pk).update(owner=users["sup"])
    AccountInvitation.objects.create(user=users["ann2"], invited_by=users["sup"])
    nli_rows = [{"id": f"n{i}", "premise": "پیش‌فرض", "hypothesis": "فرضیه", "label": "e"} for i in range(3)]
    imported = client("sup").post(
        "/api/projects/fa-nli/import/", {"file": upload("n.jsonl", jsonl(nli_rows)), "format": "jsonl"}
    )
    assert imported.status_code == 201, imported.content
    assignment = client("ann1").get("/api/projects/fa-nli/next/").json()["assignment"]
    # ann2's own label in another project, which they may change while its round is open
    test = project_create(actor=users["root"], slug="he-test", name="Test", kind="label_test", language="he")
    Membership.objects.create(project=test, user=users["ann2"], role="annotator", status="active")
    Membership.objects.create(project=test, user=users["sup"], role="supervisor", status="active")
    assert (
        client("sup")
        .post("/api/projects/he-test/import/", {"file": upload("t.jsonl", jsonl(nli_rows)), "format": "jsonl"})
        .status_code
        == 201
    )
    labelled = client("ann2").get("/api/projects/he-test/next/").json()["assignment"]
    own = (
        client("ann2")
        .post(f"/api/assignments/{labelled}/submit/", {"value": {"label": "neutral"}}, format="json")
        .json()["id"]
    )

    from annotation.models import Item

    # Gold labels of two classes in the train split, so that a bias analysis can start.
    for item, gold in zip(
        Item.objects.filter(project=nli_project).order_by("pk"), ("entailment", "neutral", "entailment")
    ):
        Item.objects.filter(pk=item.pk).update(split="train", gold_label=gold)

    # One decided item, so that a release can be made.
    Item.objects.create(
        project=nli_project, external_id="released-1", payload={"premise": "پیش‌فرض", "hypothesis": "فرضیهٔ دیگر"},
        status="accepted", gold_label="neutral", position=100,
    )  # fmt: skip

    hesum = project_create(actor=users["root"], slug="hesum", name="HeSum", kind="summary_rating", language="he")
    Membership.objects.create(project=hesum, user=users["sup"], role="supervisor", status="active")
    qa = project_create(actor=users["root"], slug="heq", name="HeQ", kind="qa_authoring", language="he")
    for name, role, status in (("t1", "annotator", "trial"), ("v1", "annotator", "active")):
        users[name] = make_user(name)
        Membership.objects.create(project=qa, user=users[name], role=role, status=status)
    Membership.objects.create(project=qa, user=users["sup"], role="supervisor", status="active")
    Membership.objects.create(project=qa, user=users["rev"], role="reviewer", status="active")
    rows = [{"id": "p1", "context": PARAGRAPH, "title": "ערים", "split": "dev"}]
    assert (
        client("sup")
        .post("/api/projects/heq/import/", {"file": upload("p.jsonl", jsonl(rows)), "format": "jsonl"})
        .status_code
        == 201
    )
    claimed = client("t1").get("/api/projects/heq/next/").json()
    annotation = (
        client("t1")
        .post(f"/api/assignments/{claimed['assignment']}/submit/", {"value": good_value()}, format="json")
        .json()["id"]
    )
    graded = client("rev").post(
        f"/api/annotations/{annotation}/review/", {"grade": "good", "question": 0}, format="json"
    )
    assert graded.status_code == 201, graded.content
    drawn = client("sup").post("/api/projects/heq/question-audit/", {"per_source": 2, "seed": 3}, format="json")
    assert drawn.status_code == 201, drawn.content
    from annotation.models import Feedback, Item, QuestionAudit

    # A translation project with one item the back-translation filter removed.
    mt = project_create(
        actor=users["root"],
        slug="he-mt",
        name="MT",
        kind="translation_rating",
        language="he",
        settings={"released_system": "a"},
    )
    Membership.objects.create(project=mt, user=users["sup"], role="supervisor", status="active")
    mt_row = {
        "id": "m1",
        "source": {"premise": "p", "hypothesis": "h", "label": "e"},
        "candidates": [{"system": "a", "premise": "פ", "hypothesis": "ה"}],
    }
    assert (
        client("sup")
        .post("/api/projects/he-mt/import/", {"file": upload("m.jsonl", jsonl([mt_row])), "format": "jsonl"})
        .status_code
        == 201
    )
    removal = {
        "reason": "low",
        "system": "a",
        "premise": 0.1,
        "hypothesis": 0.9,
        "threshold": 0.75,
        "previous_status": "open",
    }
    Item.objects.filter(project=mt).update(
        status="removed", computed={"back_translation": {"candidates": [], "removed": removal}}
    )

    # A near-duplicate pair of two NLI items, and a third item removed as a near-duplicate.
    from django.utils import timezone

    from annotation.models import DuplicatePair

    n0, n1, n2 = (
        Item.objects.create(
            project=nli_project, external_id=f"d{k}", payload={"premise": "p", "hypothesis": "h"}, status="accepted"
        )
        for k in range(3)
    )
    pair = DuplicatePair.objects.create(
        project=nli_project,
        item_a=n0,
        item_b=n1,
        premise_similarity=1.0,
        hypothesis_similarity=1.0,
        representation="bow",
        threshold=0.8,
        found_at=timezone.now(),
    )
    Item.objects.filter(pk=n2.pk).update(
        status="removed",
        computed={"duplicate": {"removed": {"reason": "near-duplicate", "pair": pair.pk, "previous_status": "open"}}},
    )

    return {
        "question_audit": QuestionAudit.objects.order_by("pk").first().pk,
        "pair": pair.pk,
        "removed_duplicate": n2.pk,
        "mt_item": Item.objects.get(project=mt).pk,
        "client": client,
        "assignment": assignment,
        "annotation": annotation,
        "feedback": Feedback.objects.get().pk,
        "nli_item": Item.objects.filter(project=nli_project).order_by("pk").first().pk,
        "own_annotation": own,
        "accepted_item": Item.objects.get(project=nli_project, external_id="released-1").pk,
        "qa_item": Item.objects.get(project=qa, external_id="p1").pk,
    }


def _operations(world) -> dict[str, tuple[str, str, str, dict]]:
    """name → (caller, method, path, a valid body) for every operation that takes a body."""
    answer = {"start": PARAGRAPH.index("1948"), "text": "1948"}
    return {
        "token": ("anonymous", "post", "/api/auth/token/", {"username": "sup", "password": "pass-word-123"}),
        "user-create": (
            "root",
            "post",
            "/api/users/",
            {"username": "newcomer", "password": "a-long-pass-phrase-9", "email": "n@example.org"},
        ),
        "project-create": (
            "root",
            "post",
            "/api/projects/",
            {
                "slug": "new-project",
                "name": "New",
                "kind": "nli_relabel",
                "language": "fa",
                "settings": {"consensus_n": 5, "consensus_k": 4, "claim_ttl": 600},
                "guidelines": "",
            },
        ),
        "member-add": (
            "sup",
            "post",
            "/api/projects/fa-nli/members/",
            {"username": "t1", "role": "annotator", "status": "active", "trusted": False},
        ),
        "member-update": (
            "sup",
            "patch",
            "/api/projects/fa-nli/members/ann2/",
            {"status": "active", "trusted": False, "role": "annotator", "adjudicator": False},
        ),
        "project-update": (
            "sup",
            "patch",
            "/api/projects/fa-nli/",
            {
                "name": "Renamed",
                "guidelines": "# Guide",
                "settings": {"claim_ttl": 600, "consensus_k": 4},
                "label_guide": {"label": {"neutral": "neither"}},
                "owner": "sup",
            },
        ),
        "password-reset": ("sup", "post", "/api/users/ann2/password/", {"password": "a-new-pass-phrase-9"}),
        "sample": ("sup", "post", "/api/projects/fa-nli/sample/", {"n": 1, "stratum": "split", "seed": 7}),
        "intrinsic": ("sup", "post", "/api/projects/hesum/intrinsic/", {"all": False}),
        # The world's own draw again: the same sample, so the mark below still finds its question.
        "question-audit-draw": ("sup", "post", "/api/projects/heq/question-audit/", {"per_source": 2, "seed": 3}),
        "question-audit-mark": (
            "sup",
            "post",
            f"/api/projects/heq/question-audit/{world['question_audit']}/",
            {"question_correct": True, "span_correct": False},
        ),
        "bias": ("sup", "post", "/api/projects/fa-nli/bias/", {"split": "train", "smoothing": 100}),
        "back-translation-restore": (
            "sup",
            "post",
            "/api/projects/he-mt/back-translation/restore/",
            {"items": [world["mt_item"]]},
        ),
        # before submit, which closes the claim
        "draft-save": ("ann1", "put", f"/api/assignments/{world['assignment']}/draft/", {"value": {}}),
        "duplicates": ("sup", "post", "/api/projects/fa-nli/duplicates/", {"threshold": 0.8, "representation": "bow"}),
        "duplicate-decision": (
            "sup",
            "post",
            f"/api/projects/fa-nli/duplicates/{world['pair']}/",
            {"decision": "remove"},
        ),
        "duplicates-restore": (
            "sup",
            "post",
            "/api/projects/fa-nli/duplicates/restore/",
            {"items": [world["removed_duplicate"]]},
        ),
        "splits": (
            "sup",
            "post",
            "/api/projects/fa-nli/splits/",
            {"shares": {"train": 0.7, "dev": 0.15, "test": 0.15}, "seed": 7, "leak_threshold": 0.9},
        ),
        "leaks": ("sup", "post", "/api/projects/fa-nli/leaks/", {"threshold": 0.9}),
        "release": (
            "sup",
            "post",
            "/api/projects/fa-nli/releases/",
            {"version": "1.0", "license": "cc-by-4.0", "description": "نسخهٔ اول"},
        ),
        "webhook": (
            "sup",
            "post",
            "/api/projects/fa-nli/webhooks/",
            {"url": "https://127.0.0.1/hook", "events": ["item.decided"]},
        ),
        "submit": (
            "ann1",
            "post",
            f"/api/assignments/{world['assignment']}/submit/",
            {"value": {"label": "entailment"}},
        ),
        "annotation-edit": (
            "ann2",
            "patch",
            f"/api/annotations/{world['own_annotation']}/",
            {"value": {"label": "entailment"}},
        ),
        "revise": (
            "ann1",
            "post",
            f"/api/items/{world['nli_item']}/revise/",
            {"premise": "p", "hypothesis": "h", "withdraw": False},
        ),
        "review": (
            "rev",
            "post",
            f"/api/annotations/{world['annotation']}/review/",
            {"grade": "verified", "comment": "ok", "question": 1},
        ),
        "validation-submit": (
            "v1",
            "post",
            "/api/validations/submit/",
            {
                "annotation": world["annotation"],
                "question": 1,
                "answerable": True,
                "answer": answer,
            },
        ),
        # Last: deciding the item ends its round (the submit above claims it); the item is
        # not in the queue, so the supervisor overrides. Then a reopen starts a new round.
        "adjudicate": (
            "sup",
            "post",
            f"/api/items/{world['nli_item']}/adjudicate/",
            {"label": "neutral", "comment": "הוכרע", "override": True},
        ),
        "reopen": ("sup", "post", f"/api/items/{world['nli_item']}/reopen/", {"reason": "בדיקה חוזרת"}),
        "item-text-edit": (
            "sup",
            "post",
            f"/api/items/{world['accepted_item']}/text/",
            {"changes": {"premise": "پیش‌فرضِ درست"}, "reason": "املا"},
        ),
        "answer-correction": (
            "sup",
            "post",
            f"/api/items/{world['qa_item']}/answer-corrections/",
            {
                "annotation": world["annotation"],
                "question": 1,
                "answer": {"start": PARAGRAPH.index("1999"), "text": "1999"},
                "reason": "השנה הנכונה",
            },
        ),
    }


def _fields(body: dict, prefix: str = "") -> list[str]:
    """Dotted paths of every leaf of a body (list entries are left whole)."""
    paths = []
    for key, value in body.items():
        path = f"{prefix}.{key}" if prefix else key
        paths.extend(_fields(value, path) if isinstance(value, dict) and value else [path])
    return paths


# The corpus is fixed (not drawn from the schema at collection time, which would need the
# database): a test below checks that it still names every writable operation of the schema.
FIELDS = {
    "token": ["username", "password"],
    "user-create": ["username", "password", "email"],
    "project-create": [
        "slug",
        "name",
        "kind",
        "language",
        "settings",
        "settings.consensus_n",
        "settings.consensus_k",
        "settings.claim_ttl",
        "guidelines",
    ],
    "member-add": ["username", "role", "status", "trusted"],
    "member-update": ["status", "trusted", "role", "adjudicator"],
    "project-update": [
        "name",
        "guidelines",
        "settings",
        "settings.claim_ttl",
        "settings.consensus_k",
        "label_guide",
        "label_guide.label",
        "label_guide.label.neutral",
        "owner",
    ],
    "password-reset": ["password"],
    "submit": ["value", "value.label"],
    "draft-save": ["value"],
    "annotation-edit": ["value", "value.label"],
    "revise": ["premise", "hypothesis", "withdraw"],
    "review": ["grade", "comment", "question"],
    "validation-submit": ["annotation", "question", "answerable", "answer", "answer.start", "answer.text"],
    "sample": ["n", "stratum", "seed"],
    "intrinsic": ["all"],
    "question-audit-draw": ["per_source", "seed"],
    "question-audit-mark": ["question_correct", "span_correct"],
    "bias": ["split", "smoothing", "evaluation"],
    "back-translation-restore": ["items"],
    "adjudicate": ["label", "comment", "override"],
    "reopen": ["reason"],
    "item-text-edit": ["changes", "changes.premise", "reason"],
    "answer-correction": ["annotation", "question", "answer", "answer.start", "answer.text", "reason"],
    "duplicates": ["threshold", "representation"],
    "duplicate-decision": ["decision"],
    "duplicates-restore": ["items"],
    "splits": ["shares", "shares.train", "shares.dev", "shares.test", "seed", "leak_threshold"],
    "leaks": ["threshold"],
    "release": ["version", "license", "description"],
    "webhook": ["url", "events"],
}

STORED_MODELS = (
    "Project",
    "Membership",
    "Item",
    "Assignment",
    "Annotation",
    "Review",
    "Feedback",
    "QuestionValidation",
    "QuestionAudit",
    "Job",
    "ItemRevision",
    "IdempotencyRecord",
    "Adjudication",
    "Evaluation",
    "DuplicatePair",
    "CurationRun",
    "Decision",
    "AuditEntry",
    "Release",
    "Webhook",
    "WebhookDelivery",
)


def _counts() -> dict[str, int]:
    from django.contrib.auth import get_user_model

    import annotation.models as models

    counts = {name: getattr(models, name).objects.count() for name in STORED_MODELS}
    counts["User"] = get_user_model().objects.count()
    return counts


def _body_with(body: dict, field: str, placeholder: str) -> dict:
    body = json.loads(json.dumps(body))
    *parents, last = field.split(".")
    target = body
    for name in parents:
        target = target[name]
    target[last] = placeholder
    return body


def _send(world, operation: str, text: str, content_type: str = "application/json"):
    from rest_framework.test import APIClient

    caller, method, path, _body = _operations(world)[operation]
    client = APIClient() if caller == "anonymous" else world["client"](caller)
    return getattr(client, method)(path, data=text.encode("utf-8", "surrogatepass"), content_type=content_type)


def test_every_body_operation_succeeds_with_its_valid_body(world):
    """The corpus probes operations that work: each valid body is accepted as it stands."""
    expected = {
        "token": 200,
        "member-update": 200,
        "draft-save": 200,
        "annotation-edit": 200,
        "project-update": 200,
        "password-reset": 204,
        "revise": 404,
        "sample": 200,
        "intrinsic": 202,
        "question-audit-mark": 200,
        "back-translation-restore": 200,
        "bias": 202,
        "duplicates": 202,
        "duplicate-decision": 200,
        "duplicates-restore": 200,
        "splits": 202,
        "leaks": 202,
        "release": 202,
    }
    for operation, (_caller, _method, _path, body) in _operations(world).items():
        response = _send(world, operation, json.dumps(body))
        assert response.status_code == expected.get(operation, 201), (operation, response.content[:300])


def test_the_corpus_covers_every_writable_operation_of_the_schema(world):
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    with_body = {
        (method.upper(), path)
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if "application/json" in operation.get("requestBody", {}).get("content", {})
    }
    covered = {
        (method.upper(), _templated(path, world)) for _caller, method, path, _body in _operations(world).values()
    }
    assert with_body <= covered, with_body - covered
    for operation, (_caller, _method, _path, body) in _operations(world).items():
        assert set(_fields(body)) <= set(FIELDS[operation]), operation


def _templated(path: str, world) -> str:
    for collection, key, name in (
        ("assignments", "assignment", "assignment_id"),
        ("items", "nli_item", "item_id"),
        ("items", "accepted_item", "item_id"),
        ("items", "qa_item", "item_id"),
        ("annotations", "annotation", "annotation_id"),
        ("annotations", "own_annotation", "annotation_id"),
        ("duplicates", "pair", "pair_id"),
        ("question-audit", "question_audit", "audit_id"),
    ):
        path = path.replace(f"/{collection}/{world[key]}/", f"/{collection}/{{{name}}}/")
    path = path.replace("/members/ann2/", "/members/{username}/").replace("/users/ann2/", "/users/{username}/")
    return re.sub(r"^/api/projects/[a-z0-9-]+/", "/api/projects/{slug}/", path)


def refusal_problem(response, before: dict, fields: set[str] = frozenset()) -> str | None:
    """Why the response is not a clean refusal that stored nothing, or None."""
    if response.status_code not in REFUSALS:
        return f"{response.status_code}: {response.content[:200]!r}"
    if response.status_code == 400:
        named = [error["field"] for error in response.json()["errors"] if error["field"]]
        if not named:
            return f"400 naming no field: {response.content[:200]!r}"
        top = {name.split(".")[0].split("[")[0] for name in named}
        if fields and not top & {*fields, "body"}:
            return f"400 naming {named}, not {' or '.join(sorted(fields))}"
    if _counts() != before:
        return "stored something"
    return None


def assert_refused(response, before: dict):
    problem = refusal_problem(response, before)
    assert problem is None, problem


@pytest.mark.parametrize(
    ("operation", "field"), [(operation, field) for operation, fields in FIELDS.items() for field in fields]
)
def test_a_bad_value_in_any_field_is_refused_and_stores_nothing(world, operation, field):
    """Each of BAD_VALUES in turn (one world for all of them: every probe must leave it as
    it was, and the few accepted values are rolled back)."""
    from django.db import transaction

    # The token endpoint does not tell which of username and password was wrong.
    field_named = {"username", "password"} if operation == "token" else {field.split(".")[0]}
    problems = {}
    for value, bad in BAD_VALUES.items():
        body = _body_with(_operations(world)[operation][3], field, PLACEHOLDER)
        text = json.dumps(body).replace(json.dumps(PLACEHOLDER), bad)
        before = _counts()
        with transaction.atomic():
            response = _send(world, operation, text)
            if (operation, field, value) in ACCEPTED and response.status_code < 300:
                transaction.set_rollback(True)
                continue
        problem = refusal_problem(response, before, field_named)
        if problem:
            problems[value] = problem
    assert not problems, problems


WHOLE_BODIES = {
    "nan": "NaN",
    "list-depth-3000": "[" * 3_000 + "]" * 3_000,
    "object-depth-1000": '{"a":' * 1_000 + "1" + "}" * 1_000,
    "list": "[]",
    "string": '"body"',
    "not-json": "{",
    "not-utf-8": "\udcff",
    "int-5000-digits": "9" * 5_000,
}


@pytest.mark.parametrize("operation", list(FIELDS))
def test_a_bad_whole_body_is_refused_naming_the_body(world, operation):
    problems = {}
    for name, text in WHOLE_BODIES.items():
        before = _counts()
        problem = refusal_problem(_send(world, operation, text), before, {"body"})
        if problem:
            problems[name] = problem
    assert not problems, problems


@pytest.mark.parametrize("operation", list(FIELDS))
def test_a_body_over_the_limit_is_413_before_it_is_parsed(world, operation, settings):
    body = _operations(world)[operation][3]
    text = json.dumps({**body, "padding": "x" * settings.MASHOV_MAX_BODY_BYTES})
    before = _counts()
    response = _send(world, operation, text)
    assert response.status_code == 413, response.content[:300]
    assert response.json()["errors"][0]["field"] == "body"
    assert _counts() == before


@pytest.mark.parametrize("field", ["id", "prediction"])
def test_a_bad_value_in_a_predictions_file_is_400_naming_it_and_stores_nothing(world, field):
    """The model-evaluation upload (multipart): each of BAD_VALUES in the first row's `id` or
    `prediction` of a JSONL predictions file is refused, naming the field and row."""
    from annotation.models import Item

    Item.objects.filter(project__slug="fa-nli").update(gold_label="entailment", split="test", status="accepted")
    ids = list(Item.objects.filter(project__slug="fa-nli").values_list("external_id", flat=True))
    problems = {}
    for value, bad in BAD_VALUES.items():
        rows = [json.dumps({"id": key, "prediction": "entailment"}) for key in ids]
        rows[0] = json.dumps({"id": ids[0], "prediction": "entailment", field: PLACEHOLDER}).replace(
            json.dumps(PLACEHOLDER), bad
        )
        before = _counts()
        response = world["client"]("sup").post(
            "/api/projects/fa-nli/evaluations/",
            {"file": upload("p.jsonl", "\n".join(rows)), "name": "m"},
            format="multipart",
        )
        problem = refusal_problem(response, before, {field})
        if problem is None and not any(error.get("row") == 1 for error in response.json()["errors"]):
            problem = f"no error names row 1: {response.content[:200]!r}"
        if problem:
            problems[value] = problem
    assert not problems, problems


@pytest.mark.parametrize("field", ["id", "label", "scores"])
def test_a_bad_value_in_a_prediction_set_is_400_naming_it_and_stores_nothing(world, field):
    """The prediction-set upload (multipart): each of BAD_VALUES in the first row's `id`,
    `label` or `scores` of a JSONL file is refused, naming the field and row."""
    from annotation.models import Item, Prediction, PredictionSet

    ids = list(Item.objects.filter(project__slug="fa-nli").values_list("external_id", flat=True))
    problems = {}
    for value, bad in BAD_VALUES.items():
        rows = [json.dumps({"id": key, "label": "entailment"}) for key in ids]
        rows[0] = json.dumps({"id": ids[0], "label": "entailment", field: PLACEHOLDER}).replace(
            json.dumps(PLACEHOLDER), bad
        )
        before = (_counts(), PredictionSet.objects.count(), Prediction.objects.count())
        response = world["client"]("sup").post(
            "/api/projects/fa-nli/predictions/",
            {"file": upload("p.jsonl", "\n".join(rows)), "name": "m"},
            format="multipart",
        )
        problem = refusal_problem(response, before[0], {field})
        if problem is None and before[1:] != (PredictionSet.objects.count(), Prediction.objects.count()):
            problem = "stored a prediction set"
        if problem is None and not any(error.get("row") == 1 for error in response.json()["errors"]):
            problem = f"no error names row 1: {response.content[:200]!r}"
        if problem:
            problems[value] = problem
    assert not problems, problems


@pytest.mark.parametrize("value", ["a\x00b", "x" * 5_000, "\u202efile", "file ", "[]", "1"])
def test_a_bad_hard_flags_choice_in_an_evaluation_upload_is_400_naming_it(world, value):
    from annotation.models import Item

    Item.objects.filter(project__slug="fa-nli").update(gold_label="entailment", split="test", status="accepted")
    ids = list(Item.objects.filter(project__slug="fa-nli").values_list("external_id", flat=True))
    rows = "\n".join(json.dumps({"id": key, "prediction": "entailment"}) for key in ids)
    before = _counts()
    response = world["client"]("sup").post(
        "/api/projects/fa-nli/evaluations/",
        {"file": upload("p.jsonl", rows), "name": "m", "hard_flags": value},
        format="multipart",
    )
    assert refusal_problem(response, before, {"hard_flags"}) is None, response.content[:300]


BIG_IDS = [str(2**63), str(2**64), "9" * 40]


@pytest.mark.parametrize("big", BIG_IDS)
@pytest.mark.parametrize(
    ("caller", "method", "path"),
    [
        ("ann1", "post", "/api/assignments/{}/submit/"),
        ("ann1", "post", "/api/assignments/{}/skip/"),
        ("ann1", "get", "/api/assignments/{}/draft/"),
        ("ann2", "patch", "/api/annotations/{}/"),
        ("ann1", "post", "/api/items/{}/revise/"),
        ("rev", "post", "/api/annotations/{}/review/"),
        ("sup", "get", "/api/jobs/{}/"),
        ("sup", "post", "/api/items/{}/adjudicate/"),
        ("sup", "get", "/api/items/{}/decisions/"),
        ("sup", "post", "/api/items/{}/reopen/"),
        ("sup", "post", "/api/items/{}/text/"),
        ("sup", "get", "/api/items/{}/revisions/"),
        ("sup", "post", "/api/items/{}/answer-corrections/"),
        ("sup", "get", "/api/projects/fa-nli/evaluations/{}/"),
        ("t1", "post", "/api/me/feedback/{}/read/"),
        ("t1", "post", "/feedback/{}/read/"),
    ],
)
def test_an_id_beyond_64_bits_in_a_path_is_404(world, caller, method, path, big):
    before = _counts()
    response = getattr(world["client"](caller), method)(path.format(big), {}, format="json")
    assert response.status_code == 404, response.content[:300]
    assert _counts() == before


QUERY_PARAMETERS = [
    ("sup", "/api/projects/fa-nli/items/", ["status", "split", "group", "page", "page_size"]),
    ("sup", "/api/projects/fa-nli/export/?format=jsonl", ["format", "status", "split"]),
    ("sup", "/api/projects/fa-nli/export/phrasis/", ["file", "status", "split"]),
    ("sup", "/api/projects/heq/questions/export/?format=squad", ["format", "split", "include_rejected"]),
    ("sup", "/api/projects/fa-nli/ratings-export/?format=csv", ["format", "status", "split", "exclude_flagged"]),
    ("t1", "/api/me/feedback/", ["unread", "page"]),
    ("rev", "/api/projects/heq/reviews/pending/", ["page", "page_size"]),
    ("sup", "/api/projects/fa-nli/adjudication/", ["page", "page_size"]),
    ("sup", "/p/fa-nli/adjudication/", ["page"]),
    ("sup", "/api/projects/", ["page", "search"]),
    ("sup", "/api/projects/fa-nli/evaluations/compare/", ["a", "b"]),
    ("sup", "/api/projects/fa-nli/evaluations/1/", ["slice"]),
    ("sup", "/p/fa-nli/dashboard/", ["tab"]),
    ("sup", "/p/fa-nli/", ["next"]),
    ("sup", "/api/projects/fa-nli/preview/", ["after"]),
    ("sup", "/console/p/fa-nli/items/", ["status", "split", "round", "group", "flag", "annotator", "q", "page"]),
]


@pytest.mark.parametrize(("caller", "url", "parameters"), QUERY_PARAMETERS)
def test_a_nul_in_a_query_parameter_is_400_naming_it_before_any_response_starts(world, caller, url, parameters):
    client = world["client"](caller)
    separator = "&" if "?" in url else "?"
    for parameter in parameters:
        for text in ("a%00b", "%00"):
            response = client.get(f"{url}{separator}{parameter}={text}")
            assert not response.streaming, "the refusal must come before a streamed export starts"
            assert response.status_code == 400, (parameter, response.status_code, response.content[:300])
            assert response.json()["errors"][0]["field"] == parameter


def test_a_nul_in_a_query_parameter_name_is_400(world):
    response = world["client"]("sup").get("/api/projects/fa-nli/items/?a%00b=1")
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "<parameter name>"


def test_a_nul_in_a_path_segment_is_404(world):
    response = world["client"]("sup").patch("/api/projects/fa-nli/members/a%00b/", {"status": "active"}, format="json")
    assert response.status_code == 404, response.content[:300]


@pytest.mark.parametrize(
    ("settings_value", "field"),
    [
        ({"claim_ttl": 10**12}, "settings.claim_ttl"),
        ({"claim_ttl": 8 * 24 * 3600}, "settings.claim_ttl"),
        ({"claim_ttl": 2**63}, "settings.claim_ttl"),
        ({"revision_rounds": 2**64}, "settings.revision_rounds"),
        ({"quality_flag_below": 1e308}, "settings.quality_flag_below"),
        ({"quality_flag_below": -1.5}, "settings.quality_flag_below"),
    ],
)
def test_project_settings_out_of_bounds_are_400_naming_the_setting(world, settings_value, field):
    before = _counts()
    body = {"slug": "bounded", "name": "B", "kind": "nli_relabel", "language": "fa", "settings": settings_value}
    response = world["client"]("root").post("/api/projects/", body, format="json")
    assert_refused(response, before)
    assert response.json()["errors"][0]["field"] == field


@pytest.mark.parametrize(("name", "value"), [("probe_seed", 2**64), ("probe_rate", 1e308)])
def test_phrase_settings_out_of_bounds_are_400(world, name, value):
    before = _counts()
    body = {"slug": "bounded", "name": "B", "kind": "phrase_pair", "language": "he", "settings": {name: value}}
    response = world["client"]("root").post("/api/projects/", body, format="json")
    assert_refused(response, before)
    assert response.json()["errors"][0]["field"] == f"settings.{name}"


@pytest.mark.parametrize(
    ("kind", "settings_value", "field"),
    [
        ("nli_relabel", {"aggregation": "em"}, "settings.aggregation"),
        ("nli_relabel", {"aggregation": ["mace"]}, "settings.aggregation"),
        ("label_test", {"aggregation": "DAWID_SKENE"}, "settings.aggregation"),
        ("phrase_pair", {"aggregation": None}, "settings.aggregation"),
        ("nli_relabel", {"overlap_min": 0, "overlap_max": 3}, "settings.overlap_min"),
        ("nli_relabel", {"overlap_min": 3}, "settings.overlap_max"),
        ("nli_relabel", {"overlap_max": 3}, "settings.overlap_min"),
        ("label_test", {"overlap_min": 4, "overlap_max": 3}, "settings.overlap_max"),
        ("phrase_pair", {"overlap_min": 2, "overlap_max": 51}, "settings.overlap_max"),
        ("phrase_pair", {"overlap_min": "2", "overlap_max": 4}, "settings.overlap_min"),
        ("phrase_pair", {"overlap_min": 2.5, "overlap_max": 4}, "settings.overlap_min"),
        ("nli_relabel", {"overlap_min": True, "overlap_max": 4}, "settings.overlap_min"),
        ("nli_relabel", {"overlap_min": 2, "overlap_max": 4, "confidence_target": 1.5}, "settings.confidence_target"),
        ("label_test", {"confidence_target": "high"}, "settings.confidence_target"),
        ("label_test", {"overlap_min": 2, "overlap_max": 2**64}, "settings.overlap_max"),
        ("translation_rating", {"overlap_min": 2, "overlap_max": 3, "spread": -1}, "settings.spread"),
        ("summary_rating", {"spread": "1"}, "settings.spread"),
        ("summary_rating", {"aggregation": "mace"}, "settings.aggregation"),
        ("qa_authoring", {"overlap_min": 2}, "settings.overlap_min"),
        ("nli_relabel", {"order": "smart"}, "settings.order"),
        ("label_test", {"order": 1}, "settings.order"),
        ("phrase_pair", {"order": None}, "settings.order"),
        ("phrase_pair", {"retrain_every": -1}, "settings.retrain_every"),
        ("nli_relabel", {"retrain_every": 2**64}, "settings.retrain_every"),
        ("label_test", {"retrain_every": 1.5}, "settings.retrain_every"),
        ("summary_rating", {"order": "random"}, "settings.order"),
        ("summary_rating", {"min_reference_words": -1}, "settings.min_reference_words"),
        ("summary_rating", {"min_reference_words": 2**64}, "settings.min_reference_words"),
        ("summary_rating", {"hold_out_other_language": "no"}, "settings.hold_out_other_language"),
        ("qa_authoring", {"retrain_every": 10}, "settings.retrain_every"),
        ("phrase_pair", {"suggestions": "true"}, "settings.suggestions"),
        ("phrase_pair", {"suggestions": None}, "settings.suggestions"),
        ("nli_relabel", {"aggregation": "majority", "suggestions": 1}, "settings.suggestions"),
        # Blind by protocol: FarsTail's relabel rounds (k of n), LCHAIM's human baseline.
        ("nli_relabel", {"suggestions": True}, "settings.suggestions"),
        ("label_test", {"aggregation": "majority", "suggestions": True}, "settings.suggestions"),
        ("summary_rating", {"suggestions": True}, "settings.suggestions"),
        ("qa_authoring", {"suggestions": False}, "settings.suggestions"),
    ],
)
def test_aggregation_and_overlap_settings_are_400_naming_the_setting(world, kind, settings_value, field):
    before = _counts()
    body = {"slug": "aggregating", "name": "A", "kind": kind, "language": "he", "settings": settings_value}
    response = world["client"]("root").post("/api/projects/", body, format="json")
    assert_refused(response, before)
    assert response.json()["errors"][0]["field"] == field


@pytest.mark.parametrize(
    ("kind", "settings_value"),
    [
        ("nli_relabel", {"aggregation": "dawid_skene", "overlap_min": 3, "overlap_max": 6, "confidence_target": 0.9}),
        ("label_test", {"aggregation": "majority", "overlap_min": 2, "overlap_max": 4, "confidence_target": 1}),
        ("phrase_pair", {"aggregation": "mace", "overlap_min": None, "overlap_max": None}),
        ("phrase_pair", {"suggestions": True}),
        ("nli_relabel", {"aggregation": "dawid_skene", "suggestions": True}),
        ("summary_rating", {"overlap_min": 2, "overlap_max": 4, "spread": 1}),
    ],
)
def test_aggregation_and_overlap_settings_are_stored(world, kind, settings_value):
    body = {"slug": "aggregating", "name": "A", "kind": kind, "language": "he", "settings": settings_value}
    response = world["client"]("root").post("/api/projects/", body, format="json")
    assert response.status_code == 201, response.content
    from annotation.models import Project

    stored = Project.objects.get(slug="aggregating").settings
    assert {key: stored[key] for key in settings_value} == settings_value


def test_a_week_long_claim_is_accepted_and_next_still_works(world):
    body = {
        "slug": "week",
        "name": "W",
        "kind": "nli_relabel",
        "language": "fa",
        "settings": {"claim_ttl": 7 * 24 * 3600},
    }
    assert world["client"]("root").post("/api/projects/", body, format="json").status_code == 201


# --- non-finite numbers reaching the database through an import ------------------------------


@pytest.fixture
def phrase_project(world):
    from django.contrib.auth import get_user_model

    created = world["client"]("root").post(
        "/api/projects/", {"slug": "pairs", "name": "Pairs", "kind": "phrase_pair", "language": "en"}, format="json"
    )
    assert created.status_code == 201, created.content
    from annotation.models import Membership, Project

    Membership.objects.create(
        project=Project.objects.get(slug="pairs"),
        user=get_user_model().objects.get(username="sup"),
        role="supervisor",
        status="active",
    )
    return world["client"]("sup")


def _import(client, name: str, text: str, fmt: str):
    return client.post("/api/projects/pairs/import/", {"file": upload(name, text), "format": fmt}, format="multipart")


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ('{"id": "a", "left": "l", "right": "r", "score": NaN}', "score"),
        ('{"id": "a", "left": "l", "right": "r", "score": 1e400}', "score"),
        ('{"id": "a", "left": "l", "right": "r", "score": "nan"}', "score"),
        ('{"id": "a", "left": "l", "right": "r", "score": "-inf"}', "score"),
        ('{"id": "a", "left": "l", "right": "r", "extra": {"weight": Infinity}}', "extra"),
    ],
)
def test_a_non_finite_score_or_extra_value_in_a_jsonl_import_is_400_naming_it(phrase_project, line, field):
    before = _counts()
    response = _import(
        phrase_project, "pairs.jsonl", f'{{"id": "ok", "left": "l", "right": "r", "score": 4}}\n{line}\n', "jsonl"
    )
    assert_refused(response, before)
    [error] = response.json()["errors"]
    assert error["row"] == 2 and error["field"].split(".")[0] == field, error


@pytest.mark.parametrize("score", ["nan", "NaN", "inf", "-Infinity", "1e999"])
def test_a_non_finite_score_in_csv_or_phrasis_is_400_naming_the_row(phrase_project, score):
    before = _counts()
    response = _import(phrase_project, "pairs.csv", f"id,left,right,score\nok,l,r,4\nbad,l,r,{score}\n", "csv")
    assert_refused(response, before)
    assert [(e["row"], e["field"]) for e in response.json()["errors"]] == [(2, "score")]
    phrasis = f"4\tEQUI\tl\tr\t1\t1\t1\n{score}\tEQUI\tl\tr\t1\t1\t2\n"
    response = _import(phrase_project, "PhrasIS.train.images.positives.txt", phrasis, "phrasis")
    assert response.status_code == 400 and _counts() == before
    # A PhrasIS line's errors name the row and column (its cells have no field names).
    [error] = response.json()["errors"]
    assert error["row"] == 2 and "column 1 (similarity score)" in error["message"], error


# --- bodies too large, refused unread --------------------------------------------------------


class UnreadableStream:
    """A request body that fails the test if anything reads it."""

    def read(self, *args):
        raise AssertionError("the body was read")

    readline = read


def test_a_large_content_length_is_413_before_the_body_is_read(rf, settings):
    """100 MiB announced to the anonymous token endpoint: refused on the header alone."""
    from annotation.middleware import RequestLimitsMiddleware

    request = rf.post("/api/auth/token/", data=b"{}", content_type="application/json")
    request.META["CONTENT_LENGTH"] = str(100 * 1024 * 1024)
    request.META["wsgi.input"] = request._stream = UnreadableStream()
    response = RequestLimitsMiddleware(lambda request: pytest.fail("the view ran"))(request)
    assert response.status_code == 413
    assert json.loads(response.content)["errors"] == [
        {"field": "body", "message": f"the body is larger than {settings.MASHOV_MAX_BODY_BYTES} bytes"}
    ]


def test_an_import_upload_may_be_larger_than_a_json_body(world, settings):
    settings.MASHOV_MAX_BODY_BYTES = 1024
    rows = [{"id": f"big{i}", "premise": "پیش‌فرض " * 20, "hypothesis": "فرضیه"} for i in range(40)]
    text = jsonl(rows)
    assert len(text.encode()) > 4 * 1024
    response = world["client"]("sup").post(
        "/api/projects/fa-nli/import/", {"file": upload("big.jsonl", text), "format": "jsonl"}
    )
    assert response.status_code == 201, response.content
    settings.MASHOV_MAX_IMPORT_BYTES = 1024
    before = _counts()
    response = world["client"]("sup").post(
        "/api/projects/fa-nli/import/", {"file": upload("big2.jsonl", text), "format": "jsonl"}
    )
    assert response.status_code == 413 and response.json()["errors"][0]["field"] == "body"
    assert _counts() == before


def test_a_json_body_without_content_length_is_read_only_up_to_the_limit(settings):
    """Under a server that hands over a body of unknown length, the parser reads one byte
    past the limit and stops."""
    import io

    from annotation.errors import PayloadTooLarge
    from annotation.rest.parsers import StrictJSONParser

    settings.MASHOV_MAX_BODY_BYTES = 1000
    stream = io.BytesIO(b'{"a": "' + b"x" * 10_000 + b'"}')
    with pytest.raises(PayloadTooLarge):
        StrictJSONParser().parse(stream)
    assert stream.tell() == 1001
    assert StrictJSONParser().parse(io.BytesIO(b'{"a": "' + b"x" * 900 + b'"}')) == {"a": "x" * 900}


def test_multipart_fields_beside_the_files_are_held_to_the_body_limit(world, settings):
    settings.MASHOV_MAX_BODY_BYTES = settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024
    before = _counts()
    response = world["client"]("sup").post(
        "/api/projects/fa-nli/import/", {"file": upload("n.jsonl", "{}\n"), "format": "jsonl", "padding": "x" * 2048}
    )
    assert response.status_code == 413, response.content[:300]
    assert response.json()["errors"][0]["field"] == "body"
    assert _counts() == before
