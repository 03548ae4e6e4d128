"""The latest model predictions on the supervisor's item browser and item page, in a real
browser (Hebrew interface, a Hebrew project from LCHAIM's dev sample): the column and the
item's row read in Hebrew, right to left, at 1366 and 390 px without sideways scrolling,
with no CSP violation or JavaScript error."""

import json

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import PASSWORD, login
from tests.console.test_browser import _import_sample, assert_clean_but_refusals, shoot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_predictions_on_the_item_browser_and_item_page_in_hebrew(transactional_db, live_server, page, artifacts_dir):
    from django.contrib.auth import get_user_model

    from annotation.models import Item, Membership
    from annotation.release.prediction_sets import prediction_set_upload
    from annotation.services.projects import project_create

    users = get_user_model().objects
    sup = users.create_user(username="sup-he", password=PASSWORD)
    project = project_create(actor=users.create_user(username="root", password=PASSWORD, is_staff=True),
                             slug="he-pred", name="תחזיות", kind="nli_relabel", language="he")  # fmt: skip
    Membership.objects.create(project=project, user=sup, role="supervisor", status="active")
    _import_sample("he-pred", n=6)
    first = Item.objects.filter(project=project).order_by("position").first()
    rows = [
        {
            "id": first.external_id,
            "label": "contradiction",
            "scores": {"entailment": 0.1, "neutral": 0.3, "contradiction": 0.6},
        }
    ]
    data = "".join(json.dumps(row) + "\n" for row in rows).encode()
    prediction_set_upload(user=sup, slug="he-pred", data=data, filename="p.jsonl", name="מודל בסיס")

    base = live_server.url
    page.context.add_cookies([{"name": "django_language", "value": "he", "url": base}])
    login(page, base, "sup-he")
    page.goto(f"{base}/console/p/he-pred/items/")
    assert page.evaluate("document.documentElement.dir") == "rtl"
    expect(page.locator("th", has_text="תחזית המודל")).to_be_visible()
    expect(page.locator("#prediction-set")).to_contain_text("מודל בסיס")
    expect(page.locator("#prediction-set")).to_contain_text("גרסה 1")
    expect(page.locator("td.prediction").first).to_contain_text("contradiction")
    shoot(page, artifacts_dir, "predictions_items")
    page.goto(f"{base}/console/p/he-pred/items/{first.pk}/")
    expect(page.locator("#prediction")).to_contain_text("תחזית המודל")
    expect(page.locator("#prediction")).to_contain_text("0.60")
    shoot(page, artifacts_dir, "predictions_item")
    assert_clean_but_refusals(page)
