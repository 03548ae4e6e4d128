"""Nothing an annotator types or presses is lost without a word, in a
real browser (Debian chromium) on Hebrew projects, at 1366 and 390 px:

- a question typed with its answer marked but not yet added survives a reload and a change of
  interface language (it is part of the draft), and leaving asks first when it could not be
  saved;
- an answer pressed after the session ended is kept: the login page says the session ended,
  and after the login the answer is sent (the claim permitting) and the page says so;
- a label key pressed while the last answer is still on its way is refused visibly, never
  dropped in silence, and the busy state shows.

Screenshots: tests/browser/artifacts/nolost_*.png."""

import time

import pytest

from tests.browser.helpers import PASSWORD, _jsonl, login
from tests.browser.test_annotator_comfort import ANSWER_CITY, PARAGRAPH, hebrew, paragraphs, world  # noqa: F401
from tests.kinds.qa.test_browser import keyboard_select

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = {"wide": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}
QUESTION = "לאן נסעה רינה עם 3 חברות?"


def shoot(page, artifacts_dir, name: str) -> None:
    page.screenshot(path=str(artifacts_dir / f"nolost_{name}.png"), full_page=True)


def draft_put(response) -> bool:
    return response.url.endswith("/draft/") and response.request.method == "PUT"


def write_pending_question(page) -> None:
    """Mark the answer, type the question, and do not add it."""
    page.wait_for_function("(t) => document.getElementById('paragraph').textContent === t", arg=PARAGRAPH)
    keyboard_select(page, PARAGRAPH, ANSWER_CITY)
    page.wait_for_function("(t) => document.getElementById('answer-text').textContent === t", arg=ANSWER_CITY)
    page.focus("#question-input")
    page.keyboard.insert_text(QUESTION)


def assert_pending_back(page) -> None:
    page.wait_for_function("() => document.getElementById('qa-authoring').dataset.pendingRestored === 'true'")
    assert page.input_value("#question-input") == QUESTION
    assert page.locator("#answer-text").text_content() == ANSWER_CITY
    assert page.locator("#questions li").count() == 0  # still not added: the form is as it was


@pytest.mark.parametrize("size", WIDTHS)
def test_a_question_not_yet_added_survives_a_reload_and_a_change_of_language(world, page, artifacts_dir, size):
    from annotation.models import Assignment

    base = world["url"]
    paragraphs(world["qa"], 2)
    page.set_viewport_size(WIDTHS[size])
    hebrew(page, base)
    login(page, base, "tamar")
    page.goto(f"{base}/p/he-comfort-qa/annotate/")
    with page.expect_response(draft_put):
        write_pending_question(page)
    pending = Assignment.objects.get(status="claimed").draft["pending"]
    assert pending["question"] == QUESTION and pending["answer"] == {
        "start": PARAGRAPH.index(ANSWER_CITY),
        "text": ANSWER_CITY,
    }

    page.reload()
    assert_pending_back(page)

    # Typed on, then straight to the language buttons: saved on the way out, back in Persian.
    page.focus("#question-input")
    page.keyboard.press("End")
    page.keyboard.insert_text("!")
    with page.expect_navigation():
        page.click(".lang-switch button[value=fa]")
    page.wait_for_function("() => document.getElementById('qa-authoring').dataset.pendingRestored === 'true'")
    assert page.locator("html").get_attribute("lang") == "fa" and page.locator("html").get_attribute("dir") == "rtl"
    assert page.input_value("#question-input") == QUESTION + "!"
    assert page.locator("#answer-text").text_content() == ANSWER_CITY
    shoot(page, artifacts_dir, f"pending_question_fa_{size}")
    page.problems.assert_clean(page)


def test_leaving_with_input_that_could_not_be_saved_asks_first(world, page):
    base = world["url"]
    paragraphs(world["qa"], 1)
    hebrew(page, base)
    login(page, base, "tamar")
    page.route("**/draft/", lambda route: route.abort() if route.request.method == "PUT" else route.continue_())
    page.goto(f"{base}/p/he-comfort-qa/annotate/")
    with page.expect_event("requestfailed", lambda r: r.url.endswith("/draft/")):
        write_pending_question(page)
    assert leaving_asks(page)
    # Once the server takes the draft again, leaving needs no question: the input is kept there.
    page.unroute("**/draft/")
    with page.expect_response(lambda r: draft_put(r) and r.status == 200):
        page.focus("#question-input")
        page.keyboard.insert_text("?")
    assert not leaving_asks(page)


def leaving_asks(page) -> bool:
    """Whether the page asks before it is left: its beforeunload handlers cancel the event
    (what makes the browser ask; a real dialog would also stall the test's page teardown)."""
    return page.evaluate(
        "() => { const e = new Event('beforeunload', {cancelable: true}); window.dispatchEvent(e); return e.defaultPrevented; }"
    )


def drop_session(page) -> None:
    """The session ends server-side (expired or logged out elsewhere); the page does not know."""
    from django.contrib.sessions.models import Session

    Session.objects.all().delete()


