"""Role × endpoint permission matrix through the HTTP contract (docs/api.md; docs/security.md "Scoping").

Callers:
- anonymous     no credentials                                   → 401 everywhere but login/schema
- outsider      an authenticated user with no membership         → 404 for anything project-scoped
- annotator     active annotator of the project
- reviewer      reviewer of the project
- supervisor    supervisor of the project
- admin         a staff user who is *not* a member of the project
- disqualified  an annotator whose membership was set to disqualified
"""

import io

import pytest

SLUG = "fa-nli"
PASSWORD = "pass-word-123"

CALLERS = ("anonymous", "outsider", "annotator", "reviewer", "supervisor", "admin", "disqualified")

# endpoint           anonymous outsider annotator reviewer supervisor admin disqualified
MATRIX = {
    "token": (400, 200, 200, 200, 200, 200, 200),  # anonymous: no credentials
    "users_create": (401, 403, 403, 403, 201, 201, 403),
    "projects_list": (401, 200, 200, 200, 200, 200, 200),
    "projects_create": (401, 403, 403, 403, 201, 201, 403),
    "project_detail": (401, 404, 200, 200, 200, 200, 200),
    "members_list": (401, 404, 403, 200, 200, 200, 403),
    "members_add": (401, 404, 403, 403, 201, 201, 403),
    "member_patch": (401, 404, 403, 403, 200, 200, 403),
    "import": (401, 404, 403, 403, 201, 201, 403),
    "items": (401, 404, 403, 200, 200, 200, 403),
    "next": (401, 404, 200, 403, 403, 403, 403),
    "progress": (401, 404, 200, 403, 403, 403, 403),
    "submit": (401, 404, 201, 404, 404, 404, 403),  # annotator/disqualified: own claim; others: ann1's claim
    "job": (401, 404, 404, 404, 200, 200, 404),  # a job the supervisor started
    "schema": (200, 200, 200, 200, 200, 200, 200),  # public (SERVE_PERMISSIONS)
}

CASES = [(endpoint, caller, MATRIX[endpoint][index]) for endpoint in MATRIX for index, caller in enumerate(CALLERS)]

JSONL = (
    '{"id": "a", "premise": "הספר מונח על השולחן.", "hypothesis": "יש ספר.", "label": "entailment", "group": "g1"}\n'
    '{"id": "b", "premise": "کتاب روی میز است.", "hypothesis": "کتابی نیست.", "group": "g2"}\n'
    '{"id": "c", "premise": "הילד רץ.", "hypothesis": "הילד זז.", "group": "g3"}\n'
)


def upload(name: str, text: str):
    handle = io.BytesIO(text.encode("utf-8"))
    handle.name = name
    return handle


def assert_error_body(response):
    body = response.json()
    assert set(body) == {"errors"}, body
    assert isinstance(body["errors"], list) and body["errors"], body
    for error in body["errors"]:
        assert {"field", "message"} <= set(error) <= {"field", "message", "row"}, error
        assert isinstance(error["message"], str) and error["message"]
    return body


@pytest.fixture
def world(nli_project, make_user, client_for, django_user_model):
    """The nli_project plus an outsider, a non-member staff user, a disqualified annotator,
    three items, an open claim of ann1 and of the disqualified annotator, and a job of sup."""
    from rest_framework.test import APIClient

    from annotation.models import Job, Membership
    from annotation.services.assignments import assignment_next_for_annotator
    from annotation.services.imports import items_import

    users = {name: django_user_model.objects.get(username=name) for name in ("sup", "rev", "ann1", "ann2")}
    users["eve"] = make_user("eve")
    users["staffer"] = make_user("staffer", staff=True)
    users["dq"] = make_user("dq")
    make_user("newbie")
    dq_membership = Membership.objects.create(project=nli_project, user=users["dq"], role="annotator", status="active")
    items_import(project=nli_project, data=JSONL.encode(), fmt="jsonl", filename="x.jsonl")
    claim_ann1 = assignment_next_for_annotator(user=users["ann1"], slug=SLUG)
    claim_dq = assignment_next_for_annotator(user=users["dq"], slug=SLUG)
    dq_membership.status = "disqualified"
    dq_membership.save()
    job = Job.objects.create(kind="import", project=nli_project, created_by=users["sup"], params={})

    who = {
        "outsider": "eve",
        "annotator": "ann1",
        "reviewer": "rev",
        "supervisor": "sup",
        "admin": "staffer",
        "disqualified": "dq",
    }
    clients = {caller: client_for(users[name]) for caller, name in who.items()}
    clients["anonymous"] = APIClient()
    return {
        "project": nli_project,
        "users": users,
        "who": who,
        "clients": clients,
        "claims": {"ann1": claim_ann1.pk, "dq": claim_dq.pk},
        "job": job.pk,
    }


