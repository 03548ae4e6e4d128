"""Every route × every caller, read as a policy (docs/api.md "General rules"; docs/security.md "Scoping").

Routes are found by walking the URL resolver and the OpenAPI schema, so a new route or API
operation fails `test_every_route_and_operation_is_classified` until it has a row in ROUTES.
Each row names a policy: what every caller gets. Callers are relative to the target project
(tests/security/world.py): anonymous, a user with no membership, annotators on trial / active /
disqualified, the reviewer, the supervisor of another project, the project's supervisor, a
staff user who is not a member, and a supervisor and a reviewer who were disqualified (who see
the project as an outsider does).

Outcomes:
- ok        the route's success codes (per row; an allowed write may end in 409 or 400 when
            the world's state or the deliberately minimal body says so, after the access check)
- anon      API: 401; pages: a redirect to the login page
- refused   403 (a member whose role does not allow it)
- hidden    404, byte for byte the answer for a missing object ("do not reveal that they exist")
- login-admin  a redirect to the admin site's login page

And for every response: no marker string of a project the caller is not a member of (every
stored text of every project carries `MARK-<slug>-`; staff are members of everything), and for
callers who are not supervisors or admins no username of anyone else: people are named by
username to supervisors and admins only, by their export pseudonym to everyone else."""

import io
import re
from dataclasses import dataclass, field

import pytest

from tests.security.world import (
    ANNOTATING,
    HELPER,
    KIND_SLUGS,
    OTHER_SLUG,
    PASSWORD,
    ROLES,
    USERNAMES,
    build_world,
)

NLI, QA, MT, LABEL, PHRASE, SUM, AUTHOR = (
    KIND_SLUGS[k]
    for k in (
        "nli_relabel",
        "qa_authoring",
        "translation_rating",
        "label_test",
        "phrase_pair",
        "summary_rating",
        "nli_authoring",
    )
)
ALL = tuple(KIND_SLUGS.values())


def marker(slug: str) -> str:
    return f"MARK-{slug}-"


def planted(slug: str, name: str) -> str:
    return f"{marker(slug)}{name} טקסט"


# --- policies: caller → outcome -------------------------------------------------------------------


def policy(default, **by_role):
    return {role: by_role.get(role, default) for role in ROLES}


PUBLIC = policy("ok")
SIGNED_IN = policy("ok", anonymous="anon")
MANAGER = policy("refused", anonymous="anon", other_supervisor="ok", supervisor="ok", admin="ok")
MEMBER = policy(
    "ok", anonymous="anon", outsider="hidden", other_supervisor="hidden", dq_supervisor="hidden", dq_reviewer="hidden"
)
STAFF = {**MEMBER, **dict.fromkeys(ANNOTATING, "refused")}
SUPERVISOR = {**STAFF, "reviewer": "refused"}
ANNOTATOR = {**MEMBER, "disqualified": "refused", "reviewer": "refused", "supervisor": "refused", "admin": "refused"}
VALIDATOR = {**MEMBER, "trial": "refused", "disqualified": "refused"}
# Objects of one person: everyone else, staff included, gets the answer for a missing one.
OWNER = policy("hidden", anonymous="anon", annotator="ok")
CLAIMANT = {**OWNER, "trial": "ok", "disqualified": "refused"}
JOB_VIEWER = policy("hidden", anonymous="anon", supervisor="ok", admin="ok")
ADMIN_SITE = policy("login-admin", admin="ok")


@dataclass(frozen=True)
class Rule:
    policy: dict
    slugs: tuple = (NLI,)
    ok: tuple = (200,)
    body: object = None  # dict (JSON / form), "import" (a multipart file), or a callable(world, role)
    query: str = ""
    kwargs: dict = field(default_factory=dict)  # fixed path parameters
    xfail: dict = field(default_factory=dict)  # role → reason, for a rule being fixed elsewhere
    ends_at_login: bool = False  # success is a redirect to the login page (logging out)


