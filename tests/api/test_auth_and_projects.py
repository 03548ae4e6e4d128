"""Token, users, projects and members through HTTP; the login page's throttle and the
security headers of pages (docs/api.md "General rules", "Users and membership", "Projects";
docs/text.md, docs/security.md)."""

import re

import pytest

SLUG = "fa-nli"
PASSWORD = "pass-word-123"
STRONG = "a-Long-pass-phrase-42"
RLO = "\u202e"


def error_list(response, status: int = 400) -> list[dict]:
    """The error body of docs/api.md "General rules": {"errors": [{"field", "message", "row"?}]}."""
    assert response.status_code == status, (response.status_code, response.content[:1000])
    body = response.json()
    assert set(body) == {"errors"}, body
    errors = body["errors"]
    assert isinstance(errors, list) and errors
    for error in errors:
        assert {"field", "message"} <= set(error) <= {"field", "message", "row"}, error
        assert error["field"] is None or isinstance(error["field"], str)
        assert isinstance(error["message"], str) and error["message"]
    return errors


def fields_of(errors) -> set:
    return {error["field"] for error in errors}


@pytest.fixture(autouse=True)
def clean_cache():
    """Throttles count in the cache; every test starts (and leaves) it empty."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def users(nli_project, django_user_model):
    return {user.username: user for user in django_user_model.objects.all()}


@pytest.fixture
def clients(users, client_for):
    return {name: client_for(user) for name, user in users.items()}


# ---------------------------------------------------------------- token


@pytest.mark.django_db
def test_token_good_credentials(api_client, make_user):
    make_user("dana", password=PASSWORD)
    response = api_client.post("/api/auth/token/", {"username": "dana", "password": PASSWORD}, format="json")
    assert response.status_code == 200
    token = response.json()["token"]
    assert set(response.json()) == {"token"} and token
    again = api_client.post("/api/auth/token/", {"username": "dana", "password": PASSWORD}, format="json")
    assert again.json()["token"] == token
    api_client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert api_client.get("/api/projects/").status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize(
    "body",
    [
        {"username": "dana", "password": "wrong"},
        {"username": "nobody", "password": PASSWORD},
        {"username": "dana"},
        {},
        {"username": "dana", "password": 123},
        {"username": "da\u0000na", "password": PASSWORD},
        ["dana", PASSWORD],
    ],
    ids=["wrong-password", "unknown-user", "no-password", "empty", "password-not-string", "nul", "list-body"],
)
def test_token_bad_credentials_400(api_client, make_user, body):
    make_user("dana", password=PASSWORD)
    errors = error_list(api_client.post("/api/auth/token/", body, format="json"), 400)
    assert fields_of(errors) & {"username", "password", "body", None}


@pytest.mark.django_db
def test_wrong_password_and_unknown_user_look_alike(api_client, make_user):
    make_user("dana", password=PASSWORD)
    wrong = api_client.post("/api/auth/token/", {"username": "dana", "password": "nope"}, format="json")
    unknown = api_client.post("/api/auth/token/", {"username": "ghost", "password": "nope"}, format="json")
    assert wrong.status_code == unknown.status_code == 400
    assert wrong.json() == unknown.json()


@pytest.mark.django_db
def test_inactive_user_gets_no_token(api_client, make_user):
    user = make_user("dana", password=PASSWORD)
    user.is_active = False
    user.save()
    error_list(api_client.post("/api/auth/token/", {"username": "dana", "password": PASSWORD}, format="json"), 400)


@pytest.mark.django_db
def test_token_endpoint_is_throttled(api_client, make_user, monkeypatch):
    from annotation import throttle

    make_user("dana", password=PASSWORD)
    monkeypatch.setattr(throttle, "USERNAME_LIMIT", 3)
    codes = [
        api_client.post("/api/auth/token/", {"username": "dana", "password": "wrong"}, format="json").status_code
        for _ in range(3)
    ]
    assert codes == [400, 400, 400]
    blocked = api_client.post("/api/auth/token/", {"username": "dana", "password": PASSWORD}, format="json")
    error_list(blocked, 429)
    assert int(blocked["Retry-After"]) > 0


# ---------------------------------------------------------------- users


@pytest.mark.django_db
@pytest.mark.parametrize("creator", ["sup", "root"])
def test_supervisor_or_admin_creates_users(clients, creator, api_client, django_user_model):
    response = clients[creator].post(
        "/api/users/", {"username": "new.user", "password": STRONG, "email": "n@example.org"}, format="json"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["username"] == "new.user" and body["email"] == "n@example.org" and isinstance(body["id"], int)
    assert "password" not in response.content.decode()
    assert django_user_model.objects.get(username="new.user").check_password(STRONG)
    login = api_client.post("/api/auth/token/", {"username": "new.user", "password": STRONG}, format="json")
    assert login.status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("creator", ["ann1", "rev"])
def test_annotators_and_reviewers_cannot_create_users(clients, creator, django_user_model):
    error_list(clients[creator].post("/api/users/", {"username": "x", "password": STRONG}, format="json"), 403)
    assert not django_user_model.objects.filter(username="x").exists()


@pytest.mark.django_db
def test_duplicate_username_is_409(clients, django_user_model):
    errors = error_list(
        clients["sup"].post("/api/users/", {"username": "ann1", "password": STRONG}, format="json"), 409
    )
    assert "username" in fields_of(errors)
    assert django_user_model.objects.filter(username="ann1").count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"username": "weak", "password": "123"}, "password"),
        ({"username": "weak", "password": "password"}, "password"),
        ({"username": "weakling77", "password": "weakling77"}, "password"),
        ({"username": "weak"}, "password"),
        ({"username": f"bad{RLO}name", "password": STRONG}, "username"),
        ({"username": "bad\u2066name", "password": STRONG}, "username"),
        ({"username": "", "password": STRONG}, "username"),
        ({"username": "has space", "password": STRONG}, "username"),
        ({"username": 42, "password": STRONG}, "username"),
        ({"username": "x" * 151, "password": STRONG}, "username"),
        ({"username": "ok-name", "password": STRONG, "email": f"a{RLO}@example.org"}, "email"),
        ({"username": "nul\u0000", "password": STRONG}, "username"),
    ],
    ids=[
        "short",
        "common",
        "too-similar",
        "missing",
        "bidi-override",
        "bidi-isolate",
        "empty",
        "space",
        "not-string",
        "too-long",
        "bidi-email",
        "nul",
    ],
)
def test_bad_new_user_is_400(clients, django_user_model, body, field):
    before = django_user_model.objects.count()
    errors = error_list(clients["sup"].post("/api/users/", body, format="json"), 400)
    assert field in fields_of(errors), errors
    assert django_user_model.objects.count() == before


@pytest.mark.django_db
def test_hebrew_and_persian_usernames_are_fine(clients):
    for name in ("דנה", "مریم"):
        response = clients["sup"].post("/api/users/", {"username": name, "password": STRONG}, format="json")
        assert response.status_code == 201, response.content
        assert response.json()["username"] == name


# ---------------------------------------------------------------- projects


def new_project(client, **overrides):
    body = {"slug": "he-nli", "name": "NLI עברית", "kind": "nli_relabel", "language": "he", **overrides}
    body = {key: value for key, value in body.items() if value is not ...}
    return client.post("/api/projects/", body, format="json")


@pytest.mark.django_db
def test_create_project_fills_defaults_and_makes_creator_supervisor(clients):
    from annotation.models import Membership

    response = new_project(clients["sup"])
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["slug"], body["name"], body["kind"], body["language"]) == ("he-nli", "NLI עברית", "nli_relabel", "he")
    assert body["settings"]["consensus_k"] == 4
    assert body["settings"]["consensus_n"] == 5
    assert body["direction"] == "rtl"
    membership = Membership.objects.get(project__slug="he-nli", user__username="sup")
    assert (membership.role, membership.status) == ("supervisor", "active")
    members = clients["sup"].get("/api/projects/he-nli/members/").json()["results"]
    assert [(m["username"], m["role"]) for m in members] == [("sup", "supervisor")]
    assert "he-nli" in [p["slug"] for p in clients["sup"].get("/api/projects/").json()["results"]]
    # not visible to members of other projects
    assert clients["ann1"].get("/api/projects/he-nli/").status_code == 404


@pytest.mark.django_db
def test_create_project_keeps_given_settings(clients):
    response = new_project(clients["sup"], settings={"consensus_n": 3, "consensus_k": 2, "claim_ttl": 60})
    assert response.status_code == 201, response.content
    settings = response.json()["settings"]
    assert (settings["consensus_n"], settings["consensus_k"], settings["claim_ttl"]) == (3, 2, 60)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("kind", "given", "stored"),
    [
        ("qa_authoring", {"review_rate": 1}, {"review_rate": 1.0}),
        (
            "qa_authoring",
            {"review_rate": 0, "dev_share": 0, "test_share": 0},
            {"review_rate": 0.0, "dev_share": 0.0, "test_share": 0.0},
        ),
        ("phrase_pair", {"probe_rate": 0}, {"probe_rate": 0.0}),
        ("translation_rating", {"back_translation_threshold": 1}, {"back_translation_threshold": 1.0}),
    ],
)
def test_a_whole_number_is_a_decimal_setting(clients, kind, given, stored):
    """JSON has one number type: 1 and 1.0 are the same value to a client."""
    response = new_project(clients["sup"], kind=kind, slug="whole", settings=given)
    assert response.status_code == 201, response.content
    settings = response.json()["settings"]
    assert {key: settings[key] for key in stored} == stored
    assert all(type(settings[key]) is float for key in stored)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("kind", "given", "field"),
    [
        ("qa_authoring", {"review_rate": True}, "settings.review_rate"),  # a boolean is not a number here
        ("nli_relabel", {"consensus_k": 4.0}, "settings.consensus_k"),  # counts stay whole numbers
        ("qa_authoring", {"review_rate": "0.5"}, "settings.review_rate"),
    ],
)
def test_settings_of_another_type_are_refused(clients, kind, given, field):
    response = new_project(clients["sup"], kind=kind, slug="typed", settings=given)
    assert response.status_code == 400, response.content
    assert field in [error["field"] for error in response.json()["errors"]]


@pytest.mark.django_db
def test_label_test_defaults(clients):
    response = new_project(clients["sup"], kind="label_test", slug="lt")
    assert response.status_code == 201, response.content
    assert "consensus_k" not in response.json()["settings"]


@pytest.mark.django_db
def test_ltr_project_direction(clients):
    assert new_project(clients["sup"], language="en", slug="en-nli").json()["direction"] == "ltr"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"kind": "sentiment"}, "kind"),
        ({"kind": ...}, "kind"),
        ({"kind": ["nli_relabel"]}, "kind"),
        ({"language": "xx"}, "language"),
        ({"language": ...}, "language"),
        ({"settings": {"consensus_m": 3}}, "settings.consensus_m"),
        ({"settings": {"consensus_n": "5"}}, "settings.consensus_n"),
        ({"settings": {"consensus_n": 5.0}}, "settings.consensus_n"),
        ({"settings": {"consensus_n": True}}, "settings.consensus_n"),
        ({"settings": {"consensus_n": 4, "consensus_k": 2}}, "settings.consensus_k"),
        ({"settings": {"consensus_n": 5, "consensus_k": 6}}, "settings.consensus_k"),
        ({"settings": {"claim_ttl": 5}}, "settings.claim_ttl"),
        ({"settings": [1]}, "settings"),
        ({"slug": "Bad Slug"}, "slug"),
        ({"slug": ...}, "slug"),
        ({"slug": f"he{RLO}x"}, "slug"),
        ({"name": f"name {RLO}"}, "name"),
        ({"name": "a\u0000b"}, "name"),
        ({"name": ...}, "name"),
    ],
    ids=[
        "unknown-kind",
        "missing-kind",
        "kind-not-string",
        "unknown-language",
        "missing-language",
        "unknown-setting",
        "setting-string",
        "setting-float",
        "setting-bool",
        "k-at-half",
        "k-above-n",
        "ttl-too-short",
        "settings-list",
        "bad-slug",
        "missing-slug",
        "bidi-slug",
        "bidi-name",
        "nul-name",
        "missing-name",
    ],
)
def test_bad_project_is_400(clients, overrides, field):
    from annotation.models import Project

    before = Project.objects.count()
    errors = error_list(new_project(clients["sup"], **overrides), 400)
    assert field in fields_of(errors), errors
    assert Project.objects.count() == before


@pytest.mark.django_db
@pytest.mark.parametrize(
    "kind",
    [
        "qa_authoring",
        "nli_authoring",
        "nli_relabel",
        "translation_rating",
        "phrase_pair",
        "summary_rating",
        "label_test",
    ],
)
def test_every_kind_of_the_contract_can_be_created_with_its_defaults(clients, kind):
    """The seven kinds of docs/kinds.md, each created with the papers' defaults filled in."""
    response = new_project(clients["sup"], slug=f"k-{kind.replace('_', '-')}", kind=kind)
    assert response.status_code == 201, response.content
    assert response.json()["kind"] == kind and response.json()["settings"]["claim_ttl"] == 1800


