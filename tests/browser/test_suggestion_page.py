"""The annotate page with a model's suggestion (docs/kinds.md "Model in the loop") in a real
browser, on right-to-left text at 1366 and 390 px: the suggestion is shown only where the
project's `suggestions` setting is on, marked as a model's in the interface language, named
as the label button names it, with its probability, inside the screen; taking it or not is
recorded with the answer. Screenshots: tests/browser/artifacts/suggestion_<lang>_<width>.png."""

import json

import pytest

from tests.browser.helpers import PASSWORD, expect, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ZWNJ = "\u200c"
ITEMS = {
    "fa": {
        "id": "fa-s1",
        "premise": f"کتاب{ZWNJ}خانه{ZWNJ}ی شهر از ساعت ۸ تا ۲۰ باز است.",
        "hypothesis": "کتابخانه صبح باز است.",
    },
    "he": {"id": "he-s1", "premise": "הספרייה העירונית פתוחה מ-8 עד 20.", "hypothesis": "הספרייה פתוחה בבוקר."},
}
# What the page says, in each interface language (locale/<lang>): the mark and the label's name.
MARK = {"fa": "پیشنهاد یک مدل", "he": "הצעה של מודל"}
ENTAILMENT = {"fa": "استلزام", "he": "נובע"}
# The probability as the page writes numbers in the interface language (Persian digits in fa).
SEVENTY = {"fa": "(۷۰٪)", "he": "(70%)"}
SCORES = {"entailment": 0.7, "neutral": 0.2, "contradiction": 0.1}


@pytest.fixture
def world(transactional_db, live_server):
    """Per language an nli_relabel project deciding by majority with suggestions on (and
    one with them off), one item each, predicted entailment at 70 %; one annotator."""
    from django.contrib.auth import get_user_model

    from annotation.models import Item, Membership
    from annotation.release.prediction_sets import prediction_set_store
    from annotation.services.imports import items_import
    from annotation.services.projects import project_create

    User = get_user_model()
    admin = User.objects.create_user(username="sugg-admin", password=PASSWORD, is_staff=True)
    annotator = User.objects.create_user(username="sugg-ann", password=PASSWORD)
    for lang, item in ITEMS.items():
        for suffix, on in (("on", True), ("off", False)):
            project = project_create(
                actor=admin,
                slug=f"{lang}-sugg-{suffix}",
                name=f"{lang} suggestions {suffix}",
                kind="nli_relabel",
                language=lang,
                settings={"aggregation": "majority", "suggestions": on},
            )
            Membership.objects.create(project=project, user=annotator, role="annotator", status="active")
            items_import(
                project=project, data=(json.dumps(item, ensure_ascii=False) + "\n").encode(), fmt="jsonl", user=admin
            )
            stored = Item.objects.get(project=project)
            prediction_set_store(project=project, name="model", rows={stored.pk: ("entailment", SCORES, 0.5)})
    return live_server.url


def recorded(slug):
    from annotation.models import Annotation

    return [
        (a.value["label"], a.suggested_label, a.suggestion_taken)
        for a in Annotation.objects.filter(item__project__slug=slug)
    ]


@pytest.mark.parametrize("width", [1366, 390])
@pytest.mark.parametrize("lang", ["fa", "he"])
def test_the_suggestion_is_shown_marked_in_the_screen_and_recorded(world, page, lang, width, artifacts_dir):
    page.set_viewport_size({"width": width, "height": 844})
    login(page, world, "sugg-ann", language=lang)
    page.goto(f"{world}/p/{lang}-sugg-on/annotate/")
    box = page.locator("#suggestion")
    expect(box).to_be_visible()
    expect(page.locator("#premise")).to_have_text(ITEMS[lang]["premise"])
    text = box.inner_text()
    assert MARK[lang] in text
    # Named as the entailment button names it (its words, without the key), and its share.
    assert ENTAILMENT[lang] in page.locator('.label-button[data-label="entailment"]').inner_text()
    assert page.locator("#suggestion-label").inner_text() == ENTAILMENT[lang]
    assert page.locator("#suggestion-probability").inner_text() == SEVENTY[lang]
    assert page.evaluate("() => getComputedStyle(document.getElementById('suggestion')).direction") == "rtl"
    rect = box.bounding_box()
    assert rect["x"] >= 0 and rect["x"] + rect["width"] <= width + 0.5
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    page.screenshot(path=str(artifacts_dir / f"suggestion_{lang}_{width}.png"), full_page=True)
    # The annotator does not take it: recorded as shown and not taken.
    with page.expect_response(lambda r: r.url.endswith("/submit/") and r.request.method == "POST") as submitted:
        page.keyboard.press("2")
    assert submitted.value.status == 201
    expect(page.locator("#done")).to_be_visible()
    assert recorded(f"{lang}-sugg-on") == [("neutral", "entailment", False)]

    # Off: the same item and prediction, nothing shown, nothing recorded.
    page.goto(f"{world}/p/{lang}-sugg-off/annotate/")
    expect(page.locator("#premise")).to_have_text(ITEMS[lang]["premise"])
    expect(page.locator("#suggestion")).to_be_hidden()
    with page.expect_response(lambda r: r.url.endswith("/submit/") and r.request.method == "POST"):
        page.keyboard.press("1")
    expect(page.locator("#done")).to_be_visible()
    assert recorded(f"{lang}-sugg-off") == [("entailment", None, None)]
    page.problems.assert_clean(page)
