"""HeSum §3.1's import filters on the project page, in a real browser (Debian chromium
through Playwright; fixtures in tests/browser/fixtures.py): a supervisor imports a file with
an English article and a short reference summary through the page's form, and the page says
which rows were held out and why, in Hebrew, right to left, at 1366 and 390 px without
scrolling sideways. Screenshots: tests/browser/artifacts/summary_held_out_*.png."""

import pytest

from tests.browser.helpers import PASSWORD, expect, login
from tests.kinds.summary.test_filters import ROWS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def hesum(transactional_db, live_server):
    from django.contrib.auth import get_user_model

    from annotation.models import Membership
    from annotation.services.projects import project_create

    users = get_user_model().objects
    admin = users.create_user(username="sum-admin", password=PASSWORD, is_staff=True)
    sup = users.create_user(username="sum-sup", password=PASSWORD)
    project = project_create(actor=admin, slug="he-filter", name="דירוג תקצירים", kind="summary_rating", language="he")
    Membership.objects.create(project=project, user=sup, role="supervisor", status="active")
    return {"url": live_server.url, "project": project}


@pytest.mark.parametrize("width", [1366, 390])
def test_the_project_page_lists_held_out_rows_in_hebrew(hesum, page, artifacts_dir, tmp_path, width):
    import json

    from annotation.models import Item

    url = hesum["url"]
    page.set_viewport_size({"width": width, "height": 900})
    login(page, url, "sum-sup", language="he")
    page.goto(f"{url}/p/he-filter/")
    path = tmp_path / "hesum.jsonl"
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in ROWS), encoding="utf-8")
    page.set_input_files("input[type=file][name=file]", str(path))
    page.select_option("select[name=format]", "jsonl")
    with page.expect_navigation():
        page.click("form[action$='/import/'] button[type=submit]")
    notice = page.locator("div.notice[role=status]")
    expect(notice).to_contain_text("3 שורות לא יובאו")
    expect(notice).to_contain_text("הכתבה אינה בעברית (שורות 2)")
    expect(notice).to_contain_text("לתקציר הייחוס יש 9 מילים, פחות מ־11 (שורות 3)")
    expect(page.locator("html")).to_have_attribute("dir", "rtl")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    assert set(Item.objects.filter(project=hesum["project"]).values_list("external_id", flat=True)) == {
        "good-1",
        "no-reference",
        "good-2",
    }
    page.screenshot(path=str(artifacts_dir / f"summary_held_out_{width}.png"), full_page=True)
    page.problems.assert_clean(page)