def test_an_answer_pressed_after_the_session_ended_is_sent_after_the_login(world, page, artifacts_dir):
    from annotation.models import Annotation

    base = world["url"]
    page.context.add_cookies([{"name": "django_language", "value": "fa", "url": base}])
    login(page, base, "eli")
    page.goto(f"{base}/p/he-comfort-nli/annotate/")
    page.wait_for_function("() => document.getElementById('premise').textContent.length > 0")
    item = page.locator("#premise").text_content()
    drop_session(page)
    with page.expect_navigation(url="**/login/**"):
        page.keyboard.press("Digit1")
    assert "session=ended" in page.url and "next=/p/he-comfort-nli/annotate/" in page.url.replace("%2F", "/")
    notice = page.locator("#session-ended")
    assert notice.is_visible() and "نشست" in notice.text_content()
    assert page.locator("html").get_attribute("dir") == "rtl"
    for size, viewport in WIDTHS.items():
        page.set_viewport_size(viewport)
        shoot(page, artifacts_dir, f"session_ended_fa_{size}")
    page.set_viewport_size(WIDTHS["wide"])
    assert Annotation.objects.count() == 0

    page.fill("input[name=username]", "eli")
    page.fill("input[name=password]", PASSWORD)
    with page.expect_navigation(url="**/p/he-comfort-nli/annotate/"):
        page.click("button[type=submit].primary")
    page.wait_for_function("() => document.getElementById('flash').textContent.length > 0")
    assert page.locator("#flash").text_content() == page.locator("#msg-resent").text_content()
    [annotation] = Annotation.objects.all()
    label_of_key_1 = page.locator('.label-button[data-key="1"]').get_attribute("data-label")
    assert annotation.value == {"label": label_of_key_1} and annotation.item.payload["premise"] == item
    page.wait_for_function("(p) => document.getElementById('premise').textContent !== p", arg=item)  # on to the next
    assert page.locator("#error").is_hidden()
    # The refused submit is the one console line expected: the browser logs every 401.
    page.problems.console = [m for m in page.problems.console if "401 (Unauthorized)" not in m]
    page.problems.assert_clean(page)


def test_an_answer_whose_claim_is_gone_after_the_login_says_why(world, page):
    from annotation.models import Annotation, Assignment

    base = world["url"]
    hebrew(page, base)
    login(page, base, "eli")
    page.goto(f"{base}/p/he-comfort-nli/annotate/")
    page.wait_for_function("() => document.getElementById('premise').textContent.length > 0")
    drop_session(page)
    with page.expect_navigation(url="**/login/**"):
        page.keyboard.press("Digit2")
    Assignment.objects.filter(status="claimed").update(status="skipped")  # released meanwhile (another tab)
    page.fill("input[name=username]", "eli")
    page.fill("input[name=password]", PASSWORD)
    with page.expect_navigation(url="**/p/he-comfort-nli/annotate/"):
        page.click("button[type=submit].primary")
    page.wait_for_function("() => !document.getElementById('error').hidden")
    assert page.locator("#error").text_content().startswith(page.locator("#msg-resend-failed").text_content())
    assert Annotation.objects.count() == 0


@pytest.fixture
def slow_submit(monkeypatch):
    """The submit takes 1.5 s on the server, as while a round closes."""
    from api.views.core import SubmitView

    original = SubmitView.post

    def post(self, request, *args, **kwargs):
        time.sleep(1.5)
        return original(self, request, *args, **kwargs)

    monkeypatch.setattr(SubmitView, "post", post)


# Each interface language with a project's pairs in it: a Hebrew and a Persian project.
BUSY_PAIRS = {
    "he": ("צמדים", lambda i: {"id": f"b{i}", "left": f"בית ספר {i}", "right": f"בית הספר היסודי {i}"}),
    "fa": ("جفت‌ها", lambda i: {"id": f"b{i}", "left": f"مدرسه {i}", "right": f"مدرسهٔ ابتدایی {i}"}),
}


@pytest.mark.parametrize("language", BUSY_PAIRS)
@pytest.mark.parametrize("size", WIDTHS)
def test_a_label_key_pressed_while_busy_is_refused_visibly(world, page, artifacts_dir, slow_submit, size, language):
    from django.contrib.auth import get_user_model

    from annotation.models import Annotation, Membership
    from annotation.services.imports import items_import
    from annotation.services.projects import project_create

    admin = get_user_model().objects.get(username="comfort-admin")
    name, row = BUSY_PAIRS[language]
    slug = f"{language}-busy-phrase"
    project = project_create(actor=admin, slug=slug, name=name, kind="phrase_pair", language=language,
                             settings={"labels_per_item": 1, "probe_rate": 0.0})  # fmt: skip
    Membership.objects.create(project=project, user=world["people"]["eli"], role="annotator", status="active")
    assert items_import(project=project, data=_jsonl([row(i) for i in range(3)]), fmt="jsonl").created == 3
    base = world["url"]
    page.set_viewport_size(WIDTHS[size])
    page.context.add_cookies([{"name": "django_language", "value": language, "url": base}])
    login(page, base, "eli")
    page.goto(f"{base}/p/{slug}/annotate/")
    assert page.evaluate("document.documentElement.dir") == "rtl"
    page.wait_for_function("() => document.getElementById('left').textContent.length > 0")
    first = page.locator("#left").text_content()
    page.keyboard.press("Digit1")
    page.wait_for_function("() => !document.getElementById('busy-note').hidden")
    assert page.locator("#task").get_attribute("aria-busy") == "true"
    assert page.locator("#busy-note").text_content() == page.locator("#msg-busy").text_content()
    page.keyboard.press("Digit5")  # the same pair is still on screen
    note = page.locator("#busy-note")
    assert note.is_visible() and note.text_content() == page.locator("#msg-busy-refused").text_content()
    box = note.bounding_box()
    assert 0 <= box["y"] and box["y"] + box["height"] <= WIDTHS[size]["height"]  # seen without scrolling
    shoot(page, artifacts_dir, f"busy_refused_{language}_{size}")
    page.wait_for_function("(f) => document.getElementById('left').textContent !== f", arg=first)
    page.wait_for_function("() => document.getElementById('busy-note').hidden")
    assert [a.value["label"] for a in Annotation.objects.filter(item__project=project)] == ["EQUIVALENT"]
    page.problems.assert_clean(page)