IMPORT_LINE = {
    NLI: '{"id": "new-1", "premise": "פרמיסה חדשה", "hypothesis": "השערה חדשה"}\n',
}

ROUTES = {
    # --- pages ---
    "home": {"GET": Rule(SIGNED_IN)},
    "healthz": {"GET": Rule(PUBLIC)},
    "login": {
        "GET": Rule(PUBLIC),
        "POST": Rule(
            PUBLIC,
            ok=(200, 302),
            body=lambda w, role: {"username": USERNAMES.get(role, "nobody"), "password": PASSWORD},
        ),
    },
    "logout": {"POST": Rule(PUBLIC, ok=(302,), ends_at_login=True)},
    "set_language": {"POST": Rule(PUBLIC, ok=(302,), body={"language": "he", "next": "/"})},
    "project": {"GET": Rule(STAFF, slugs=ALL)},
    "annotate": {"GET": Rule(ANNOTATOR, slugs=ALL)},
    "project-member-add": {"POST": Rule(SUPERVISOR, ok=(302,), body={"username": "sec-helper", "role": "annotator"})},
    "project-member-update": {"POST": Rule(SUPERVISOR, ok=(302,), body={"status": "active", "trusted": "on"})},
    "project-import": {"POST": Rule(SUPERVISOR, ok=(302,), body="import")},
    "dashboard": {"GET": Rule(STAFF, slugs=(NLI, LABEL))},
    "dashboard-recompute": {"POST": Rule(SUPERVISOR, ok=(302,))},
    "revisions": {"GET": Rule({**MEMBER, "disqualified": "refused"}, slugs=(NLI, AUTHOR), ok=(200, 302))},
    "review-qa": {"GET": Rule(STAFF, slugs=(QA,))},
    "validate-qa": {"GET": Rule(VALIDATOR, slugs=(QA,))},
    "quality-qa": {"GET": Rule(STAFF, slugs=(QA,))},
    "question-audit-qa": {
        "GET": Rule(SUPERVISOR, slugs=(QA,)),
        "POST": Rule(SUPERVISOR, slugs=(QA,), ok=(302,), body={"action": "draw", "per_source": "1", "seed": "1"}),
    },
    "feedback": {"GET": Rule(SIGNED_IN)},
    "feedback-read": {"POST": Rule(OWNER, ok=(302,))},
    "lchaim-results": {"GET": Rule(STAFF, slugs=(MT, LABEL))},
    "lchaim-sample": {"POST": Rule(SUPERVISOR, slugs=(MT,), ok=(302,), body={"n": "1"})},
    # Refusals are answered as "not found" here: a download link reveals nothing either way.
    "lchaim-download": {
        "GET": Rule(
            {**STAFF, **dict.fromkeys(ANNOTATING, "hidden")}, slugs=(MT,), kwargs={"table": "table1", "fmt": "csv"}
        )
    },
    "phrase-coherence": {"GET": Rule(SUPERVISOR, slugs=(PHRASE,))},
    "summary-results": {"GET": Rule(STAFF, slugs=(SUM,))},
    "summary-intrinsic": {"POST": Rule(SUPERVISOR, slugs=(SUM,), ok=(302,))},
    "summary-recompute": {"POST": Rule(SUPERVISOR, slugs=(SUM,), ok=(302,))},
    "annotator-quality": {"GET": Rule(SUPERVISOR, slugs=ALL)},
    # Supervisors and members marked adjudicator (the world marks none).
    "adjudication": {"GET": Rule(SUPERVISOR, slugs=ALL)},
    "leaderboard": {"GET": Rule(STAFF, slugs=ALL)},
    # The minimal body (no file) is refused on the re-displayed form only after the access check.
    "leaderboard-upload": {"POST": Rule(SUPERVISOR, slugs=(NLI, QA, PHRASE), ok=(200,), body="multipart-empty")},
    "bias": {"GET": Rule(STAFF, slugs=(NLI,))},
    # The supervisor console (annotation/console/).
    "console-project-new": {"GET": Rule(MANAGER)},
    "console-users": {"GET": Rule(MANAGER)},
    "console-project-settings": {"GET": Rule(SUPERVISOR, slugs=ALL)},
    "audit": {"GET": Rule(SUPERVISOR, slugs=ALL)},
    "console-items": {"GET": Rule(STAFF, slugs=ALL)},
    "console-item": {"GET": Rule(STAFF)},
    "console-preview": {"GET": Rule(STAFF, slugs=ALL)},
    "release": {"GET": Rule(STAFF, slugs=(NLI, LABEL, QA))},
    "releases": {"GET": Rule(SUPERVISOR)},
    # --- API ---
    "schema": {"GET": Rule(PUBLIC, query="?format=json")},
    "api-docs": {"GET": Rule(PUBLIC)},
    "api-token": {
        "POST": Rule(
            {**PUBLIC, "anonymous": 400},
            body=lambda w, role: {"username": USERNAMES.get(role, ""), "password": PASSWORD},
        )
    },
    # Signing out of the API: the caller's own token, whoever they are.
    "api-token-current": {"DELETE": Rule(SIGNED_IN, ok=(204,))},
    # The admin's login page (under the login throttle): open to all, staff are sent on.
    "admin/login/": {"GET": Rule(PUBLIC, ok=(200, 302))},
    "api-users": {
        "POST": Rule(MANAGER, ok=(201,), body={"username": "sec-new-user", "password": "a-Long-pass-phrase-42"})
    },
    "api-projects": {
        "GET": Rule(SIGNED_IN),
        "POST": Rule(
            MANAGER, ok=(201,), body={"slug": "sec-new", "name": "New", "kind": "nli_relabel", "language": "he"}
        ),
    },
    "api-project": {"GET": Rule(MEMBER, slugs=ALL), "PATCH": Rule(SUPERVISOR, slugs=ALL, body={"name": "Renamed"})},
    "api-audit": {"GET": Rule(SUPERVISOR, slugs=ALL, query="?action=settings_change")},
    # A supervisor resets the passwords of the accounts they created that never logged in:
    # the annotator's is the supervisor's invitation, not the other supervisor's.
    "api-user-password": {
        "POST": Rule({**MANAGER, "other_supervisor": "hidden"}, ok=(204,), body={"password": "a-Long-pass-phrase-42"})
    },
    "api-preview": {"GET": Rule(STAFF, slugs=ALL, ok=(200, 204))},
    "api-members": {
        "GET": Rule(STAFF, slugs=ALL),
        "POST": Rule(SUPERVISOR, ok=(201,), body={"username": "sec-helper", "role": "annotator"}),
    },
    "api-member": {"PATCH": Rule(SUPERVISOR, body={"trusted": True})},
    "api-import": {"POST": Rule(SUPERVISOR, ok=(201,), body="import")},
    "api-items": {"GET": Rule(STAFF, slugs=ALL)},
    "api-next": {"GET": Rule(ANNOTATOR, slugs=ALL)},
    "api-progress": {"GET": Rule(ANNOTATOR, slugs=ALL)},
    "api-revisions": {"GET": Rule({**MEMBER, "disqualified": "refused"}, slugs=(NLI,))},
    "api-item-revise": {"POST": Rule({**OWNER, "disqualified": "refused"}, body={"hypothesis": "השערה מתוקנת"})},
    "api-submit": {"POST": Rule(CLAIMANT, ok=(201,), body={"value": {"label": "neutral"}})},
    "api-skip": {"POST": Rule(CLAIMANT, ok=(204,))},
    "api-heartbeat": {"POST": Rule(CLAIMANT)},
    "api-draft": {"GET": Rule(CLAIMANT), "PUT": Rule(CLAIMANT, body={"value": {"questions": []}})},
    "api-mine": {"GET": Rule(MEMBER, slugs=ALL)},
    # The world's annotation may sit in a decided round (409, after the access check).
    "api-annotation": {"PATCH": Rule(OWNER, ok=(200, 409), body={"value": {"label": "neutral"}})},
    "api-job": {"GET": Rule(JOB_VIEWER, slugs=ALL)},
    "api-export": {"GET": Rule(STAFF, slugs=ALL, query="?format=jsonl&status=all")},
    "api-agreement": {"GET": Rule(STAFF, slugs=ALL), "POST": Rule(SUPERVISOR, slugs=(NLI, MT, SUM), ok=(202,))},
    "api-report": {"GET": Rule(STAFF, slugs=ALL)},
    # No analysis has run in the world (404 for staff, after the access check); its items
    # have no gold labels in train, so starting one is refused as bad input.
    "api-bias": {
        "GET": Rule(STAFF, slugs=(NLI, QA), ok=(404,)),
        "POST": Rule(SUPERVISOR, slugs=(NLI, QA), ok=(400,), body={"split": "train"}),
    },
    "api-reviews-pending": {"GET": Rule(STAFF, slugs=(QA,))},
    "api-annotation-review": {
        "POST": Rule(STAFF, slugs=(QA,), ok=(201,), body={"grade": "gold", "comment": "טוב", "question": 1})
    },
    "api-feedback": {"GET": Rule(SIGNED_IN)},
    "api-feedback-read": {"POST": Rule(OWNER)},
    "api-validation-next": {"GET": Rule(VALIDATOR, slugs=(QA,), ok=(200, 204))},
    # The author of the question may not validate it; everyone else answers it once.
    "api-validation-submit": {
        "POST": Rule(
            {**VALIDATOR, "annotator": "refused"},
            slugs=(QA,),
            ok=(201,),
            body=lambda w, role: {
                "annotation": w.annotations[QA]["annotator"],
                "question": 0,
                "answerable": False,
                "answer": None,
            },
        )
    },
    "api-question-export": {"GET": Rule(STAFF, slugs=(QA,), query="?format=squad")},
    "api-question-audit": {
        "GET": Rule(SUPERVISOR, slugs=(QA,)),
        "POST": Rule(SUPERVISOR, slugs=(QA,), ok=(201,), body={"per_source": 1, "seed": 1}),
    },
    # An empty verdict: refused as bad input once access is granted, so no sample is needed.
    "api-question-audit-mark": {
        "POST": Rule(SUPERVISOR, slugs=(QA,), ok=(400,), body={}, kwargs={"audit_id": 987654321})
    },
    # The minimal body is refused as bad input (400) only after the access check.
    "api-import-lchaim": {"POST": Rule(SUPERVISOR, slugs=(MT,), ok=(400,), body="multipart-empty")},
    "api-sample": {"POST": Rule(SUPERVISOR, slugs=(MT,), ok=(409,), body={"n": 1})},  # rating has started
    "api-back-translation": {
        "POST": Rule(SUPERVISOR, slugs=(MT,), ok=(202, 400))
    },  # 400 without the embeddings package
    # The world's items were not removed by the filter: the body is refused after the access check.
    "api-back-translation-restore": {"POST": Rule(SUPERVISOR, slugs=(MT,), ok=(400,), body={"items": [1]})},
    "api-ratings-export": {"GET": Rule(STAFF, slugs=(MT,), query="?format=jsonl")},
    "api-export-phrasis": {"GET": Rule(STAFF, slugs=(PHRASE,))},
    # Dataset release, curation (api/urls.py).
    "api-duplicates": {
        "GET": Rule(STAFF, slugs=(NLI, LABEL, MT)),
        "POST": Rule(SUPERVISOR, slugs=(NLI, LABEL, MT), ok=(202,)),
    },
    "api-duplicates-remove-all": {"POST": Rule(SUPERVISOR, slugs=(NLI,))},
    # The world's items were not removed as near-duplicates: refused after the access check.
    "api-duplicates-restore": {"POST": Rule(SUPERVISOR, slugs=(NLI,), ok=(400,), body={"items": [1]})},
    # The world has no pair: the supervisor's answer is the 404 of a missing pair.
    "api-duplicate": {
        "POST": Rule(SUPERVISOR, slugs=(NLI,), ok=(404,), body={"decision": "keep"}, kwargs={"pair_id": 987654321})
    },
    "api-splits": {"GET": Rule(STAFF, slugs=(NLI, QA)), "POST": Rule(SUPERVISOR, slugs=(NLI, QA), ok=(202,))},
    "api-leaks": {"GET": Rule(STAFF, slugs=(NLI, QA)), "POST": Rule(SUPERVISOR, slugs=(NLI, QA), ok=(202,))},
    "api-intrinsic": {"GET": Rule(STAFF, slugs=(SUM,)), "POST": Rule(SUPERVISOR, slugs=(SUM,), ok=(202,))},
    "api-annotators": {"GET": Rule(SUPERVISOR, slugs=ALL)},
    "api-adjudication": {"GET": Rule(SUPERVISOR, slugs=ALL)},
    # The item is the failed pair waiting for its author in sec-nli.
    "api-item-adjudicate": {"POST": Rule(SUPERVISOR, ok=(201,), body={"label": "neutral", "comment": "הוכרע"})},
    # The same item's decision ledger: reviewers read it (with pseudonyms); a supervisor's
    # reopen starts a new round, so a second caller's finds nothing decided (409).
    "api-item-decisions": {"GET": Rule(STAFF)},
    "api-item-reopen": {"POST": Rule(SUPERVISOR, ok=(201, 409), body={"reason": "בדיקה חוזרת"})},
    # Its text history (staff read it); a supervisor's text edit of the pair, which is not
    # accepted (it waits for its author), is a 409 after the access check.
    "api-item-revisions": {"GET": Rule(STAFF)},
    "api-item-text": {"POST": Rule(SUPERVISOR, ok=(409,), body={"changes": {"premise": "פרמיסה"}, "reason": "איות"})},
    # Answer corrections are for question projects: on the NLI pair, a validator's request is
    # refused as bad input (400 naming the item) only after the access check.
    "api-answer-correction": {"POST": Rule(VALIDATOR, ok=(400,), body={})},
    # Model evaluation: the minimal bodies (no file; ids of no evaluation) are refused as bad
    # input only after the access check.
    "api-evaluations": {
        "GET": Rule(STAFF, slugs=(NLI, QA, PHRASE, LABEL)),
        "POST": Rule(SUPERVISOR, slugs=(NLI, QA, PHRASE), ok=(400,), body="multipart-empty"),
    },
    "api-evaluation": {"GET": Rule(STAFF, slugs=(NLI, QA, PHRASE))},
    # Prediction sets and the built-in model: supervisors only, for the kinds with a closed
    # label set. The minimal upload (no file) is refused as bad input after the access check;
    # a second training run while one waits is a 409.
    "api-predictions": {
        "GET": Rule(SUPERVISOR, slugs=(NLI, LABEL, PHRASE)),
        "POST": Rule(SUPERVISOR, slugs=(NLI, LABEL, PHRASE), ok=(400,), body="multipart-empty"),
    },
    "api-model-train": {"POST": Rule(SUPERVISOR, slugs=(NLI, LABEL, PHRASE), ok=(202, 409))},
    "api-evaluation-compare": {"GET": Rule(STAFF, slugs=(NLI, PHRASE), ok=(400,), query="?a=987654321&b=987654322")},
    # Releases and webhooks: supervisors only. The minimal bodies (no version; no url) are
    # refused only after the access check; versions and ids of nothing are a 404 after it.
    "api-releases": {"GET": Rule(SUPERVISOR, slugs=ALL), "POST": Rule(SUPERVISOR, slugs=ALL, ok=(400,))},
    "api-release": {"GET": Rule(SUPERVISOR, ok=(404,), kwargs={"version": "9.9"})},
    "api-release-download": {"GET": Rule(SUPERVISOR, ok=(404,), kwargs={"version": "9.9"})},
    "api-release-diff": {"GET": Rule(SUPERVISOR, ok=(404,), kwargs={"version": "9.9", "other": "9.8"})},
    "api-webhooks": {"GET": Rule(SUPERVISOR), "POST": Rule(SUPERVISOR, ok=(400,))},
    "api-webhook": {
        "GET": Rule(SUPERVISOR, ok=(404,), kwargs={"webhook_id": 987654321}),
        "DELETE": Rule(SUPERVISOR, ok=(404,), kwargs={"webhook_id": 987654321}),
    },
    "api-webhook-resend": {
        "POST": Rule(SUPERVISOR, ok=(404,), kwargs={"webhook_id": 987654321, "delivery_id": 987654322})
    },
}
ADMIN_NAMESPACE = "admin"  # Django's admin site: one rule for all of its routes


