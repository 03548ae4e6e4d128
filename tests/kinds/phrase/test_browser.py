"""The phrase_pair labeling page in a real browser (Debian chromium through Playwright;
fixtures in tests/browser/fixtures.py): the seven relations with their definitions, keys
1-7 label and submit, RTL for a Hebrew project and LTR for an English one, the progress
bar, reversed probes that look like any other pair, the nothing-left state, and the
supervisor's coherence dashboard drawn as SVG. Screenshots: tests/browser/artifacts/phrase_*.png."""

import pytest

from tests.browser.helpers import PASSWORD, _is, _jsonl, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RLM = "\u200f"
# Hand-written Hebrew phrase pairs (not from any dataset); trailing spaces and an RLM are data.
HEBREW = [
    {"id": "he1", "left": "שלושה כלבים שחורים ", "right": "כלבים", "label": "FORWARD", "source": "demo"},
    {"id": "he2", "left": "בית ספר", "right": "בית הספר היסודי בחיפה", "label": "BACKWARD", "source": "demo"},
    {"id": "he3", "left": "חם מאוד", "right": f"קר מאוד{RLM}", "label": "OPPOSITION", "source": "demo"},
    {"id": "he4", "left": "ב-25 בפברואר", "right": "ב-21 באפריל 2024", "label": "SIMILAR", "source": "demo"},
    {"id": "he5", "left": "מחייכים", "right": "מצטלמים", "label": "RELATED", "source": "demo"},
    {"id": "he6", "left": "אומר", "right": "שלום בסוריה", "label": "UNRELATED", "source": "demo"},
]
ENGLISH = [
    {"id": "en1", "left": "2 car bombs", "right": "Car bombing", "label": "FORWARD"},
    {"id": "en2", "left": "clings", "right": "hold on", "label": "EQUIVALENT"},
]
KEY_OF = {
    "EQUIVALENT": "1",
    "FORWARD": "2",
    "BACKWARD": "3",
    "OPPOSITION": "4",
    "SIMILAR": "5",
    "RELATED": "6",
    "UNRELATED": "7",
}


@pytest.fixture
def phrase_setup(transactional_db, live_server):
    from django.contrib.auth import get_user_model

    from annotation.models import Membership
    from annotation.services.imports import items_import
    from annotation.services.projects import project_create

    User = get_user_model()
    admin = User.objects.create_user(username="browser-admin", password=PASSWORD, is_staff=True)
    noa = User.objects.create_user(username="noa", password=PASSWORD)
    sup = User.objects.create_user(username="boss", password=PASSWORD)
    hebrew = project_create(
        actor=admin, slug="he-phrase", name="צמדי ביטויים", kind="phrase_pair", language="he",
        settings={"labels_per_item": 1, "probe_rate": 0.5, "probe_seed": 3},
    )  # fmt: skip
    english = project_create(
        actor=admin, slug="en-phrase", name="Phrase pairs", kind="phrase_pair", language="en",
        settings={"labels_per_item": 1, "probe_rate": 0.0},
    )  # fmt: skip
    for project in (hebrew, english):
        Membership.objects.create(project=project, user=noa, role="annotator", status="active")
        Membership.objects.create(project=project, user=sup, role="supervisor", status="active")
    assert items_import(project=hebrew, data=_jsonl(HEBREW), fmt="jsonl", user=admin).created == len(HEBREW)
    assert items_import(project=english, data=_jsonl(ENGLISH), fmt="jsonl", user=admin).created == len(ENGLISH)
    return {"url": live_server.url, "hebrew": hebrew, "english": english}


def shown(page) -> tuple[str, str]:
    return page.evaluate(
        "() => [document.getElementById('left').textContent, document.getElementById('right').textContent]"
    )