@pytest.mark.django_db
def test_duplicate_slug_is_409(clients):
    from annotation.models import Project

    errors = error_list(new_project(clients["sup"], slug=SLUG), 409)
    assert "slug" in fields_of(errors)
    assert Project.objects.get(slug=SLUG).name == "Persian NLI"


@pytest.mark.django_db
def test_project_detail_counts_by_status(make_user, client_for):
    from annotation.models import Membership
    from annotation.services.imports import items_import

    boss = client_for(make_user("boss", staff=True))
    response = new_project(boss, slug="c2", settings={"consensus_n": 2, "consensus_k": 2})
    assert response.status_code == 201
    assert response.json()["counts"]["total"] == 0
    from annotation.models import Project

    project = Project.objects.get(slug="c2")
    annotator = make_user("solo")
    Membership.objects.create(project=project, user=annotator, role="annotator", status="active")
    lines = (
        '{"id": "L", "premise": "p", "hypothesis": "h", "label": "e"}\n'
        '{"id": "U1", "premise": "q", "hypothesis": "h"}\n'
        '{"id": "U2", "premise": "r", "hypothesis": "h"}\n'
    )
    items_import(project=project, data=lines.encode(), fmt="jsonl", filename="x.jsonl")
    ann = client_for(annotator)
    while (claim := ann.get("/api/projects/c2/next/")).status_code == 200:
        ann.post(
            f"/api/assignments/{claim.json()['assignment']}/submit/", {"value": {"label": "neutral"}}, format="json"
        )
    counts = boss.get("/api/projects/c2/").json()["counts"]
    assert counts["total"] == 3
    assert counts["complete"] == 1  # the labelled item needed only n-1 = 1 vote
    assert counts["open"] == 2
    for status in ("accepted", "needs_revision", "removed"):
        assert counts.get(status, 0) == 0
    # annotators see the project too (its counts are not secret)
    assert ann.get("/api/projects/c2/").status_code == 200


