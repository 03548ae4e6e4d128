"""The translation_rating page in a real browser: blind candidates beside the English
source, rated with the keyboard only; submit stays disabled until every candidate has every
criterion; the English source lays out left to right and the Hebrew candidates right to
left, with mixed Latin/digit runs in the right order. Screenshots in tests/browser/artifacts/."""

import json
import re

import pytest

from tests.browser.helpers import _RECT_JS, PASSWORD, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SYSTEMS = ("amazon-secret-sys", "dicta-secret-sys")
ITEM = {
    "id": "mt-1",
    "source": {
        "premise": "The museum opened a Van Gogh exhibition with 45 paintings in 2024.",
        "hypothesis": "The exhibition has fewer than 50 paintings.",
        "label": "e",
    },
    "candidates": [
        {
            "system": SYSTEMS[0],
            "premise": "המוזיאון פתח ב-2024 תערוכה של Van Gogh עם 45 ציורים.",
            "hypothesis": "בתערוכה יש פחות מ-50 ציורים.",
        },
        {
            "system": SYSTEMS[1],
            "premise": "בשנת 2024 נפתחה במוזיאון תערוכת Van Gogh ובה 45 ציורים.",
            "hypothesis": "בתערוכה פחות מחמישים ציורים.",
        },
    ],
}


@pytest.fixture
def setup(transactional_db, live_server):
    from django.contrib.auth import get_user_model

    from annotation.models import Membership
    from annotation.services.imports import items_import
    from annotation.services.projects import project_create

    User = get_user_model()
    admin = User.objects.create_user(username="mt-admin", password=PASSWORD, is_staff=True)
    rater = User.objects.create_user(username="mt-rater", password=PASSWORD)
    project = project_create(
        actor=admin, slug="he-mt-browser", name="Hebrew MT", kind="translation_rating", language="he"
    )
    Membership.objects.create(project=project, user=rater, role="annotator", status="active")
    items_import(project=project, data=(json.dumps(ITEM, ensure_ascii=False) + "\n").encode(), fmt="jsonl", user=admin)
    return {"url": live_server.url, "rater": rater, "project": project}


def test_rating_with_the_keyboard_and_mixed_direction_layout(setup, page, artifacts_dir):
    from annotation.models import Annotation, Item

    login(page, setup["url"], "mt-rater", language="he")  # a Hebrew rater, Hebrew interface
    page.goto(f"{setup['url']}/p/he-mt-browser/annotate/")
    page.locator("#task").wait_for(state="visible")
    assert page.locator("html").get_attribute("dir") == "rtl" and page.locator("html").get_attribute("lang") == "he"
    html = page.content()
    assert not any(s in html for s in SYSTEMS), "system names must not reach the page"
    # Directions: the English source LTR, the candidates RTL.
    assert page.evaluate("() => getComputedStyle(document.getElementById('source-premise')).direction") == "ltr"
    assert (
        page.evaluate("() => getComputedStyle(document.querySelector('#candidate-0 .candidate-premise')).direction")
        == "rtl"
    )
    # In an RTL page, the candidates column is on the right of the source column.
    cand, src = page.locator("#candidates").bounding_box(), page.locator(".source").bounding_box()
    assert cand["x"] > src["x"] + src["width"] - 1
    # Mixed runs: in the candidate (RTL) "המוזיאון" is right of "Van Gogh", which reads left to right.
    shown = [page.locator(f"#candidate-{d} .candidate-premise").text_content() for d in (0, 1)]
    assert sorted(shown) == sorted(c["premise"] for c in ITEM["candidates"])
    d_first = shown.index(ITEM["candidates"][0]["premise"])
    sel = f"#candidate-{d_first} .candidate-premise"
    museum, van = (
        page.evaluate(_RECT_JS, [sel, "המוזיאון", "whole"]),
        page.evaluate(_RECT_JS, [sel, "Van Gogh", "whole"]),
    )
    assert museum["left"] > van["right"]
    lefts = [c["left"] for c in page.evaluate(_RECT_JS, [sel, "Van Gogh", "chars"])]
    assert lefts == sorted(lefts)
    a, b = (
        page.evaluate(_RECT_JS, ["#source-premise", "museum", "whole"]),
        page.evaluate(_RECT_JS, ["#source-premise", "Van Gogh", "whole"]),
    )
    assert a["right"] < b["left"]  # English reads left to right

    submit = page.locator("#submit")
    # Candidate shown first: 5, 4, 3, yes; second: 2, 2, 1, no — all by keyboard.
    for key in ("Digit5", "Digit4", "Digit3", "KeyY", "Digit2", "Digit2"):
        assert submit.is_disabled()
        page.keyboard.press(key)
    page.keyboard.press("Enter")  # incomplete: nothing is sent
    assert submit.is_disabled()
    page.keyboard.press("Digit1")
    assert submit.is_disabled()
    page.screenshot(path=str(artifacts_dir / "translation_he_rating.png"), full_page=True)
    with page.expect_response(lambda r: r.request.method == "POST" and re.search(r"/submit/$", r.url)) as sent:
        page.keyboard.press("KeyN")
        assert submit.is_enabled()
        page.keyboard.press("Enter")
    assert sent.value.status == 201
    page.locator("#done").wait_for(state="visible")
    value = Annotation.objects.get(annotator=setup["rater"]).value
    item = Item.objects.get(external_id="mt-1")
    by_system = {item.payload["candidates"][int(i)]["system"]: v for i, v in value["ratings"].items()}
    first_system = ITEM["candidates"][0]["system"] if d_first == 0 else ITEM["candidates"][1]["system"]
    other = next(s for s in SYSTEMS if s != first_system)
    assert by_system[first_system] == {"accuracy": 5, "fluency": 4, "cultural_fit": 3, "label_valid": True}
    assert by_system[other] == {"accuracy": 2, "fluency": 2, "cultural_fit": 1, "label_valid": False}
    page.problems.assert_clean(page)