# --- the URL patterns -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    name: str  # "namespace:name", or the pattern for an unnamed one
    pattern: object  # the URLPattern
    regex: str  # the full regex, for reverse-free filling
    prefix: str


def all_routes() -> list[Route]:
    from django.urls import URLPattern, URLResolver, get_resolver

    found = []

    def walk(resolver, prefix: str, namespace: str | None):
        for entry in resolver.url_patterns:
            if isinstance(entry, URLResolver):
                walk(entry, prefix + str(entry.pattern), entry.namespace or namespace)
            elif isinstance(entry, URLPattern):
                name = entry.name or str(entry.pattern)
                found.append(
                    Route(f"{namespace}:{name}" if namespace else name, entry, prefix + str(entry.pattern), prefix)
                )

    walk(get_resolver(), "", None)
    return found


def api_operations() -> set[tuple[str, str]]:
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    return {(path, method.upper()) for path, operations in schema["paths"].items() for method in operations}


# --- cases ---------------------------------------------------------------------------------------


def cases():
    out = []
    for name, methods in ROUTES.items():
        for method, rule in methods.items():
            for slug in rule.slugs:
                for role in ROLES:
                    marks = [pytest.mark.xfail(strict=True, reason=rule.xfail[role])] if role in rule.xfail else []
                    out.append(pytest.param(name, method, slug, role, marks=marks, id=f"{name}-{method}-{slug}-{role}"))
    return out