# ---------------------------------------------------------------- members


@pytest.mark.django_db
def test_add_member(clients, make_user):
    from annotation.models import Membership

    make_user("newbie")
    response = clients["sup"].post(
        f"/api/projects/{SLUG}/members/", {"username": "newbie", "role": "annotator", "status": "active"}, format="json"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["username"], body["role"], body["status"], body["trusted"]) == ("newbie", "annotator", "active", False)
    membership = Membership.objects.get(project__slug=SLUG, user__username="newbie")
    assert (membership.role, membership.status) == ("annotator", "active")
    listed = clients["sup"].get(f"/api/projects/{SLUG}/members/").json()["results"]
    assert "newbie" in [member["username"] for member in listed]


@pytest.mark.django_db
def test_add_member_defaults_to_trial(clients, make_user):
    make_user("newbie")
    response = clients["sup"].post(
        f"/api/projects/{SLUG}/members/", {"username": "newbie", "role": "reviewer"}, format="json"
    )
    assert response.status_code == 201
    assert response.json()["status"] == "trial"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field", "status"),
    [
        ({"username": "ghost", "role": "annotator"}, "username", 400),
        ({"role": "annotator"}, "username", 400),
        ({"username": "newbie", "role": "boss"}, "role", 400),
        ({"username": "newbie"}, "role", 400),
        ({"username": "newbie", "role": "annotator", "status": "disqualified"}, "status", 400),
        ({"username": "newbie", "role": "annotator", "trusted": "yes"}, "trusted", 400),
        ({"username": "ann1", "role": "reviewer"}, "username", 409),
    ],
    ids=["unknown-user", "no-user", "bad-role", "no-role", "disqualified-on-add", "trusted-not-bool", "duplicate"],
)
def test_bad_member_add(clients, make_user, body, field, status):
    from annotation.models import Membership

    make_user("newbie")
    before = list(Membership.objects.order_by("pk").values_list("pk", "role", "status"))
    errors = error_list(clients["sup"].post(f"/api/projects/{SLUG}/members/", body, format="json"), status)
    assert field in fields_of(errors), errors
    assert list(Membership.objects.order_by("pk").values_list("pk", "role", "status")) == before


