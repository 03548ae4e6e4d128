"""Idle release of claims, as two annotators live it on the question-authoring page
(docs/api.md "Claims and idle release"): a paragraph opened and left without input goes to
the next annotator after the idle time, and the first annotator's page says so on their
next key; an annotator at work (keys on the page, typing) keeps it."""

import time

import pytest

from tests.browser.helpers import expect, login
from tests.kinds.qa.test_browser import HE_PARAGRAPH, qa_setup  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

IDLE = 5  # the shortest idle time the setting takes; the page then beats every 2 s of input


def _short_idle(slug: str = "he-qa") -> None:
    from annotation.models import Project

    project = Project.objects.get(slug=slug)
    project.settings = {**project.settings, "idle_release_seconds": IDLE}
    project.save(update_fields=["settings"])


def _open(page, base: str, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 800})
    login(page, base, "dana", language="he")
    page.goto(f"{base}/p/he-qa/annotate/")
    expect(page.locator("#paragraph")).to_have_text(HE_PARAGRAPH)


def _served_to_yossi():
    from django.contrib.auth import get_user_model

    from annotation.services.assignments import assignment_next_for_annotator

    return assignment_next_for_annotator(user=get_user_model().objects.get(username="yossi"), slug="he-qa")


@pytest.mark.parametrize("width", [1366, 390])
def test_an_open_page_without_input_gives_the_paragraph_to_the_next_annotator(qa_setup, page, width):
    _short_idle()
    _open(page, qa_setup["url"], width)
    assert _served_to_yossi() is None  # held while dana might be reading
    time.sleep(IDLE + 1)
    served = _served_to_yossi()
    assert served is not None and served.item.external_id == "he-1"
    # Dana comes back and presses a key: the page says at once that the paragraph is gone.
    page.click("#question-input")
    page.keyboard.type("מה")
    expect(page.locator("#error")).to_be_visible()


@pytest.mark.parametrize("width", [1366, 390])
def test_an_annotator_at_work_keeps_the_paragraph(qa_setup, page, width):
    from annotation.models import Assignment

    _short_idle()
    _open(page, qa_setup["url"], width)
    page.focus("#paragraph")
    # Keys that change nothing on the page (no draft is saved): only the heartbeat speaks.
    deadline = time.monotonic() + 2 * IDLE
    with page.expect_response(lambda r: "/heartbeat/" in r.url and r.status == 200):
        page.keyboard.press("Shift")
    while time.monotonic() < deadline:
        page.keyboard.press("Shift")
        time.sleep(0.5)
    assert _served_to_yossi() is None
    claim = Assignment.objects.get(annotator__username="dana")
    assert claim.status == "claimed" and Assignment.objects.filter(annotator__username="yossi").count() == 0
    expect(page.locator("#error")).to_be_hidden()
    page.problems.assert_clean(page)