def admin_cases():
    names = sorted({r.name for r in all_routes() if r.name.startswith(f"{ADMIN_NAMESPACE}:")})
    return [pytest.param(name, role, id=f"{name}-{role}") for name in names for role in ROLES]


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """Built once for the module inside a transaction that is rolled back at the end; every
    test runs in a savepoint of it (pytest-django's `db`), so writes never reach the next."""
    from django.core.cache import cache
    from django.db import transaction

    with django_db_blocker.unblock():
        cache.clear()  # login throttles
        with transaction.atomic():
            built = build_world(planted)
            yield built
            transaction.set_rollback(True)


def is_api(route_name: str) -> bool:
    return route_name.startswith("api-") or route_name in ("schema",)


def fill(route: Route, world, slug: str, role: str, rule: Rule | None, *, missing: bool = False) -> str:
    """The URL of `route` with real objects of `slug` (or objects that do not exist)."""
    from django.contrib.contenttypes.models import ContentType

    def value(param: str):
        if rule is not None and param in rule.kwargs:
            return rule.kwargs[param]
        if missing:
            return {"slug": "no-such-project", "username": "nobody"}.get(param, 987654321)
        owner = role if role in ("annotator", "disqualified") else "annotator"
        if param == "slug":
            return slug
        if param == "username":
            return USERNAMES["annotator"]
        if param == "item_id":
            return world.revisable[owner]
        if param == "assignment_id":
            return world.claims[slug][role if role in ANNOTATING else "annotator"]
        if param == "annotation_id":
            return world.annotations[slug]["annotator"]
        if param == "feedback_id":
            return world.feedback["annotator"]
        if param == "job_id":
            return world.jobs[slug]
        if param == "evaluation_id":
            return evaluation_of(world, slug)
        # the admin site's parameters
        if param in ("object_id", "id"):
            return world.users["annotator"].pk
        if param == "content_type_id":
            return ContentType.objects.get(app_label="auth", model="user").pk
        if param == "app_label":
            return "auth"
        if param == "url":
            return "nothing/"
        raise AssertionError(f"no value for path parameter {param!r} of {route.name}")

    path = route.regex
    path = re.sub(r"<(?:\w+:)?(\w+)>", lambda m: str(value(m.group(1))), path)
    path = re.sub(r"\^?\(\?P<(\w+)>[^)]*\)\$?", lambda m: str(value(m.group(1))), path)
    return "/" + path.replace("^", "").replace("$", "")


