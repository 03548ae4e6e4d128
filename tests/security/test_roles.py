"""Who may change whom: a project's owner, supervisors who cannot take over accounts or each
other, disqualified staff who keep no right, and the audit log that records every change.

The project (conftest `nli_project`) is created by the admin `root`, its owner; `sup` is a
supervisor who does not own it."""

import io
import json

import pytest

SLUG = "fa-nli"
STRONG = "a-Long-pass-phrase-42"
NEW = "another-Long-phrase-7"


def reset(client, username, password=NEW):
    return client.post(f"/api/users/{username}/password/", {"password": password}, format="json")


def field_of(response, status=400) -> str:
    assert response.status_code == status, (response.status_code, response.content[:500])
    return response.json()["errors"][0]["field"]


@pytest.fixture
def team(nli_project, client_for, django_user_model):
    from annotation.models import Membership

    users = {name: django_user_model.objects.get(username=name) for name in ("root", "sup", "rev", "ann1")}
    users["co"] = django_user_model.objects.create_user(username="co", password=STRONG)
    Membership.objects.create(project=nli_project, user=users["co"], role="supervisor", status="active")
    clients = {name: client_for(user) for name, user in users.items()}
    return {"project": nli_project, "users": users, "clients": clients}


def audit_of(project, action=None):
    from annotation.models import AuditEntry

    entries = AuditEntry.objects.filter(project=project).order_by("id")
    return list(entries.filter(action=action) if action else entries)


# ---------------------------------------------------------------- passwords


@pytest.mark.django_db
def test_adding_an_account_to_a_project_does_not_hand_over_its_password(team, make_user):
    """The old rule ("a member only of projects I supervise") could be made true by the
    supervisor: add the account, then reset its password."""
    make_user("victim", password=STRONG)
    sup = team["clients"]["sup"]
    assert reset(sup, "victim").status_code == 404
    added = sup.post(f"/api/projects/{SLUG}/members/", {"username": "victim", "role": "annotator"}, format="json")
    assert added.status_code == 201
    assert reset(sup, "victim").status_code == 404
    # Nor any member of the project that the supervisor did not create.
    assert reset(sup, "ann1").status_code == 404


@pytest.mark.django_db
def test_a_demoted_co_supervisor_is_not_taken_over(team):
    sup = team["clients"]["sup"]
    assert sup.patch(f"/api/projects/{SLUG}/members/co/", {"role": "annotator"}, format="json").status_code == 403
    owner = team["clients"]["root"]
    assert owner.patch(f"/api/projects/{SLUG}/members/co/", {"role": "annotator"}, format="json").status_code == 200
    assert reset(sup, "co").status_code == 404
    team["users"]["co"].refresh_from_db()
    assert team["users"]["co"].check_password(STRONG)


@pytest.mark.django_db
def test_a_supervisor_sets_the_password_of_their_invitation_until_its_first_login(team, api_client, client):
    sup = team["clients"]["sup"]
    assert sup.post("/api/users/", {"username": "newbie", "password": STRONG}, format="json").status_code == 201
    assert reset(sup, "newbie").status_code == 204
    # Another supervisor's invitation is not theirs.
    assert reset(team["clients"]["co"], "newbie").status_code == 404
    # The first login, with a token, ends the invitation.
    login = api_client.post("/api/auth/token/", {"username": "newbie", "password": NEW}, format="json")
    assert login.status_code == 200
    assert reset(sup, "newbie", STRONG).status_code == 404
    # A login through the login page does too.
    assert sup.post("/api/users/", {"username": "newbie2", "password": STRONG}, format="json").status_code == 201
    assert client.post("/login/", {"username": "newbie2", "password": STRONG}).status_code == 302
    assert reset(sup, "newbie2").status_code == 404
    # The admin resets anyone's.
    assert reset(team["clients"]["root"], "newbie").status_code == 204


@pytest.mark.django_db
def test_token_and_session_logins_set_last_login(make_user, api_client, client):
    dana, reza = make_user("dana", password=STRONG), make_user("reza", password=STRONG)
    assert (
        api_client.post("/api/auth/token/", {"username": "dana", "password": STRONG}, format="json").status_code == 200
    )
    assert client.post("/login/", {"username": "reza", "password": STRONG}).status_code == 302
    dana.refresh_from_db()
    reza.refresh_from_db()
    assert dana.last_login is not None and reza.last_login is not None


