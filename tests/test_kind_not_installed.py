"""A project whose kind is not installed (its code left out of `MASHOV_KINDS`, say after a
site removed a kind it once offered) answers cleanly everywhere (docs/kinds.md "A project
whose kind is not installed"): the project list shows it marked, its pages a translated
message with a way back (409), its API the JSON error body naming the kind (409), and the
jobs pass it over. Projects of the installed kinds go on as before.

One project of every kind is built with all kinds installed (tests/security/world.py), then
each kind in turn is left out and every route of the site is walked for its project and for
a project of another kind."""

import re

import pytest

from tests.kinds_installed import all_kind_codes, kinds_setting_without, reload_urlconf
from tests.security.world import KIND_SLUGS, USERNAMES, build_world

# Filler for path parameters that name no object of the world.
NOTHING = 987654321


def _text(slug: str, name: str) -> str:
    return f"{slug} {name}"


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """Built once, inside a transaction rolled back at the end; each test runs in a savepoint."""
    from django.core.cache import cache
    from django.db import transaction

    with django_db_blocker.unblock():
        cache.clear()
        with transaction.atomic():
            yield build_world(_text)
            transaction.set_rollback(True)


@pytest.fixture
def without(settings):
    """`without(code)`: the site installs every kind but `code`, URLconf included."""
    full = list(settings.MASHOV_KINDS)

    def leave_out(code: str) -> None:
        settings.MASHOV_KINDS = kinds_setting_without(code)
        reload_urlconf()

    yield leave_out
    settings.MASHOV_KINDS = full
    reload_urlconf()


def _routes() -> list[str]:
    """The path pattern of every route the site mounts now, the admin site's left out."""
    from django.urls import URLPattern, URLResolver, get_resolver

    found = []

    def walk(resolver, prefix: str):
        for entry in resolver.url_patterns:
            if isinstance(entry, URLResolver):
                if entry.namespace != "admin":
                    walk(entry, prefix + str(entry.pattern))
            elif isinstance(entry, URLPattern):
                found.append(prefix + str(entry.pattern))

    walk(get_resolver(), "")
    return found


def _objects_of(world, slug: str) -> dict:
    """Path parameter → an object of project `slug` (the filler where it has none)."""
    from annotation.models import Evaluation, Item

    project = world.projects[slug]
    item = Item.objects.filter(project=project).order_by("pk").first()
    evaluation = Evaluation.objects.get_or_create(project=project, name="model", defaults={"digest": "0" * 64})[0]
    return {
        "slug": slug,
        "item_id": item.pk,
        "assignment_id": world.claims[slug]["annotator"],
        "annotation_id": world.annotations[slug]["annotator"],
        "job_id": world.jobs[slug],
        "evaluation_id": evaluation.pk,
        "feedback_id": world.feedback.get("annotator", NOTHING),
        "username": USERNAMES["annotator"],
    }


def _fill(pattern: str, values: dict) -> str | None:
    """The URL of `pattern` with `values`; None where `values` is given and the route has no
    parameter to fill (the same for every project), or where it is empty and the route has."""
    names = re.findall(r"<(?:\w+:)?(\w+)>", pattern)
    path = re.sub(r"<(?:\w+:)?(\w+)>", lambda m: str(values.get(m.group(1), NOTHING)), pattern)
    path = re.sub(r"\^?\(\?P<(\w+)>[^)]*\)\$?", lambda m: str(values.get(m.group(1), NOTHING)), path)
    return "/" + path.replace("^", "").replace("$", "") if bool(names) == bool(values) else None


def _clients(world):
    from django.test import Client
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    clients = {}
    for role in ("supervisor", "annotator", "admin"):
        page = Client()
        page.force_login(world.users[role])
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get(user=world.users[role]).key}")
        clients[role] = (page, api)
    return clients


def _body(response) -> str:
    content = b"".join(response.streaming_content) if getattr(response, "streaming", False) else response.content
    return content.decode("utf-8", errors="replace")


def _walk(clients, urls, methods=("GET", "POST")):
    """(role, method, url, status, body) of every request."""
    for url in urls:
        for role, (page, api) in clients.items():
            client = api if url.startswith("/api/") else page
            for method in methods:
                response = getattr(client, method.lower())(url)
                yield role, method, url, response.status_code, _body(response)


def _is_kind_refusal(url: str, status: int, body: str, code: str) -> bool:
    if status != 409:
        return False
    if url.startswith("/api/"):
        return bool(re.search(r'"field":\s*"kind"', body)) and code in body
    return 'id="kind-not-installed"' in body and code in body