@pytest.mark.django_db
def test_patch_member_status_and_trusted(clients):
    from annotation.models import Membership

    url = f"/api/projects/{SLUG}/members/ann1/"
    response = clients["sup"].patch(url, {"trusted": True}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["trusted"] is True and response.json()["status"] == "active"
    response = clients["sup"].patch(url, {"status": "disqualified"}, format="json")
    assert response.status_code == 200
    assert response.json()["status"] == "disqualified" and response.json()["trusted"] is True
    membership = Membership.objects.get(project__slug=SLUG, user__username="ann1")
    assert (membership.status, membership.trusted) == ("disqualified", True)
    back = clients["sup"].patch(url, {"status": "active", "trusted": False}, format="json")
    assert (back.json()["status"], back.json()["trusted"]) == ("active", False)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"status": "fired"}, "status"),
        ({"trusted": "yes"}, "trusted"),
        ({"trusted": 1}, "trusted"),
        ({"username": "someone-else"}, "username"),
        ({"project": "x"}, "project"),
    ],
    ids=["bad-status", "trusted-string", "trusted-int", "rename", "move"],
)
def test_bad_member_patch(clients, body, field):
    from annotation.models import Membership

    before = (
        Membership.objects.filter(project__slug=SLUG, user__username="ann1").values("status", "trusted", "role").get()
    )
    errors = error_list(clients["sup"].patch(f"/api/projects/{SLUG}/members/ann1/", body, format="json"), 400)
    assert field in fields_of(errors), errors
    after = (
        Membership.objects.filter(project__slug=SLUG, user__username="ann1").values("status", "trusted", "role").get()
    )
    assert after == before