def call(endpoint: str, caller: str, world):
    client = world["clients"][caller]
    username = world["who"].get(caller)
    if endpoint == "token":
        body = {"username": username, "password": PASSWORD} if username else {}
        return client.post("/api/auth/token/", body, format="json")
    if endpoint == "users_create":
        return client.post(
            "/api/users/", {"username": f"new-{caller}", "password": "a-Long-pass-phrase-42"}, format="json"
        )
    if endpoint == "projects_list":
        return client.get("/api/projects/")
    if endpoint == "projects_create":
        return client.post(
            "/api/projects/",
            {"slug": f"p-{caller}", "name": "Hebrew NLI", "kind": "nli_relabel", "language": "he"},
            format="json",
        )
    if endpoint == "project_detail":
        return client.get(f"/api/projects/{SLUG}/")
    if endpoint == "members_list":
        return client.get(f"/api/projects/{SLUG}/members/")
    if endpoint == "members_add":
        return client.post(f"/api/projects/{SLUG}/members/", {"username": "newbie", "role": "annotator"}, format="json")
    if endpoint == "member_patch":
        return client.patch(f"/api/projects/{SLUG}/members/ann2/", {"trusted": True}, format="json")
    if endpoint == "import":
        line = '{"id": "new", "premise": "פרמיסה", "hypothesis": "השערה"}\n'
        return client.post(f"/api/projects/{SLUG}/import/", {"file": upload("n.jsonl", line), "format": "jsonl"})
    if endpoint == "items":
        return client.get(f"/api/projects/{SLUG}/items/")
    if endpoint == "next":
        return client.get(f"/api/projects/{SLUG}/next/")
    if endpoint == "progress":
        return client.get(f"/api/projects/{SLUG}/progress/")
    if endpoint == "submit":
        claim = world["claims"]["dq"] if caller == "disqualified" else world["claims"]["ann1"]
        return client.post(f"/api/assignments/{claim}/submit/", {"value": {"label": "neutral"}}, format="json")
    if endpoint == "job":
        return client.get(f"/api/jobs/{world['job']}/")
    if endpoint == "schema":
        return client.get("/api/schema/?format=json")
    raise AssertionError(endpoint)


@pytest.mark.django_db
@pytest.mark.parametrize(("endpoint", "caller", "expected"), CASES, ids=[f"{e}-{c}" for e, c, _ in CASES])
def test_permission_matrix(world, endpoint, caller, expected):
    response = call(endpoint, caller, world)
    assert response.status_code == expected, (endpoint, caller, response.status_code, response.content[:500])
    if expected >= 400:
        assert_error_body(response)


def test_matrix_covers_every_foundation_route():
    """Every route of the foundation has a row in the matrix, and still exists."""
    from django.urls import reverse

    routes = {
        "api-token": ((), "token"),
        "api-users": ((), "users_create"),
        "api-projects": ((), "projects_list"),
        "api-project": ((SLUG,), "project_detail"),
        "api-members": ((SLUG,), "members_list"),
        "api-member": ((SLUG, "ann1"), "member_patch"),
        "api-import": ((SLUG,), "import"),
        "api-items": ((SLUG,), "items"),
        "api-next": ((SLUG,), "next"),
        "api-progress": ((SLUG,), "progress"),
        "api-submit": ((1,), "submit"),
        "api-job": ((1,), "job"),
        "schema": ((), "schema"),
    }
    for name, (args, row) in routes.items():
        assert reverse(name, args=args).startswith("/api/")
        assert row in MATRIX
    assert set(MATRIX) == {row for _, row in routes.values()} | {"projects_create", "members_add"}


@pytest.mark.django_db
def test_disqualified_submit_stores_nothing(world):
    from annotation.models import Annotation

    response = call("submit", "disqualified", world)
    assert response.status_code == 403
    assert Annotation.objects.count() == 0


@pytest.mark.django_db
def test_someone_elses_assignment_is_indistinguishable_from_a_missing_one(world, client_for):
    from annotation.models import Annotation, Assignment

    ann2 = client_for(world["users"]["ann2"])
    missing_id = Assignment.objects.order_by("-pk").first().pk + 1000
    theirs = ann2.post(
        f"/api/assignments/{world['claims']['ann1']}/submit/", {"value": {"label": "neutral"}}, format="json"
    )
    missing = ann2.post(f"/api/assignments/{missing_id}/submit/", {"value": {"label": "neutral"}}, format="json")
    assert theirs.status_code == missing.status_code == 404
    assert theirs.json() == missing.json()
    assert theirs.content == missing.content
    assert Annotation.objects.count() == 0
    assert Assignment.objects.get(pk=world["claims"]["ann1"]).status == "claimed"


@pytest.mark.django_db
@pytest.mark.parametrize("caller", ["annotator", "reviewer", "outsider"])
def test_someone_elses_job_is_indistinguishable_from_a_missing_one(world, caller):
    client = world["clients"][caller]
    theirs = client.get(f"/api/jobs/{world['job']}/")
    missing = client.get(f"/api/jobs/{world['job'] + 1000}/")
    assert theirs.status_code == missing.status_code == 404
    assert theirs.content == missing.content


