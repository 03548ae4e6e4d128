"""PATCH /api/projects/{slug}/ through the HTTP contract (docs/api.md "Annotator comfort and the
supervisor console"): name, guidelines, settings and label guide; settings that running
rounds depend on are refused with a 400 naming the setting while items have annotations
in an open round, and nothing is stored; someone else's project is a 404, an annotator's
or a reviewer's call a 403."""

import pytest

from tests.kinds.qa.test_api import jsonl, upload

pytestmark = pytest.mark.django_db


def _users():
    from django.contrib.auth import get_user_model

    return {u.username: u for u in get_user_model().objects.all()}


def _import_nli(client, slug="fa-nli", n=3):
    rows = [{"id": f"n{i}", "premise": "پیش‌فرض", "hypothesis": "فرضیه", "label": "e"} for i in range(n)]
    response = client.post(f"/api/projects/{slug}/import/", {"file": upload("n.jsonl", jsonl(rows)), "format": "jsonl"})
    assert response.status_code == 201, response.content


def _stored(slug="fa-nli"):
    from annotation.models import Project

    project = Project.objects.get(slug=slug)
    return project.name, project.guidelines, project.settings, project.label_guide


def test_supervisor_changes_name_guidelines_settings_and_label_guide(nli_project, client_for):
    sup = client_for(_users()["sup"])
    body = {
        "name": "NLI فارسی",
        "guidelines": "# راهنما\n\n**بخوانید**",
        "settings": {"claim_ttl": 900},
        "label_guide": {"label": {"neutral": "نه درست نه نادرست"}},
    }
    response = sup.patch("/api/projects/fa-nli/", body, format="json")
    assert response.status_code == 200, response.content
    data = response.json()
    assert data["name"] == "NLI فارسی" and data["guidelines"] == body["guidelines"]
    assert data["settings"]["claim_ttl"] == 900 and data["settings"]["consensus_k"] == 4
    assert data["label_guide"] == {"label": {"neutral": "نه درست نه نادرست"}}
    assert _stored()[2]["claim_ttl"] == 900


def test_round_bound_settings_change_freely_before_any_annotation(nli_project, client_for):
    sup = client_for(_users()["sup"])
    _import_nli(sup)
    response = sup.patch("/api/projects/fa-nli/", {"settings": {"consensus_k": 3, "consensus_n": 4}}, format="json")
    assert response.status_code == 200, response.content
    assert (_stored()[2]["consensus_k"], _stored()[2]["consensus_n"]) == (3, 4)


@pytest.mark.parametrize(
    ("kind", "change"),
    [
        ("nli_relabel", {"consensus_k": 5}),
        ("nli_relabel", {"consensus_n": 6}),
        ("translation_rating", {"raters_per_item": 3}),
        ("summary_rating", {"raters_per_item": 2}),
        ("summary_rating", {"error_tags": ["hallucination"]}),
        ("phrase_pair", {"labels_per_item": 2}),
        ("phrase_pair", {"probe_labels": ["EQUIVALENT"]}),
        ("label_test", {"labels_per_item": 3}),
    ],
)
def test_round_bound_setting_is_refused_while_a_round_runs(make_user, client_for, kind, change):
    """One annotation in an open round: the change is a 400 naming the setting and saying
    why, and nothing of the request is stored (the name sent with it included)."""
    from django.utils import timezone

    from annotation.models import Annotation, Assignment, Item, Membership
    from annotation.services.projects import project_create

    admin, ann = make_user("boss", staff=True), make_user("ann")
    project = project_create(actor=admin, slug="run", name="Running", kind=kind, language="he")
    Membership.objects.create(project=project, user=ann, role="annotator", status="active")
    item = Item.objects.create(project=project, external_id="i1", payload={"text": "x"})
    now = timezone.now()
    assignment = Assignment.objects.create(
        project=project, item=item, annotator=ann, round=1, claimed_at=now, expires_at=now, status="submitted"
    )
    Annotation.objects.create(assignment=assignment, item=item, annotator=ann, round=1, value={"label": "neutral"})
    before = _stored("run")
    response = client_for(admin).patch("/api/projects/run/", {"name": "Renamed", "settings": change}, format="json")
    assert response.status_code == 400, response.content
    errors = response.json()["errors"]
    assert [e["field"] for e in errors] == [f"settings.{next(iter(change))}"]
    assert "open round" in errors[0]["message"]
    assert _stored("run") == before
    # Once the round is decided, the same change goes through.
    Item.objects.filter(pk=item.pk).update(status="accepted")
    assert client_for(admin).patch("/api/projects/run/", {"settings": change}, format="json").status_code == 200


def test_a_setting_no_round_depends_on_changes_while_rounds_run(nli_project, client_for):
    users = _users()
    sup = client_for(users["sup"])
    _import_nli(sup)
    ann = client_for(users["ann1"])
    claimed = ann.get("/api/projects/fa-nli/next/").json()
    assert (
        ann.post(
            f"/api/assignments/{claimed['assignment']}/submit/", {"value": {"label": "neutral"}}, format="json"
        ).status_code
        == 201
    )
    assert sup.patch("/api/projects/fa-nli/", {"settings": {"consensus_k": 5}}, format="json").status_code == 400
    response = sup.patch("/api/projects/fa-nli/", {"settings": {"claim_ttl": 1200}}, format="json")
    assert response.status_code == 200, response.content


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"settings": {"consensus_k": 2}}, "settings.consensus_k"),
        ({"settings": {"no_such": 1}}, "settings.no_such"),
        ({"settings": []}, "settings"),
        ({"name": ""}, "name"),
        ({"name": "a\u202eb"}, "name"),
        ({"guidelines": 5}, "guidelines"),
        ({"kind": "phrase_pair"}, "kind"),
        ({"label_guide": {"label": {"maybe": "x"}}}, "label_guide.label.maybe"),
        ({"label_guide": {"nope": {}}}, "label_guide.nope"),
    ],
)
def test_bad_changes_are_refused_naming_the_field(nli_project, client_for, body, field):
    before = _stored()
    response = client_for(_users()["sup"]).patch("/api/projects/fa-nli/", body, format="json")
    assert response.status_code == 400, response.content
    assert field in [e["field"] for e in response.json()["errors"]]
    assert _stored() == before