@pytest.mark.django_db
def test_patch_non_member_is_404(clients, make_user):
    make_user("outsider")
    for name in ("outsider", "nobody-at-all"):
        error_list(clients["sup"].patch(f"/api/projects/{SLUG}/members/{name}/", {"trusted": True}, format="json"), 404)


@pytest.mark.django_db
def test_patch_body_must_be_an_object(clients):
    response = clients["sup"].patch(f"/api/projects/{SLUG}/members/ann1/", ["trusted"], format="json")
    error_list(response, 400)


# ---------------------------------------------------------------- error bodies everywhere


@pytest.mark.django_db
def test_unauthenticated_error_body(api_client):
    for url in ("/api/projects/", f"/api/projects/{SLUG}/", "/api/jobs/1/"):
        response = api_client.get(url)
        error_list(response, 401)
        assert response.has_header("WWW-Authenticate")


@pytest.mark.django_db
def test_method_not_allowed_and_not_found_bodies(clients):
    error_list(clients["sup"].delete(f"/api/projects/{SLUG}/"), 405)
    error_list(clients["sup"].get("/api/jobs/999999/"), 404)
    error_list(clients["sup"].get("/api/projects/no-such/"), 404)


@pytest.mark.django_db
def test_json_body_with_lone_surrogate_on_other_endpoints(clients):
    raw = b'{"slug": "x-y", "name": "\\ud800", "kind": "nli_relabel", "language": "he"}'
    error_list(clients["sup"].generic("POST", "/api/projects/", raw, content_type="application/json"), 400)
    raw = b'{"username": "\\udfff", "password": "x"}'
    error_list(clients["sup"].generic("POST", "/api/auth/token/", raw, content_type="application/json"), 400)


