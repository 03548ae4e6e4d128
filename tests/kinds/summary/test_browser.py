"""The summary_rating page in a real browser (Debian chromium through Playwright): a long
Hebrew article that scrolls on its own beside the summaries, RTL layout, ratings and error
tags given with the keyboard only, submit disabled until every summary has both ratings,
system names never on the page, and the stored value keyed by the display order
(HeSum §4; docs/text.md; docs/security.md). Screenshot: tests/browser/artifacts/summary_rating.png."""

import json
import re

import pytest

from tests.browser.helpers import PASSWORD, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ANNOTATOR = "dana-rater"
NBSP, RLM = "\u00a0", "\u200f"
PARAGRAPHS = [
    f"פסקה {n}: ועדת הכספים של הכנסת דנה היום בהצעת התקציב, ונציגי משרד האוצר הציגו נתונים על ההוצאה לחינוך, לבריאות ולתחבורה ציבורית בשנים 2020 עד 2025."
    for n in range(1, 41)
]
LAST_LINE = f"סוף הכתבה: ההצבעה במליאה תתקיים ביום שני{NBSP}הבא.{RLM}"
ARTICLE = "\n\n".join(PARAGRAPHS + [LAST_LINE])
SUMMARIES = [
    {"system": "secret-gpt4-x9", "text": "ועדת הכספים דנה בתקציב, וההצבעה תתקיים ביום שני.", "scores": {"rouge1": 0.3}},
    {"system": "secret-gpt35-x9", "text": "שרת האוצר הציגה את התקציב לשנת 2025.", "scores": {"rouge1": 0.2}},
    {
        "system": "secret-mt5-x9",
        "text": "ועדת הכספים של הכנסת דנה היום בהצעת התקציב. ועדת הכספים של הכנסת.",
        "scores": {"rouge1": 0.5},
    },
]