def evaluation_of(world, slug: str) -> int:
    """A model evaluation of the project (made on first use, inside the test's savepoint)."""
    from annotation.models import Evaluation

    project = world.projects[slug]
    name = planted(slug, "model")
    return Evaluation.objects.get_or_create(project=project, name=name, defaults={"digest": "0" * 64})[0].pk


def client_for(world, role: str, api: bool):
    from django.test import Client
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    if api:
        client = APIClient()
        if role != "anonymous":
            client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get(user=world.users[role]).key}")
        return client
    client = Client()
    if role != "anonymous":
        client.force_login(world.users[role])
    return client


def send(client, method: str, url: str, body, api: bool):
    if body == "import":
        handle = io.BytesIO(IMPORT_LINE[NLI].encode())
        handle.name = "new.jsonl"
        return client.post(url, {"file": handle, "format": "jsonl"})
    if body == "multipart-empty":
        return client.post(url, {"split": ""})
    call = getattr(client, method.lower())
    if body is None:
        return call(url)
    if api:
        return call(url, body, format="json")
    return call(url, body)


def content_of(response) -> bytes:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content)
    return response.content


def member_slugs(world, role: str) -> set[str]:
    """The projects whose texts `role` may read: all for the admin; for others those they
    are a member of, except where they are a disqualified supervisor or reviewer."""
    from annotation.models import Membership

    if role == "anonymous":
        return set()
    if role == "admin":
        return set(world.projects)
    memberships = Membership.objects.filter(user=world.users[role]).exclude(
        role__in=("supervisor", "reviewer"), status="disqualified"
    )
    return set(memberships.values_list("project__slug", flat=True))