@pytest.mark.django_db
def test_password_resets_are_in_the_audit_log(team):
    sup = team["clients"]["sup"]
    assert sup.post("/api/users/", {"username": "newbie", "password": STRONG}, format="json").status_code == 201
    assert (
        sup.post(
            f"/api/projects/{SLUG}/members/", {"username": "newbie", "role": "annotator"}, format="json"
        ).status_code
        == 201
    )
    assert reset(sup, "newbie").status_code == 204
    [entry] = audit_of(team["project"], "password_reset")
    assert entry.actor == team["users"]["sup"] and entry.target == "user:newbie"


# ---------------------------------------------------------------- roles, status, owner


@pytest.mark.django_db
def test_only_the_owner_or_an_admin_changes_another_supervisors_role_or_status(team):
    from annotation.models import Membership

    sup, co = team["clients"]["sup"], team["clients"]["co"]
    assert sup.patch(f"/api/projects/{SLUG}/members/co/", {"status": "disqualified"}, format="json").status_code == 403
    assert co.patch(f"/api/projects/{SLUG}/members/sup/", {"role": "reviewer"}, format="json").status_code == 403
    assert Membership.objects.get(project=team["project"], user__username="co").status == "active"
    # Harmless marks stay with every supervisor; members who are not supervisors too.
    assert sup.patch(f"/api/projects/{SLUG}/members/co/", {"adjudicator": True}, format="json").status_code == 200
    assert sup.patch(f"/api/projects/{SLUG}/members/ann1/", {"status": "trial"}, format="json").status_code == 200
    # Nobody changes their own status, and the owner's membership stays as it is.
    assert field_of(sup.patch(f"/api/projects/{SLUG}/members/sup/", {"status": "trial"}, format="json")) == "status"
    assert (
        field_of(
            team["clients"]["root"].patch(
                f"/api/projects/{SLUG}/members/root/", {"status": "disqualified"}, format="json"
            )
        )
        == "status"
    )


@pytest.mark.django_db
def test_role_and_status_changes_are_in_the_audit_log(team):
    root = team["clients"]["root"]
    assert root.patch(f"/api/projects/{SLUG}/members/co/", {"role": "reviewer"}, format="json").status_code == 200
    assert (
        root.patch(f"/api/projects/{SLUG}/members/ann1/", {"status": "disqualified"}, format="json").status_code == 200
    )
    (change,) = audit_of(team["project"], "member_change")
    assert (change.target, change.before, change.after) == ("member:co", {"role": "supervisor"}, {"role": "reviewer"})
    (disqualification,) = audit_of(team["project"], "disqualification")
    assert (disqualification.before, disqualification.after) == ({"status": "active"}, {"status": "disqualified"})


@pytest.mark.django_db
def test_the_owner_hands_the_project_on(team):
    from annotation.models import Project

    sup, root = team["clients"]["sup"], team["clients"]["root"]
    assert root.get(f"/api/projects/{SLUG}/").json()["owner"] == "root"
    assert "owner" not in team["clients"]["rev"].get(f"/api/projects/{SLUG}/").json()
    assert "owner" not in team["clients"]["ann1"].get(f"/api/projects/{SLUG}/").json()
    assert sup.patch(f"/api/projects/{SLUG}/", {"owner": "sup"}, format="json").status_code == 403
    assert field_of(root.patch(f"/api/projects/{SLUG}/", {"owner": "ann1"}, format="json")) == "owner"
    assert field_of(root.patch(f"/api/projects/{SLUG}/", {"owner": "nobody"}, format="json")) == "owner"
    assert field_of(root.patch(f"/api/projects/{SLUG}/", {"owner": 7}, format="json")) == "owner"
    answer = root.patch(f"/api/projects/{SLUG}/", {"owner": "sup"}, format="json")
    assert answer.status_code == 200 and answer.json()["owner"] == "sup"
    assert Project.objects.get(slug=SLUG).owner == team["users"]["sup"]
    [entry] = audit_of(team["project"], "owner_transfer")
    assert (entry.before, entry.after) == ({"owner": "root"}, {"owner": "sup"})
    # The new owner now changes the co-supervisor's role; the list shows the owner to supervisors.
    assert sup.patch(f"/api/projects/{SLUG}/members/co/", {"role": "annotator"}, format="json").status_code == 200
    listed = {p["slug"]: p for p in sup.get("/api/projects/").json()["results"]}
    assert listed[SLUG]["owner"] == "sup"