def test_someone_elses_project_is_not_found_and_members_without_the_role_are_refused(
    nli_project, client_for, make_user
):
    from annotation.models import Membership
    from annotation.services.projects import project_create

    users = _users()
    stranger = make_user("stranger")
    project_create(actor=users["root"], slug="other", name="Other", kind="nli_relabel", language="he")
    other_sup = make_user("othersup")
    Membership.objects.create(
        project=nli_project.__class__.objects.get(slug="other"), user=other_sup, role="supervisor", status="active"
    )
    before = _stored()
    assert client_for(other_sup).patch("/api/projects/fa-nli/", {"name": "x"}, format="json").status_code == 404
    assert client_for(stranger).patch("/api/projects/fa-nli/", {"name": "x"}, format="json").status_code == 404
    missing = client_for(stranger).patch("/api/projects/no-such/", {"name": "x"}, format="json")
    assert missing.status_code == 404
    assert client_for(users["ann1"]).patch("/api/projects/fa-nli/", {"name": "x"}, format="json").status_code == 403
    assert client_for(users["rev"]).patch("/api/projects/fa-nli/", {"name": "x"}, format="json").status_code == 403
    assert _stored() == before


def test_password_reset(nli_project, client_for, make_user):
    """A supervisor sets the password of an account they created until its first login;
    every other account's password is its owner's or an admin's (members of their projects
    included: adding an account to a project must not hand its password over)."""
    from rest_framework.authtoken.models import Token

    users = _users()
    sup = client_for(users["sup"])
    assert (
        sup.post("/api/users/", {"username": "invited", "password": "a-first-pass-phrase-3"}, format="json").status_code
        == 201
    )
    invited = users["sup"].__class__.objects.get(username="invited")
    token = Token.objects.create(user=invited)
    weak = sup.post("/api/users/invited/password/", {"password": "123"}, format="json")
    assert weak.status_code == 400 and weak.json()["errors"][0]["field"] == "password"
    assert (
        sup.post("/api/users/invited/password/", {"password": "a-new-pass-phrase-7"}, format="json").status_code == 204
    )
    invited.refresh_from_db()
    assert invited.check_password("a-new-pass-phrase-7")
    assert not Token.objects.filter(pk=token.pk).exists()
    # Not the supervisor's to reset: a member of their project, a co-supervisor, an admin, a stranger.
    outsider = make_user("elsewhere")
    for name in ("ann1", "root", "elsewhere", "no-such-user"):
        assert (
            sup.post(f"/api/users/{name}/password/", {"password": "a-new-pass-phrase-7"}, format="json").status_code
            == 404
        ), name
    assert (
        client_for(users["ann3"])
        .post("/api/users/invited/password/", {"password": "a-new-pass-phrase-7"}, format="json")
        .status_code
        == 403
    )
    assert (
        client_for(users["root"])
        .post("/api/users/ann1/password/", {"password": "a-new-pass-phrase-7"}, format="json")
        .status_code
        == 204
    )
    assert outsider.check_password("pass-word-123")


def test_preview_claims_nothing(nli_project, client_for):
    from annotation.models import Assignment

    users = _users()
    sup = client_for(users["sup"])
    _import_nli(sup, n=2)
    first = sup.get("/api/projects/fa-nli/preview/")
    assert first.status_code == 200 and first.json()["assignment"] is None and first.json()["preview"] is True
    assert "label" not in first.json()["item"]["payload"]
    second = sup.get(f"/api/projects/fa-nli/preview/?after={first.json()['item']['id']}").json()
    assert second["item"]["id"] != first.json()["item"]["id"]
    wrapped = sup.get(f"/api/projects/fa-nli/preview/?after={second['item']['id']}").json()
    assert wrapped["item"]["id"] == first.json()["item"]["id"]
    assert sup.get("/api/projects/fa-nli/preview/?after=abc").status_code == 400
    assert Assignment.objects.count() == 0
    assert client_for(users["ann1"]).get("/api/projects/fa-nli/preview/").status_code == 403


def test_a_summary_projects_guide_follows_its_own_error_tags(make_user, client_for):
    from annotation.services.projects import project_create

    admin = make_user("boss", staff=True)
    project_create(actor=admin, slug="sum", name="Sum", kind="summary_rating", language="he")
    client = client_for(admin)
    refused = client.patch("/api/projects/sum/", {"label_guide": {"errors": {"typo": "שגיאת כתיב"}}}, format="json")
    assert refused.status_code == 400 and refused.json()["errors"][0]["field"] == "label_guide.errors.typo"
    body = {"settings": {"error_tags": ["typo", "hallucination"]}, "label_guide": {"errors": {"typo": "שגיאת כתיב"}}}
    response = client.patch("/api/projects/sum/", body, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["label_guide"] == {"errors": {"typo": "שגיאת כתיב"}}