@pytest.mark.django_db
@pytest.mark.parametrize("encoding", ["urlencoded", "multipart"])
def test_form_bodies_with_a_nul_character_are_refused(api_client, make_user, encoding):
    """Form bodies are held to the JSON parser's rule: a NUL character (which PostgreSQL
    cannot store or even look up) is a 400 naming the field, never a 500."""
    from urllib.parse import urlencode

    make_user("dana", password=PASSWORD)
    body = {"username": "da\x00na", "password": PASSWORD}
    if encoding == "urlencoded":
        response = api_client.generic(
            "POST", "/api/auth/token/", urlencode(body), content_type="application/x-www-form-urlencoded"
        )
    else:
        response = api_client.post("/api/auth/token/", body, format="multipart")
    assert error_list(response, 400) == [{"field": "username", "message": "contains a NUL character at position 2"}]
    body = {"username": "dana", "pass\x00word": PASSWORD}
    response = api_client.generic(
        "POST", "/api/auth/token/", urlencode(body), content_type="application/x-www-form-urlencoded"
    )
    assert error_list(response, 400)[0]["field"] == "<key>"
    # The same body without the NUL logs in.
    response = api_client.post("/api/auth/token/", {"username": "dana", "password": PASSWORD}, format="multipart")
    assert response.status_code == 200 and response.json()["token"]


# ---------------------------------------------------------------- login page and headers


@pytest.mark.django_db
def test_login_page_renders(client):
    response = client.get("/login/")
    assert response.status_code == 200
    assert b"<form" in response.content


@pytest.mark.django_db
def test_login_page_logs_in(client, make_user):
    make_user("dana", password=PASSWORD)
    response = client.post("/login/", {"username": "dana", "password": PASSWORD})
    assert response.status_code == 302
    assert client.get("/").status_code == 200


@pytest.mark.django_db
def test_login_page_throttles_repeated_failures(client, make_user):
    make_user("dana", password=PASSWORD)
    codes = [client.post("/login/", {"username": "dana", "password": f"wrong-{n}"}).status_code for n in range(15)]
    assert codes[0] == 200  # the form again, with an error
    assert 429 in codes, codes
    first_block = codes.index(429)
    assert first_block <= 11, codes
    assert all(code == 429 for code in codes[first_block:]), codes
    # while blocked, even the right password is refused
    assert client.post("/login/", {"username": "dana", "password": PASSWORD}).status_code == 429
    assert "_auth_user_id" not in client.session


@pytest.mark.django_db
def test_login_throttle_is_per_username(client, make_user):
    make_user("dana", password=PASSWORD)
    make_user("omer", password=PASSWORD)
    for n in range(12):
        client.post("/login/", {"username": "dana", "password": f"wrong-{n}"})
    assert client.post("/login/", {"username": "dana", "password": "x"}).status_code == 429
    assert client.post("/login/", {"username": "omer", "password": PASSWORD}).status_code == 302


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/login/", "/api/projects/", "/api/docs/"])
def test_security_headers(client, path):
    response = client.get(path)
    csp = response["Content-Security-Policy"]
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert re.search(r"(script-src|default-src) 'self'", csp)
    assert "frame-ancestors 'none'" in csp or response["X-Frame-Options"] == "DENY"
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] in (
        "same-origin",
        "no-referrer",
        "strict-origin",
        "strict-origin-when-cross-origin",
    )
    assert "Content-Security-Policy-Report-Only" not in response


@pytest.mark.django_db
def test_login_page_has_no_inline_script_or_handlers(client):
    html = client.get("/login/").content.decode()
    for match in re.finditer(r"<script\b([^>]*)>(.*?)</script>", html, re.S | re.I):
        attributes, content = match.groups()
        assert "src=" in attributes or 'type="application/json"' in attributes, match.group(0)[:200]
        if "src=" in attributes:
            assert not content.strip()
    assert not re.search(r"\son[a-z]+\s*=", html, re.I)
    assert "csrfmiddlewaretoken" in html


@pytest.mark.django_db
def test_api_token_never_in_a_page(client, make_user, client_for):
    from rest_framework.authtoken.models import Token

    user = make_user("dana", password=PASSWORD)
    token, _ = Token.objects.get_or_create(user=user)
    client.post("/login/", {"username": "dana", "password": PASSWORD})
    for path in ("/", "/login/"):
        assert token.key not in client.get(path).content.decode()