def test_hebrew_page_is_rtl_and_labels_by_keyboard_probes_included(phrase_setup, page, artifacts_dir):
    from annotation.models import Annotation, Item

    base = phrase_setup["url"]
    by_pair = {(row["left"], row["right"]): row for row in HEBREW}
    login(page, base, "noa", language="he")  # a Hebrew annotator, Hebrew interface
    with page.expect_response(_is("GET", r"/next/$")):
        response = page.goto(f"{base}/p/he-phrase/annotate/")
    assert response.status == 200
    csp = response.headers.get("content-security-policy", "")
    assert "unsafe-inline" not in csp
    assert page.locator("html").get_attribute("dir") == "rtl"
    assert page.locator("html").get_attribute("lang") == "he"
    assert page.locator("#left").get_attribute("dir") == "rtl"
    # The seven relations, in order, each with its key and a definition.
    buttons = page.locator(".phrase-label")
    assert buttons.count() == 7
    assert [buttons.nth(i).get_attribute("data-label") for i in range(7)] == list(KEY_OF)
    assert [buttons.nth(i).get_attribute("data-key") for i in range(7)] == list(KEY_OF.values())
    assert all(buttons.nth(i).locator(".definition").inner_text().strip() for i in range(7))
    # Phrase 1 sits at the inline start: on the right in RTL.
    page.wait_for_function("() => !document.getElementById('task').hidden")
    left_box, right_box = page.locator("#left").bounding_box(), page.locator("#right").bounding_box()
    assert left_box["x"] > right_box["x"]
    page.screenshot(path=str(artifacts_dir / "phrase_he_rtl.png"), full_page=True)

    served, totals = [], []
    for _ in range(30):
        page.wait_for_function(
            "() => !document.getElementById('task').hidden || !document.getElementById('done').hidden"
        )
        if page.locator("#done").is_visible():
            break
        left, right = shown(page)
        assignment = page.locator("#task").get_attribute("data-assignment")
        # The bar counts the probes from the start: its total never grows when one shows.
        page.wait_for_function(
            "(d) => document.getElementById('progress-text').textContent.startsWith(d + ' / ')", arg=str(len(served))
        )
        totals.append(int(page.locator("#progress-text").text_content().split(" / ")[1]))
        if (left, right) in by_pair:
            label = by_pair[(left, right)]["label"]
        else:
            # A reversed pair: the same relation read the other way.
            original = by_pair[(right, left)]["label"]
            label = {"FORWARD": "BACKWARD", "BACKWARD": "FORWARD"}.get(original, original)
        served.append((left, right, label))
        with page.expect_response(_is("POST", r"/submit/$")) as submitted:
            page.keyboard.press(KEY_OF[label])
        assert submitted.value.status == 201
        assert submitted.value.request.headers.get("idempotency-key")
        page.wait_for_function(
            "(a) => document.getElementById('task').dataset.assignment !== a || !document.getElementById('done').hidden",
            arg=assignment,
        )
    else:
        raise AssertionError("the page never reached the nothing-left state")
    assert page.locator("#done").is_visible() and page.locator("#task").is_hidden()
    page.screenshot(path=str(artifacts_dir / "phrase_he_done.png"), full_page=True)
    probes = list(Item.objects.filter(project=phrase_setup["hebrew"], probe_of__isnull=False))
    assert probes, "no reversed probe was served"
    assert len(served) == len(HEBREW) + len(probes)
    # Stored exactly as shown and chosen; trailing space and RLM survived the page.
    stored = {
        (a.item.payload["left"], a.item.payload["right"]): a.value["label"]
        for a in Annotation.objects.filter(item__project=phrase_setup["hebrew"]).select_related("item")
    }
    assert stored == {(left, right): label for left, right, label in served}
    page.wait_for_function(
        "(t) => document.getElementById('progress-text').textContent === t", arg=f"{len(served)} / {len(served)}"
    )
    assert totals == sorted(totals, reverse=True) and totals[0] >= len(served), totals
    page.problems.assert_clean(page)

    # The supervisor's dashboard draws this annotator's coherence (all coherent here).
    page.context.clear_cookies()
    login(page, base, "boss")
    response = page.goto(f"{base}/p/he-phrase/coherence/")
    assert response.status == 200
    assert page.locator("rect.soft").count() == 1 and page.locator("rect.hard").count() == 1
    assert page.locator(".soft-value").inner_text() == "100.0%"
    assert page.locator("[style]").count() == 0
    page.screenshot(path=str(artifacts_dir / "phrase_he_coherence.png"), full_page=True)
    page.problems.assert_clean(page)


def test_english_page_is_ltr_and_digits_and_clicks_label(phrase_setup, page, artifacts_dir):
    from annotation.models import Annotation

    base = phrase_setup["url"]
    login(page, base, "noa")
    response = page.goto(f"{base}/p/en-phrase/annotate/")
    assert response.status == 200
    assert page.locator("html").get_attribute("dir") == "ltr"
    assert page.locator("html").get_attribute("lang") == "en"
    page.wait_for_function("() => !document.getElementById('task').hidden")
    left_box, right_box = page.locator("#left").bounding_box(), page.locator("#right").bounding_box()
    assert left_box["x"] < right_box["x"]
    page.wait_for_function("() => document.getElementById('progress-text').textContent === '0 / 2'")
    page.screenshot(path=str(artifacts_dir / "phrase_en_ltr.png"), full_page=True)
    first = shown(page)
    # A key outside 1-7 does nothing.
    page.keyboard.press("8")
    page.keyboard.press("0")
    page.wait_for_timeout(200)
    assert Annotation.objects.count() == 0
    with page.expect_response(_is("POST", r"/submit/$")):
        page.keyboard.press("7")
    page.wait_for_function("(f) => document.getElementById('left').textContent !== f", arg=first[0])
    page.wait_for_function("() => document.getElementById('progress-text').textContent === '1 / 2'")
    with page.expect_response(_is("POST", r"/submit/$")):
        page.locator('.phrase-label[data-label="OPPOSITION"]').click()
    page.wait_for_function("() => !document.getElementById('done').hidden")
    labels = sorted(a.value["label"] for a in Annotation.objects.filter(item__project=phrase_setup["english"]))
    assert labels == ["OPPOSITION", "UNRELATED"]
    page.wait_for_function("() => document.getElementById('progress-text').textContent === '2 / 2'")
    page.problems.assert_clean(page)