# ---------------------------------------------------------------- disqualified staff


@pytest.mark.django_db
@pytest.mark.parametrize("who", ["co", "rev"])
def test_a_disqualified_supervisor_or_reviewer_keeps_no_right(team, who, client):
    from annotation.models import Membership, Project

    project = team["project"]
    assert (
        team["clients"]["root"]
        .patch(f"/api/projects/{SLUG}/members/{who}/", {"status": "disqualified"}, format="json")
        .status_code
        == 200
    )
    them = team["clients"][who]
    assert them.get(f"/api/projects/{SLUG}/export/?format=jsonl&status=all").status_code == 404
    assert them.patch(f"/api/projects/{SLUG}/", {"name": "Mine now"}, format="json").status_code == 404
    assert (
        them.post(
            f"/api/projects/{SLUG}/members/", {"username": "ann2", "role": "supervisor"}, format="json"
        ).status_code
        == 404
    )
    assert them.patch(f"/api/projects/{SLUG}/members/{who}/", {"status": "active"}, format="json").status_code == 404
    assert them.get(f"/api/projects/{SLUG}/").status_code == 404
    assert them.get(f"/api/projects/{SLUG}/items/").status_code == 404
    assert them.get("/api/projects/").json()["count"] == 0
    # Nor do they create accounts or projects any longer (they supervise nothing else).
    assert them.post("/api/users/", {"username": "x-new", "password": STRONG}, format="json").status_code == 403
    client.force_login(team["users"][who])
    for page in ("", "dashboard/", "release/", "leaderboard/", "console/items/"):
        assert client.get(f"/p/{SLUG}/{page}").status_code == 404, page
    assert Project.objects.get(slug=SLUG).name == "Persian NLI"
    assert Membership.objects.get(project=project, user__username=who).status == "disqualified"


@pytest.mark.django_db
def test_a_disqualified_supervisor_no_longer_reads_the_jobs_they_started(team):
    from annotation.models import Job

    job = Job.objects.create(kind="import", project=team["project"], created_by=team["users"]["co"], params={})
    assert team["clients"]["co"].get(f"/api/jobs/{job.pk}/").status_code == 200
    assert (
        team["clients"]["root"]
        .patch(f"/api/projects/{SLUG}/members/co/", {"status": "disqualified"}, format="json")
        .status_code
        == 200
    )
    assert team["clients"]["co"].get(f"/api/jobs/{job.pk}/").status_code == 404


# ---------------------------------------------------------------- the audit log