def assert_no_foreign_marker(world, role: str, body: bytes, what: str):
    text = body.decode("utf-8", "replace")
    for slug in set(world.projects) - member_slugs(world, role):
        assert marker(slug) not in text, f"{what}: {role} sees text of {slug}"


NAMED_TO = ("supervisor", "other_supervisor", "admin")  # callers who see usernames


def assert_no_other_username(role: str, body: bytes, url: str):
    """Only supervisors and admins read other people's usernames; anyone else reads
    pseudonyms (or nothing) where a person is shown. (The URL the caller asked for, which
    an error page may repeat, is theirs.)"""
    if role in NAMED_TO:
        return
    text = body.decode("utf-8", "replace").replace(url, "")
    for other, name in [*USERNAMES.items(), ("helper", HELPER)]:
        if other != role:
            found = re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text)
            assert found is None, f"{url}: {role} sees the username {name}"


def check(outcome, response, body: bytes, rule: Rule, api: bool, missing_body=None):
    code = response.status_code
    assert code != 500
    if outcome == "ok":
        assert code in rule.ok, (code, body[:400])
        if code == 302 and not rule.ends_at_login:
            assert not response["Location"].startswith(("/login/", "/admin/login/")), response["Location"]
    elif outcome == "anon":
        if api:
            assert code == 401, (code, body[:300])
        else:
            assert code == 302 and response["Location"].startswith("/login/?next="), (code, response.get("Location"))
    elif outcome == "login-admin":
        assert code == 302 and response["Location"].startswith("/admin/login/"), (code, response.get("Location"))
    elif outcome == "refused":
        assert code == 403, (code, body[:300])
    elif outcome == "hidden":
        assert code == 404, (code, body[:300])
        assert body == missing_body, "a hidden object is answered differently from a missing one"
    else:
        assert code == outcome, (code, body[:300])


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "method", "slug", "role"), cases())
def test_route_role_matrix(world, name, method, slug, role):
    routes = {r.name: r for r in all_routes()}
    route, rule = routes[name], ROUTES[name][method]
    api = is_api(name)
    outcome = rule.policy[role]
    body = rule.body(world, role) if callable(rule.body) else rule.body
    url = fill(route, world, slug, role, rule) + rule.query
    response = send(client_for(world, role, api), method, url, body, api)
    content = content_of(response)
    missing_body = None
    if outcome == "hidden":
        missing_url = fill(route, world, slug, role, rule, missing=True) + rule.query
        missing_body = content_of(send(client_for(world, role, api), method, missing_url, body, api))
    check(outcome, response, content, rule, api, missing_body)
    assert_no_foreign_marker(world, role, content, f"{method} {url}")
    assert_no_other_username(role, content, url)


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "role"), admin_cases())
def test_admin_site_is_for_staff_only(world, name, role):
    """Non-staff callers only ever reach the admin site's login page; staff without model
    permissions get at most the index (403 on the models)."""
    route = {r.name: r for r in all_routes()}[name]
    response = client_for(world, role, api=False).get(fill(route, world, NLI, role, None))
    unauthenticated_views = ("admin:login", "admin:logout", "admin:jsi18n")
    if name in unauthenticated_views:
        assert response.status_code in (200, 302, 405)
    elif role == "admin":
        assert response.status_code in (200, 302, 403, 404)
    else:
        assert response.status_code == 302 and response["Location"].startswith("/admin/login/"), (
            response.status_code,
            response.get("Location"),
        )
    assert_no_foreign_marker(world, role, response.content, name)


