"""The Releases page in a real browser (Debian chromium through Playwright): a Persian
project's release listed with its files, checksums and rendered card, RTL, nothing wider than
the screen at 390 px, and the zip downloaded from the page's link. Screenshots:
tests/browser/artifacts/releases_*.png."""

import zipfile
from pathlib import Path

import pytest

from tests.browser.helpers import PASSWORD, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FARSTAIL = Path(__file__).resolve().parents[3] / "shared" / "data" / "farstail"


@pytest.fixture
def released(transactional_db, live_server, settings, tmp_path):
    from django.contrib.auth import get_user_model

    from annotation.models import Membership
    from annotation.release.publish import release_request
    from annotation.services.imports import ImportOptions, items_import
    from annotation.services.projects import project_create

    settings.CELERY_TASK_ALWAYS_EAGER = True  # the release job runs in-process (the embedded default)
    settings.MASHOV_RELEASE_ROOT = str(tmp_path)
    User = get_user_model()
    admin = User.objects.create_user(username="rel-admin", password=PASSWORD, is_staff=True)
    sup = User.objects.create_user(username="rel-sup", password=PASSWORD)
    project = project_create(actor=admin, slug="fa-rel", name="فارس‌تیل", kind="nli_relabel", language="fa")
    Membership.objects.create(project=project, user=sup, role="supervisor", status="active")
    data = (FARSTAIL / "Test-word.csv").read_bytes()
    options = ImportOptions(split="", labels_final=True)
    items_import(project=project, data=data, fmt="farstail", filename="Test-word.csv", user=admin, options=options)
    release = release_request(user=sup, slug="fa-rel", body={"version": "1.0", "license": "cc-by-nc-4.0"})
    release.refresh_from_db()
    assert release.status == "ready", release.error
    return {"url": live_server.url, "release": release}


def test_releases_page_shows_the_card_and_files_rtl_and_downloads_the_zip(released, page, artifacts_dir):
    base, release = released["url"], released["release"]
    login(page, base, "rel-sup", language="fa")
    response = page.goto(f"{base}/p/fa-rel/releases/")
    assert response.status == 200
    assert page.locator("html").get_attribute("dir") == "rtl"
    assert page.locator("h2#h-release-%d" % release.pk).text_content() == "1.0"
    assert page.locator(".release-card h2", has_text="Protocol").is_visible()
    assert page.locator(".release-files td", has_text="data/test.parquet").is_visible()
    # The Table 2-style statistics render as a table per split, a row per label.
    assert page.locator(".release-card h2", has_text="Statistics").is_visible()
    statistics = page.locator(".release-card h3", has_text="test").locator("xpath=following-sibling::table[1]")
    assert statistics.locator("th", has_text="premise tokens").count() == 1
    assert statistics.locator("td", has_text="entailment").count() == 1
    page.screenshot(path=str(artifacts_dir / "releases_rtl.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 800})
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, width
    page.screenshot(path=str(artifacts_dir / "releases_390.png"), full_page=True)
    with page.expect_download() as info:
        page.click("a[href$='/releases/1.0/download/']")
    with zipfile.ZipFile(info.value.path()) as archive:
        readme = archive.read("fa-rel-1.0/README.md").decode()
    assert readme == release.card