def jsonl(*rows) -> io.BytesIO:
    handle = io.BytesIO("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode())
    handle.name = "items.jsonl"
    return handle


@pytest.mark.django_db
def test_the_audit_log_lists_supervisor_actions_with_filters(team):
    sup = team["clients"]["sup"]
    assert (
        sup.patch(
            f"/api/projects/{SLUG}/", {"name": "Renamed", "settings": {"consensus_k": 3}}, format="json"
        ).status_code
        == 200
    )
    assert sup.patch(f"/api/projects/{SLUG}/members/ann1/", {"trusted": True}, format="json").status_code == 200
    imported = sup.post(
        f"/api/projects/{SLUG}/import/",
        {"file": jsonl({"id": "a", "premise": "پ", "hypothesis": "ف"}), "format": "jsonl"},
    )
    assert imported.status_code == 201
    assert sup.post(f"/api/projects/{SLUG}/splits/", {}, format="json").status_code == 202

    page = sup.get(f"/api/projects/{SLUG}/audit/")
    assert page.status_code == 200
    body = page.json()
    assert {"count", "next", "previous", "results"} <= set(body)
    actions = [entry["action"] for entry in body["results"]]
    assert actions[:4] == ["split_run", "import", "member_change", "settings_change"]
    settings = body["results"][3]
    assert set(settings) == {"id", "action", "actor", "target", "before", "after", "comment", "created_at"}
    assert settings["actor"] == "sup"
    assert settings["before"] == {"name": "Persian NLI", "settings": {"consensus_k": 4}}
    assert settings["after"] == {"name": "Renamed", "settings": {"consensus_k": 3}}

    only = sup.get(f"/api/projects/{SLUG}/audit/?action=member_change&actor=sup").json()
    assert [e["action"] for e in only["results"]] == ["member_change"]
    assert sup.get(f"/api/projects/{SLUG}/audit/?actor=root").json()["count"] == 1  # the project's creation
    assert sup.get(f"/api/projects/{SLUG}/audit/?actor=nobody").json()["count"] == 0
    assert field_of(sup.get(f"/api/projects/{SLUG}/audit/?action=launch")) == "action"
    assert sup.get(f"/api/projects/{SLUG}/audit/?page_size=2").json()["next"] is not None


@pytest.mark.django_db
def test_a_refused_change_leaves_no_entry(team):
    sup = team["clients"]["sup"]
    before = len(audit_of(team["project"]))
    assert (
        sup.patch(
            f"/api/projects/{SLUG}/", {"name": "Renamed", "settings": {"consensus_k": 9}}, format="json"
        ).status_code
        == 400
    )
    assert sup.patch(f"/api/projects/{SLUG}/members/co/", {"status": "disqualified"}, format="json").status_code == 403
    assert len(audit_of(team["project"])) == before


@pytest.mark.django_db
def test_the_audit_log_is_for_supervisors_and_admins(team):
    assert team["clients"]["rev"].get(f"/api/projects/{SLUG}/audit/").status_code == 403
    assert team["clients"]["ann1"].get(f"/api/projects/{SLUG}/audit/").status_code == 403
    assert team["clients"]["root"].get(f"/api/projects/{SLUG}/audit/").status_code == 200


@pytest.mark.django_db
def test_the_audit_page_filters_by_action_and_person(team, client):
    sup = team["clients"]["sup"]
    assert sup.patch(f"/api/projects/{SLUG}/", {"name": "Renamed"}, format="json").status_code == 200
    assert sup.patch(f"/api/projects/{SLUG}/members/ann1/", {"trusted": True}, format="json").status_code == 200
    client.force_login(team["users"]["sup"])
    client.cookies["django_language"] = "he"
    overview = client.get(f"/p/{SLUG}/").content.decode()
    assert f'href="/p/{SLUG}/audit/"' in overview
    html = client.get(f"/p/{SLUG}/audit/?action=member_change&actor=sup").content.decode()
    assert "member:ann1" in html and "project:fa-nli" not in html
    assert "יומן פעולות" in html  # the page's title in Hebrew
    assert client.get(f"/p/{SLUG}/audit/?action=launch").status_code == 200  # the form says why
    client.force_login(team["users"]["rev"])
    assert client.get(f"/p/{SLUG}/audit/").status_code == 403


# ---------------------------------------------------------------- names


@pytest.mark.django_db
def test_reviewers_see_pseudonyms_of_members_and_supervisors_see_names(team, client):
    from annotation.selectors.names import annotator_pseudonym

    pseudonym = annotator_pseudonym(team["project"].pk, team["users"]["ann1"].pk)
    members = team["clients"]["rev"].get(f"/api/projects/{SLUG}/members/").content.decode()
    assert '"ann1"' not in members and pseudonym in members
    assert '"ann1"' in team["clients"]["sup"].get(f"/api/projects/{SLUG}/members/").content.decode()
    client.force_login(team["users"]["rev"])
    page = client.get(f"/p/{SLUG}/").content.decode()
    assert ">ann1<" not in page and pseudonym in page


# ---------------------------------------------------------------- released_system


@pytest.mark.django_db
def test_released_system_is_shown_to_staff_not_to_raters(make_user, client_for, client):
    from annotation.models import Membership
    from annotation.services.projects import project_create

    root = make_user("root", staff=True)
    project = project_create(
        actor=root,
        slug="mt",
        name="MT",
        kind="translation_rating",
        language="he",
        settings={"released_system": "amazon"},
    )
    for name, role in (("rev", "reviewer"), ("rater", "annotator"), ("sup", "supervisor")):
        Membership.objects.create(project=project, user=make_user(name), role=role, status="active")
    seen = {
        name: client_for(project.memberships.get(user__username=name).user).get("/api/projects/mt/").json()["settings"]
        for name in ("rev", "rater", "sup")
    }
    assert seen["sup"]["released_system"] == "amazon"
    assert seen["rev"]["released_system"] == "amazon"
    assert "released_system" not in seen["rater"]
    # On the results page too, which reviewers read as supervisors do.
    for name in ("rev", "sup"):
        client.force_login(project.memberships.get(user__username=name).user)
        assert "<bdi>amazon</bdi>" in client.get("/p/mt/lchaim/").content.decode(), name