@pytest.fixture
def summary_setup(transactional_db, live_server):
    from django.contrib.auth import get_user_model

    from annotation.models import Membership
    from annotation.services.imports import items_import
    from annotation.services.projects import project_create

    User = get_user_model()
    admin = User.objects.create_user(username="sum-admin", password=PASSWORD, is_staff=True)
    annotator = User.objects.create_user(username=ANNOTATOR, password=PASSWORD)
    project = project_create(
        actor=admin,
        slug="he-sum-browser",
        name="סיכומים",
        kind="summary_rating",
        language="he",
        settings={"raters_per_item": 1},
    )
    Membership.objects.create(project=project, user=annotator, role="annotator", status="active")
    row = {"id": "long-1", "article": ARTICLE, "summaries": SUMMARIES}
    data = (json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8")
    assert items_import(project=project, data=data, fmt="jsonl", user=admin).created == 1
    return {"project": project, "annotator": annotator, "url": live_server.url}


def _is_submit(response) -> bool:
    return response.request.method == "POST" and re.search(r"/api/assignments/\d+/submit/$", response.url) is not None


def active_field(page) -> list:
    return page.evaluate(
        """() => { const f = document.querySelector('.rating.active');
                   return f ? [Number(f.closest('.summary-card').dataset.index), f.dataset.criterion] : null; }"""
    )


def test_rating_a_long_article_with_the_keyboard(summary_setup, page, artifacts_dir):
    from annotation.models import Annotation, Item

    login(page, summary_setup["url"], username=ANNOTATOR)
    response = page.goto(f"{summary_setup['url']}/p/he-sum-browser/annotate/")
    assert response.status == 200
    page.wait_for_function(
        "() => !document.getElementById('task').hidden && document.querySelectorAll('.summary-card').length === 3"
    )

    # The page in the interface language (English here), the article in Hebrew, right to left,
    # exactly the stored text.
    assert page.locator("html").get_attribute("dir") == "ltr"
    assert page.locator("html").get_attribute("lang") == "en"
    assert page.locator("#article").get_attribute("lang") == "he"
    assert page.evaluate("() => getComputedStyle(document.getElementById('article')).direction") == "rtl"
    assert page.evaluate("() => document.getElementById('article').textContent") == ARTICLE
    # The article (first in the DOM) sits at the interface's inline start: left of the
    # summaries in this English page (right of them in a Hebrew one, see tests/browser/test_screens.py).
    article_box = page.locator(".article-pane").bounding_box()
    summaries_box = page.locator(".summaries-pane").bounding_box()
    assert article_box["x"] + article_box["width"] - 1 < summaries_box["x"]

    # Summaries in the stored display order, text only; no system name or score anywhere.
    item = Item.objects.get(external_id="long-1")
    shown = page.evaluate("() => [...document.querySelectorAll('.summary-text')].map(p => p.textContent)")
    assert shown == [SUMMARIES[i]["text"] for i in item.payload["order"]]
    html = page.content()
    for summary in SUMMARIES:
        assert summary["system"] not in html
    assert "rouge1" not in html
    # The project's error tags with their display names, nine at most on Shift+digits.
    tag_names = page.evaluate(
        "() => [...document.querySelectorAll('.summary-card[data-index=\"0\"] label.tag span')].map(s => s.textContent.trim())"
    )
    assert (
        tag_names[0] == "Repetition" and tag_names[-1] == "Incorrect definite (construct state)" and len(tag_names) == 8
    )

    # The long article scrolls inside its own box; the last line comes into view.
    metrics = page.evaluate(
        "() => { const a = document.getElementById('article'); return [a.scrollHeight, a.clientHeight, a.scrollTop]; }"
    )
    assert metrics[0] > 2 * metrics[1] and metrics[2] == 0
    page.focus("#article")
    page.keyboard.press("End")
    page.wait_for_function("() => document.getElementById('article').scrollTop > 0")
    page.wait_for_function(
        """() => { const a = document.getElementById('article');
                   return Math.abs(a.scrollTop + a.clientHeight - a.scrollHeight) < 2; }"""
    )
    page.locator("#article").hover()
    page.mouse.wheel(0, -400)
    page.wait_for_function(
        "() => { const a = document.getElementById('article'); return a.scrollTop + a.clientHeight < a.scrollHeight - 100; }"
    )
    # Keyboard rating works with the focus in the article (scroll keys stay with it).
    assert active_field(page) == [0, "coherence"]
    submit = page.locator("#submit")
    assert submit.is_disabled()

    page.keyboard.press("4")  # summary 0 coherence → moves to completeness
    assert active_field(page) == [0, "completeness"]
    page.keyboard.press("Shift+Digit2")  # summary 0: copy_from_article
    page.keyboard.press("3")  # summary 0 completeness → summary 1 coherence
    assert active_field(page) == [1, "coherence"]
    page.keyboard.press("Shift+Digit5")  # summary 1: hallucination
    page.keyboard.press("Shift+Digit7")  # summary 1: incorrect_gender
    page.keyboard.press("Shift+Digit7")  # ... and off again
    page.keyboard.press("Shift+Digit7")  # ... and on again
    page.keyboard.press("5")
    page.keyboard.press("Enter")  # not yet: summary 2 is unrated, nothing is sent
    assert submit.is_disabled()
    page.keyboard.press("j")  # skip to summary 2 coherence, leaving summary 1 completeness
    assert active_field(page) == [2, "coherence"]
    page.keyboard.press("2")
    page.keyboard.press("Shift+Digit1")  # summary 2: repetition
    # A Persian or Arabic keyboard may send its own digits as the key: "۱" rates 1.
    page.evaluate("() => document.dispatchEvent(new KeyboardEvent('keydown', {key: '۱', bubbles: true}))")
    assert active_field(page) == [1, "completeness"]  # the one left unrated
    assert page.locator("#remaining").text_content() != ""
    assert submit.is_disabled()
    page.keyboard.press("k")
    page.keyboard.press("j")
    assert active_field(page) == [1, "completeness"]
    page.keyboard.press("4")
    assert submit.is_enabled()
    assert page.locator("#remaining").text_content() == ""
    page.screenshot(path=str(artifacts_dir / "summary_rating.png"), full_page=True)

    with page.expect_response(_is_submit) as submitted:
        page.keyboard.press("Enter")
    assert submitted.value.status == 201, submitted.value.text()
    page.wait_for_function("() => !document.getElementById('done').hidden")

    value = Annotation.objects.get(annotator=summary_setup["annotator"]).value
    assert value == {
        "ratings": {
            "0": {"coherence": 4, "completeness": 3, "errors": ["copy_from_article"]},
            "1": {"coherence": 5, "completeness": 4, "errors": ["hallucination", "incorrect_gender"]},
            "2": {"coherence": 2, "completeness": 1, "errors": ["repetition"]},
        }
    }
    page.problems.assert_clean(page)


def test_clicking_rates_too_and_a_bad_claim_shows_the_error(summary_setup, page):
    login(page, summary_setup["url"], username=ANNOTATOR)
    page.goto(f"{summary_setup['url']}/p/he-sum-browser/annotate/")
    page.wait_for_function("() => document.querySelectorAll('.summary-card').length === 3")
    for d in range(3):
        for criterion in ("coherence", "completeness"):
            page.click(f'.summary-card[data-index="{d}"] .rating[data-criterion="{criterion}"] input[value="3"]')
    assert page.locator("#submit").is_enabled()
    assert active_field(page) == [2, "completeness"]
    page.click('.summary-card[data-index="1"] label.tag:nth-child(5) input')
    with page.expect_response(_is_submit) as submitted:
        page.click("#submit")
    assert submitted.value.status == 201
    from annotation.models import Annotation

    stored = Annotation.objects.get().value["ratings"]
    assert stored["1"] == {"coherence": 3, "completeness": 3, "errors": ["hallucination"]}
    assert stored["0"]["errors"] == [] and stored["2"]["errors"] == []
    page.wait_for_function("() => !document.getElementById('done').hidden")
    page.problems.assert_clean(page)


def test_supervisor_results_page(summary_setup, page, artifacts_dir):
    from django.contrib.auth import get_user_model

    from annotation.models import Membership
    from annotation.services.agreement import agreement_request
    from annotation.services.assignments import annotation_submit, assignment_next_for_annotator
    from annotation.tasks import run_job

    project = summary_setup["project"]
    annotator = summary_setup["annotator"]
    assignment = assignment_next_for_annotator(user=annotator, slug=project.slug)
    value = {
        "ratings": {
            str(d): {"coherence": 5 - d, "completeness": 4 - d, "errors": ["repetition"] if d == 2 else []}
            for d in range(3)
        }
    }
    annotation_submit(user=annotator, assignment_id=assignment.pk, value=value)
    sup = get_user_model().objects.create_user(username="sum-sup", password=PASSWORD)
    Membership.objects.create(project=project, user=sup, role="supervisor", status="active")
    run_job(agreement_request(user=sup, slug=project.slug).pk)  # measures the summaries too

    login(page, summary_setup["url"], username="sum-sup")
    response = page.goto(f"{summary_setup['url']}/p/{project.slug}/summaries/")
    assert response.status == 200
    assert page.locator("html").get_attribute("dir") == "ltr"  # the interface's (English), not the project's
    systems = page.evaluate("() => [...document.querySelectorAll('#system-table tbody tr')].map(r => r.dataset.system)")
    assert systems == [s["system"] for s in SUMMARIES]
    repeated = SUMMARIES[project.items.get().payload["order"][2]]["system"]
    cell = page.locator(f'#error-table tr[data-tag="repetition"] td[data-system="{repeated}"] .n')
    assert cell.text_content() == "1"
    assert page.locator("#intrinsic-status").text_content().startswith("1 of 1")
    page.screenshot(path=str(artifacts_dir / "summary_results.png"), full_page=True)
    with page.expect_navigation():
        page.click("#intrinsic-button")
    assert "queued" in page.locator(".notice").text_content()
    page.problems.assert_clean(page)
