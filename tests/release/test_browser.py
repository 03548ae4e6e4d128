"""The Release page in a real browser (Debian chromium through Playwright): a Persian
project's near-duplicate pair shown side by side, RTL, with its text exact; the search, the
remove button and the split assignment driven from the page through the API; at 390 px the
two sides stack. Screenshots: tests/browser/artifacts/release_*.png."""

import csv
from pathlib import Path

import pytest

from tests.browser.helpers import PASSWORD, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FARSTAIL = Path(__file__).resolve().parents[3] / "shared" / "data" / "farstail"


@pytest.fixture
def release_setup(transactional_db, live_server, settings):
    from django.contrib.auth import get_user_model

    from annotation.models import Membership
    from annotation.services.imports import items_import
    from annotation.services.projects import project_create

    settings.CELERY_TASK_ALWAYS_EAGER = True  # the page's jobs run in-process (the embedded default)
    User = get_user_model()
    admin = User.objects.create_user(username="release-admin", password=PASSWORD, is_staff=True)
    sup = User.objects.create_user(username="release-sup", password=PASSWORD)
    project = project_create(actor=admin, slug="fa-release", name="فارس‌تیل", kind="nli_relabel", language="fa")
    Membership.objects.create(project=project, user=sup, role="supervisor", status="active")
    with open(FARSTAIL / "Val-word.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle, delimiter="\t"))[1:10]
    premise, hypothesis = rows[4][0], rows[4][1]
    words = premise.split()
    lines = [f"{p}\t{h}\t{label}" for p, h, label in rows] + [
        f"{' '.join(words[:3] + words[4:])}\t{hypothesis}\t{rows[4][2]}"
    ]
    data = ("premise\thypothesis\tlabel\n" + "\n".join(lines) + "\n").encode()
    assert items_import(project=project, data=data, fmt="farstail", filename="Val-word.csv", user=admin).created == 10
    return {"url": live_server.url, "project": project, "copy": (" ".join(words[:3] + words[4:]), hypothesis)}


def test_release_page_finds_shows_and_removes_a_near_duplicate_rtl(release_setup, page, artifacts_dir):
    from annotation.models import Item

    base = release_setup["url"]
    login(page, base, "release-sup", language="fa")
    response = page.goto(f"{base}/p/fa-release/release/")
    assert response.status == 200
    assert "unsafe-inline" not in response.headers.get("content-security-policy", "")
    assert page.locator("html").get_attribute("dir") == "rtl"
    assert page.locator("html").get_attribute("lang") == "fa"
    assert page.locator("#no-pairs").is_visible()
    # Search from the page: the job runs, the page reloads with the pair.
    with page.expect_navigation():
        page.click("#duplicates-form button[type=submit]")
    page.wait_for_selector(".pair[data-pair]")
    pair = page.locator(".pair[data-pair]").first
    sides = pair.locator(".side")
    assert sides.count() == 2
    copy_premise, copy_hypothesis = release_setup["copy"]
    assert sides.nth(1).locator(".premise").text_content() == copy_premise
    assert sides.nth(1).locator(".hypothesis").text_content() == copy_hypothesis
    assert sides.nth(1).locator(".premise").get_attribute("dir") == "rtl"
    # Side by side: in RTL the earlier item (a) is on the right.
    box_a, box_b = sides.nth(0).bounding_box(), sides.nth(1).bounding_box()
    assert box_a["x"] > box_b["x"] and abs(box_a["y"] - box_b["y"]) < 2
    page.screenshot(path=str(artifacts_dir / "release_pairs_rtl.png"), full_page=True)
    with page.expect_navigation():
        pair.locator("button[data-decision=remove]").click()
    assert Item.objects.get(payload__premise=copy_premise).status == "removed"
    assert page.locator(".pair .side.removed").count() == 1
    # Assign splits from the page; the report shows the realised shares.
    with page.expect_navigation():
        page.click("#splits-form button[type=submit]")
    page.wait_for_selector("#split-report tbody tr")
    assert page.locator("#split-report").text_content().count("train") == 1
    assert set(Item.objects.exclude(status="removed").values_list("split", flat=True)) <= {"train", "dev", "test"}
    # At 390 px the two sides stack.
    page.set_viewport_size({"width": 390, "height": 800})
    box_a, box_b = sides.nth(0).bounding_box(), sides.nth(1).bounding_box()
    assert box_b["y"] > box_a["y"] + box_a["height"] - 1
    page.screenshot(path=str(artifacts_dir / "release_390.png"), full_page=True)