def test_every_route_and_operation_is_classified():
    """A new URL pattern or API operation fails here until ROUTES says who may call it."""
    routes = all_routes()
    names = {r.name for r in routes}
    unclassified = sorted(n for n in names if n not in ROUTES and not n.startswith(f"{ADMIN_NAMESPACE}:"))
    assert unclassified == [], f"routes without a row in ROUTES: {unclassified}"
    assert sorted(set(ROUTES) - names) == [], "rows for routes that no longer exist"
    by_api_path = {}
    for route in routes:
        if route.regex.startswith("api/"):
            path = "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route.regex)
            by_api_path[path] = route.name
    missing = []
    for path, method in sorted(api_operations()):
        name = by_api_path.get(path)
        if name is None or method not in ROUTES.get(name, {}):
            missing.append(f"{method} {path}")
    assert missing == [], f"API operations without a rule: {missing}"


@pytest.mark.django_db
def test_cross_project_relabel_link_is_refused(world):
    """A supervisor may not link an nli_authoring project to a relabel project they do not
    supervise (the authored items would be written into it): refused like a missing project,
    nothing stored."""
    from annotation.models import Project

    client = client_for(world, "supervisor", api=True)

    def create(slug, target):
        return client.post(
            "/api/projects/",
            {
                "slug": slug,
                "name": "Linked",
                "kind": "nli_authoring",
                "language": "he",
                "settings": {"relabel_project": target},
            },
            format="json",
        )

    theirs, missing = create("sec-linked-a", OTHER_SLUG), create("sec-linked-b", "no-such-project")
    assert missing.status_code in (400, 404)
    assert theirs.status_code == missing.status_code, theirs.content
    assert not Project.objects.filter(slug__startswith="sec-linked").exists()
