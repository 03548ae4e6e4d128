"""Every page of a project's kind is reachable from the project page, and every results page
offers its own "Recompute agreement" (the translation results said "recompute agreement"
while the only button was on the dashboard, which no page linked to)."""

import pytest
from django.urls import reverse
from django.utils.module_loading import import_module

pytestmark = pytest.mark.django_db

PASSWORD = "links-pass-123"


@pytest.fixture
def admin(django_user_model):
    return django_user_model.objects.create_user(username="links-admin", password=PASSWORD, is_staff=True)


def project_of(admin, kind: str):
    from annotation.services.projects import project_create

    return project_create(
        actor=admin, slug=f"links-{kind.replace('_', '-')}", name=f"פרויקט {kind}", kind=kind, language="he"
    )


def kind_pages(project) -> list[str]:
    """The kind's own pages (routes with only the project's slug) that answer a GET with HTML,
    and the agreement dashboard where the kind has one."""
    from annotation.kinds.registry import get_kind

    kind = get_kind(project.kind)
    urls = []
    for module in kind.urls:
        for pattern in import_module(module).urlpatterns:
            if set(pattern.pattern.converters) == {"slug"}:
                urls.append(reverse(pattern.name, kwargs={"slug": project.slug}))
    if kind.computes_agreement or kind.aggregates_by_consensus:
        urls.append(reverse("dashboard", kwargs={"slug": project.slug}))
    return urls


@pytest.mark.parametrize("kind", ["qa_authoring", "nli_authoring", "nli_relabel", "translation_rating", "phrase_pair",
                                  "summary_rating", "label_test"])  # fmt: skip
def test_the_project_page_links_every_page_of_its_kind(client, admin, kind):
    project = project_of(admin, kind)
    client.force_login(admin)
    overview = client.get(f"/p/{project.slug}/").content.decode()
    for url in kind_pages(project):
        response = client.get(url)
        if response.status_code == 200 and response["Content-Type"].startswith("text/html"):
            assert f'href="{url}"' in overview, f"{kind}: the project page does not link {url}"


@pytest.mark.parametrize(("kind", "page"), [
    ("translation_rating", "lchaim-results"), ("phrase_pair", "phrase-coherence"), ("nli_relabel", "dashboard"),
])  # fmt: skip
def test_every_results_page_recomputes_and_comes_back(client, admin, kind, page):
    from annotation.models import Job

    project = project_of(admin, kind)
    client.force_login(admin)
    url = reverse(page, kwargs={"slug": project.slug})
    html = client.get(url).content.decode()
    assert f'action="/p/{project.slug}/dashboard/recompute/"' in html and f'name="back" value="{page}"' in html
    response = client.post(f"/p/{project.slug}/dashboard/recompute/", {"back": page})
    assert response.status_code == 302 and response["Location"] == url
    assert Job.objects.filter(project=project, kind="agreement").count() == 1
    assert "#" in client.get(url).content.decode().split('id="last-recompute"')[1][:200]  # the queued job is shown


def test_recompute_goes_back_only_to_a_results_page(client, admin):
    project = project_of(admin, "translation_rating")
    client.force_login(admin)
    response = client.post(f"/p/{project.slug}/dashboard/recompute/", {"back": "https://elsewhere.example/"})
    assert response["Location"] == f"/p/{project.slug}/dashboard/"


def test_a_kind_without_agreement_shows_no_recompute_button(client, admin):
    project = project_of(admin, "label_test")
    client.force_login(admin)
    assert 'id="recompute-button"' not in client.get(f"/p/{project.slug}/lchaim/").content.decode()