@pytest.mark.django_db
def test_job_visible_to_its_creator_without_the_supervisor_role(world, nli_project):
    from annotation.models import Job

    job = Job.objects.create(kind="import", project=nli_project, created_by=world["users"]["ann1"], params={})
    response = world["clients"]["annotator"].get(f"/api/jobs/{job.pk}/")
    assert response.status_code == 200
    assert response.json()["status"] == "queued"
    assert world["clients"]["reviewer"].get(f"/api/jobs/{job.pk}/").status_code == 404


PROJECT_SCOPED = [
    ("get", "/api/projects/{slug}/", None),
    ("get", "/api/projects/{slug}/members/", None),
    ("post", "/api/projects/{slug}/members/", {"username": "newbie", "role": "annotator"}),
    ("patch", "/api/projects/{slug}/members/ann2/", {"trusted": True}),
    ("get", "/api/projects/{slug}/items/", None),
    ("get", "/api/projects/{slug}/items/?status=open", None),
    ("get", "/api/projects/{slug}/next/", None),
    ("get", "/api/projects/{slug}/progress/", None),
    ("post", "/api/projects/{slug}/import/", "file"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("method", "path", "body"), PROJECT_SCOPED, ids=[f"{m}-{p}" for m, p, _ in PROJECT_SCOPED])
def test_non_member_sees_no_trace_of_a_project(world, method, path, body):
    """For an outsider the real project answers exactly like a slug that does not exist."""
    from annotation.models import Item, Membership

    client = world["clients"]["outsider"]
    items_before, members_before = Item.objects.count(), Membership.objects.count()

    def send(slug):
        url = path.format(slug=slug)
        if body == "file":
            line = '{"id": "zz", "premise": "p", "hypothesis": "h"}\n'
            return client.post(url, {"file": upload("z.jsonl", line), "format": "jsonl"})
        if body is None:
            return getattr(client, method)(url)
        return getattr(client, method)(url, body, format="json")

    real, missing = send(SLUG), send("no-such-project")
    assert real.status_code == missing.status_code == 404
    assert real.content == missing.content
    assert Item.objects.count() == items_before
    assert Membership.objects.count() == members_before


@pytest.mark.django_db
def test_non_member_does_not_find_the_project_in_the_list(world):
    listed = world["clients"]["outsider"].get("/api/projects/")
    assert listed.status_code == 200
    assert SLUG not in listed.content.decode()
    assert listed.json()["count"] == 0
    member_list = world["clients"]["annotator"].get("/api/projects/").json()
    assert [project["slug"] for project in member_list["results"]] == [SLUG]
    admin_list = world["clients"]["admin"].get("/api/projects/").json()
    assert SLUG in [project["slug"] for project in admin_list["results"]]


@pytest.mark.django_db
def test_projects_list_is_scoped_by_membership(world, make_user, client_for):
    """Two projects: each member lists only their own."""
    from annotation.services.projects import project_create

    other_sup = make_user("other-sup")
    staff = world["users"]["staffer"]
    other = project_create(actor=staff, slug="he-other", name="Other", kind="nli_relabel", language="he")
    from annotation.models import Membership

    Membership.objects.create(project=other, user=other_sup, role="supervisor", status="active")
    mine = client_for(other_sup).get("/api/projects/").json()
    assert [project["slug"] for project in mine["results"]] == ["he-other"]
    # and the other project's supervisor is an outsider for fa-nli
    assert client_for(other_sup).get(f"/api/projects/{SLUG}/").status_code == 404
    assert client_for(other_sup).get(f"/api/projects/{SLUG}/items/").status_code == 404


@pytest.mark.django_db
def test_supervisor_of_one_project_cannot_manage_another(world, make_user, client_for):
    from annotation.models import Membership
    from annotation.services.projects import project_create

    other_sup = make_user("other-sup")
    other = project_create(
        actor=world["users"]["staffer"], slug="he-other", name="Other", kind="nli_relabel", language="he"
    )
    Membership.objects.create(project=other, user=other_sup, role="supervisor", status="active")
    client = client_for(other_sup)
    add = client.post(f"/api/projects/{SLUG}/members/", {"username": "other-sup", "role": "supervisor"}, format="json")
    assert add.status_code == 404
    assert not Membership.objects.filter(project=world["project"], user=other_sup).exists()
    patch = client.patch(f"/api/projects/{SLUG}/members/ann1/", {"status": "disqualified"}, format="json")
    assert patch.status_code == 404
    assert Membership.objects.get(project=world["project"], user__username="ann1").status == "active"


@pytest.mark.django_db
def test_reviewer_cannot_promote_themselves(world):
    from annotation.models import Membership

    response = world["clients"]["reviewer"].patch(
        f"/api/projects/{SLUG}/members/rev/", {"role": "supervisor"}, format="json"
    )
    assert response.status_code == 403
    assert Membership.objects.get(project=world["project"], user__username="rev").role == "reviewer"


@pytest.mark.django_db
def test_bad_token_is_401(api_client):
    api_client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    response = api_client.get("/api/projects/")
    assert response.status_code == 401
    assert_error_body(response)