@pytest.mark.django_db
@pytest.mark.parametrize("missing", all_kind_codes())
def test_every_route_answers_cleanly_for_a_project_whose_kind_is_not_installed(world, without, missing):
    slug = KIND_SLUGS[missing]
    objects = _objects_of(world, slug)
    without(missing)
    clients = _clients(world)
    crashed, refused = [], set()
    for role, method, url, status, body in _walk(clients, filter(None, (_fill(p, objects) for p in _routes()))):
        if status >= 500 or "Traceback" in body:
            crashed.append((role, method, url, status))
        if _is_kind_refusal(url, status, body, missing):
            refused.add((role, url))
        elif status == 409 and "not installed" in body:
            crashed.append((role, method, url, "a refusal without the kind's code or the error shape"))
    assert crashed == []
    # The project's core pages and API routes say which kind is missing, to every member.
    for role in ("supervisor", "admin"):
        for url in (
            f"/p/{slug}/",
            f"/console/p/{slug}/settings/",
            f"/api/projects/{slug}/",
            f"/api/projects/{slug}/report/",
        ):
            assert (role, url) in refused, (role, url)
    for url in (f"/p/{slug}/annotate/", f"/api/projects/{slug}/next/", f"/api/projects/{slug}/progress/"):
        assert ("annotator", url) in refused, url
    submit = f"/api/assignments/{objects['assignment_id']}/submit/"
    response = clients["annotator"][1].post(submit, {"value": {"label": "x"}}, format="json")
    assert _is_kind_refusal(submit, response.status_code, _body(response), missing)


@pytest.mark.django_db
@pytest.mark.parametrize("missing", all_kind_codes())
def test_projects_of_installed_kinds_serve_beside_one_whose_kind_is_not(world, without, missing):
    other = next(code for code in KIND_SLUGS if code != missing)
    objects = _objects_of(world, KIND_SLUGS[other])
    without(missing)
    clients = _clients(world)
    urls = [url for url in (_fill(p, objects) for p in _routes()) if url] + [_fill(p, {}) for p in _routes()]
    urls = [url for url in urls if url]
    bad = [
        (role, url, status)
        for role, method, url, status, body in _walk(clients, urls, methods=("GET",))
        if status >= 500 or "Traceback" in body or (status == 409 and "not installed" in body)
    ]
    assert bad == []
    page, api = clients["supervisor"]
    assert page.get(f"/p/{KIND_SLUGS[other]}/").status_code == 200
    assert api.get(f"/api/projects/{KIND_SLUGS[other]}/").status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("language", ["en", "he", "fa"])
def test_the_project_list_marks_the_project_and_its_page_says_why_in_the_interface_language(world, without, language):
    from django.test import Client
    from django.utils import translation

    missing = "summary_rating"
    slug = KIND_SLUGS[missing]
    without(missing)
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(world.users["supervisor"])
    with translation.override(language):
        marker = translation.gettext("kind not installed")
        heading = translation.gettext("This project's kind is not installed")
        back = translation.gettext("Back to your projects")
    if language != "en":
        assert marker != "kind not installed" and heading != "This project's kind is not installed"
    home = client.get("/")
    assert home.status_code == 200
    row = re.search(rf"<tr[^>]*>(?:(?!</tr>).)*/p/{slug}/(?:(?!</tr>).)*</tr>", home.content.decode(), re.S)
    assert row is not None and marker in row.group(0) and missing in row.group(0)
    page = client.get(f"/p/{slug}/")
    text = page.content.decode()
    assert page.status_code == 409
    assert heading in text and back in text and missing in text and 'href="/"' in text
    # The API's listing still names the project and its kind.
    api = client.get("/api/projects/")
    assert (
        api.status_code == 200
        and {"slug": slug, "kind": missing}.items()
        <= next(p for p in api.json()["results"] if p["slug"] == slug).items()
    )


@pytest.mark.django_db
@pytest.mark.parametrize("missing", all_kind_codes())
def test_jobs_pass_over_a_project_whose_kind_is_not_installed(world, without, missing, settings):
    """The beat sweep, consensus, aggregation, a queued job of the project and webhook
    deliveries run without raising; the project's job ends failed, naming the kind."""
    from annotation import tasks
    from annotation.models import Item, Job, Webhook, WebhookDelivery
    from annotation.services import aggregation, consensus, webhooks

    project = world.projects[KIND_SLUGS[missing]]
    item = Item.objects.filter(project=project).order_by("pk").first()
    Item.objects.filter(pk=item.pk).update(status=Item.Status.COMPLETE)
    project.__class__.objects.filter(pk=project.pk).update(aggregation_requested=5, aggregation_done=0)
    job = Job.objects.create(kind="aggregation", project=project, params={})
    hook = Webhook.objects.create(project=project, url="https://hooks.invalid/x", secret="s" * 32)
    delivery = WebhookDelivery.objects.create(webhook=hook, event="item.decided", body='{"item": 1}')
    settings.CELERY_TASK_ALWAYS_EAGER = True
    without(missing)
    assert consensus.consensus_compute_for_item(item.pk) is None
    assert consensus.consensus_compute_batch([item.pk]) == 0
    assert aggregation.aggregation_request(project.pk) is None
    aggregation.aggregation_sweep()
    tasks.sweep_jobs()
    tasks.run_job(job.pk)
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and missing in str(job.error)
    webhooks.delivery_attempt(delivery.pk)
    Item.objects.get(pk=item.pk)  # nothing was decided for the item
    assert Item.objects.get(pk=item.pk).status == Item.Status.COMPLETE
