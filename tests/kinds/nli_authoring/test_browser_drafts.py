"""An author's texts on the nli_authoring page are never lost without a word (in Chromium, at
1366 and 390 px, in the Hebrew and the Persian interface): what is typed and not yet sent
is kept as the claim's draft and comes back after a reload and after a change of interface
language; a draft that holds work keeps the claim past the idle release (the author may be
in another tab looking for a premise); leaving while the texts could not be saved asks
first. Screenshots: tests/browser/artifacts/authoring_draft_*.png."""

import pytest

from tests.browser.helpers import login
from tests.kinds.nli_authoring.test_browser import QUESTION, SOURCES, TEXTS, authoring_setup  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = {"wide": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}
TYPED = {"entailment": TEXTS["entailment"], "premise": TEXTS["premise"], "premise_source": SOURCES["premise_source"]}
OTHER = {"he": "fa", "fa": "he"}


def draft_put(response) -> bool:
    return response.url.endswith("/draft/") and response.request.method == "PUT" and response.status == 200


def leaving_asks(page) -> bool:
    """Whether the page's beforeunload handlers cancel the event (what makes a browser ask)."""
    return page.evaluate(
        "() => { const e = new Event('beforeunload', {cancelable: true}); window.dispatchEvent(e); return e.defaultPrevented; }"
    )


def open_question(page, base: str) -> None:
    page.goto(f"{base}/p/fa-author-br/annotate/")
    page.wait_for_function("([q]) => document.getElementById('question').textContent === q", arg=[QUESTION["question"]])


def assert_typed_back(page, typed: dict) -> None:
    page.wait_for_function("() => document.getElementById('authoring-form').dataset.draftRestored === 'true'")
    for name in ("entailment", "premise", "contradiction", "neutral", "premise_source", "neutral_source"):
        assert page.input_value(f"#{name}") == typed.get(name, ""), name


@pytest.mark.parametrize("language", ["he", "fa"])
@pytest.mark.parametrize("size", WIDTHS)
def test_typed_texts_survive_a_reload_and_a_change_of_language(authoring_setup, page, artifacts_dir, size, language):
    from annotation.models import Assignment, Item

    base = authoring_setup["url"]
    page.set_viewport_size(WIDTHS[size])
    login(page, base, "sara-author", language=language)
    open_question(page, base)
    with page.expect_response(draft_put):
        for name, text in TYPED.items():
            page.fill(f"#{name}", text)
    assert Assignment.objects.get(status="claimed").draft == TYPED

    page.reload()
    assert_typed_back(page, TYPED)
    assert not leaving_asks(page)  # saved: a reload loses nothing

    # Typed on, then straight to the language buttons: saved on the way out, back in the other language.
    page.focus("#contradiction")
    page.keyboard.insert_text("ن")
    with page.expect_navigation():
        page.click(f".lang-switch button[value={OTHER[language]}]")
    assert page.locator("html").get_attribute("lang") == OTHER[language]
    assert page.locator("html").get_attribute("dir") == "rtl"
    assert_typed_back(page, {**TYPED, "contradiction": "ن"})
    page.screenshot(path=str(artifacts_dir / f"authoring_draft_{language}_{size}.png"), full_page=True)
    assert not Item.objects.filter(project=authoring_setup["relabel"]).exists()  # nothing was sent
    page.problems.assert_clean(page)


def test_a_draft_with_work_holds_the_claim_past_the_idle_release(authoring_setup, page):
    from annotation.models import Assignment

    project = authoring_setup["authoring"]
    project.settings = {**project.settings, "idle_release_seconds": 60, "claim_ttl": 3600}
    project.save(update_fields=["settings"])
    base = authoring_setup["url"]
    login(page, base, "sara-author", language="fa")
    open_question(page, base)
    claim = Assignment.objects.get(status="claimed")
    assert (claim.expires_at - claim.claimed_at).total_seconds() <= 120  # an open page alone: the idle period
    with page.expect_response(draft_put):
        page.fill("#entailment", TEXTS["entailment"])
    claim.refresh_from_db()
    assert (claim.expires_at - claim.claimed_at).total_seconds() >= 3600 - 5
    page.problems.assert_clean(page)


def test_leaving_with_texts_that_could_not_be_saved_asks_first(authoring_setup, page):
    base = authoring_setup["url"]
    login(page, base, "sara-author", language="he")
    page.route("**/draft/", lambda route: route.abort() if route.request.method == "PUT" else route.continue_())
    open_question(page, base)
    assert not leaving_asks(page)  # nothing typed
    with page.expect_event("requestfailed", lambda r: r.url.endswith("/draft/")):
        page.fill("#premise", TEXTS["premise"])
    assert leaving_asks(page)
    # Once the server takes the draft again, leaving needs no question: the texts are kept there.
    page.unroute("**/draft/")
    with page.expect_response(draft_put):
        page.focus("#premise")
        page.keyboard.insert_text(".")
    assert not leaving_asks(page)
    # The saves this test cut off are the console lines expected: the browser logs each one.
    page.problems.console = [m for m in page.problems.console if "ERR_FAILED" not in m or "/draft/" not in m]
    page.problems.assert_clean(page)


@pytest.mark.parametrize("language", ["he", "fa"])
def test_texts_typed_as_the_session_ends_come_back_after_the_login(authoring_setup, page, language):
    from django.contrib.sessions.models import Session

    from annotation.models import Assignment
    from tests.browser.helpers import PASSWORD

    base = authoring_setup["url"]
    login(page, base, "sara-author", language=language)
    open_question(page, base)
    # Typed, saved, and the claim renewed (the beat after the first input) while signed in.
    with page.expect_response(lambda r: r.url.endswith("/heartbeat/")), page.expect_response(draft_put):
        page.fill("#entailment", TEXTS["entailment"])
    Session.objects.all().delete()  # the session ends on the server; the page does not know
    with page.expect_navigation(url="**/login/**"):
        page.focus("#premise")
        page.keyboard.insert_text(TEXTS["premise"])  # its save is refused: on to the login page
    assert "session=ended" in page.url
    assert Assignment.objects.get(status="claimed").draft == {"entailment": TEXTS["entailment"]}
    page.fill("input[name=username]", "sara-author")
    page.fill("input[name=password]", PASSWORD)
    with page.expect_response(draft_put):
        with page.expect_navigation(url="**/p/fa-author-br/annotate/"):
            page.click("button[type=submit].primary")
        assert_typed_back(page, {"entailment": TEXTS["entailment"], "premise": TEXTS["premise"]})
    assert Assignment.objects.get(status="claimed").draft == {
        "entailment": TEXTS["entailment"],
        "premise": TEXTS["premise"],
    }
    # The refused save is the one console line expected: the browser logs every 401.
    page.problems.console = [m for m in page.problems.console if "401 (Unauthorized)" not in m]
    page.problems.assert_clean(page)
