"""Annotator comfort in a real browser (Debian chromium through Playwright), with the Hebrew
interface (the `django_language` cookie) on Hebrew projects:

- question drafts survive a reload and reach another device, and are gone once submitted;
- the review page saves a comment typed after the grade (it used to show "Saved" and drop
  it), marks unsaved text and keeps it over a reload;
- the review page shows 20 paragraphs a page, grades by key and marks the active answer in
  the paragraph exactly (code points; emoji, niqqud and an RLM before the answer);
- the label pages: the chosen label flashes on submit, Backspace goes back to earlier
  answers and a label key changes one while its round is open, a decided round is said so,
  S skips; the top bar's inbox link shows the unread count.

Screenshots at 1366×900 and 390×844: tests/browser/artifacts/comfort_*.png. Texts are our own."""

import re

import pytest

from tests.browser.helpers import PASSWORD, _jsonl, login
from tests.kinds.qa.test_browser import add_question, keyboard_select

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZES = {"wide": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}
# An emoji (two UTF-16 units), pointed letters and an RLM before the answers: a page that
# counted UTF-16 units or grapheme clusters instead of code points would be off.
SHALOM = "\u05e9\u05c1\u05b8\u05dc\u05d5\u05b9\u05dd"  # pointed "shalom"
PARAGRAPH = f"ביום ראשון 🌞 אמרה רינה {SHALOM}\u200f לשכנים ונסעה ברכבת לחיפה עם 3 חברות מ-Tel Aviv."
ANSWER_CITY = "לחיפה"
ANSWER_COUNT = "3 חברות"


def hebrew(page, base: str) -> None:
    page.context.add_cookies([{"name": "django_language", "value": "he", "url": base}])


def screenshots(page, artifacts_dir, name: str) -> None:
    for size, viewport in SIZES.items():
        page.set_viewport_size(viewport)
        page.screenshot(path=str(artifacts_dir / f"comfort_{name}_{size}.png"), full_page=True)
    page.set_viewport_size(SIZES["wide"])


def user(username: str, **extra):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_user(username=username, password=PASSWORD, **extra)


@pytest.fixture
def world(transactional_db, live_server):
    from annotation.models import Membership
    from annotation.services.imports import items_import
    from annotation.services.projects import project_create

    admin = user("comfort-admin", is_staff=True)
    people = {name: user(name) for name in ("tamar", "rivka", "eli")}
    qa = project_create(actor=admin, slug="he-comfort-qa", name="שאלות ותשובות", kind="qa_authoring", language="he",
                        settings={"min_questions": 1, "max_questions": 4})  # fmt: skip
    Membership.objects.create(project=qa, user=people["tamar"], role="annotator", status="trial")
    Membership.objects.create(project=qa, user=people["rivka"], role="reviewer", status="active")
    nli = project_create(actor=admin, slug="he-comfort-nli", name="הסקה", kind="nli_relabel", language="he",
                         settings={"consensus_n": 3, "consensus_k": 2})  # fmt: skip
    Membership.objects.create(project=nli, user=people["eli"], role="annotator", status="active")
    rows = [{"id": f"n{i}", "premise": f"הנחה מספר {i} על מזג האוויר", "hypothesis": f"השערה {i}"} for i in range(6)]
    assert items_import(project=nli, data=_jsonl(rows), fmt="jsonl").created == 6
    return {"url": live_server.url, "qa": qa, "nli": nli, "people": people}


def paragraphs(project, n: int) -> None:
    from annotation.services.imports import items_import

    rows = [{"id": f"p{i:02d}", "context": PARAGRAPH, "title": f"פסקה {i}"} for i in range(n)]
    assert items_import(project=project, data=_jsonl(rows), fmt="jsonl").created == n


def authored(world, n: int) -> list[int]:
    """`n` paragraphs of tamar's questions, each waiting for review (a trial member's work)."""
    from annotation.services.assignments import annotation_submit, assignment_next_for_annotator

    paragraphs(world["qa"], n)
    value = {"questions": [
        {"question": "לאן נסעה רינה?", "answerable": True, "answer": {"start": PARAGRAPH.index(ANSWER_CITY), "text": ANSWER_CITY}},
        {"question": "עם כמה חברות?", "answerable": True, "answer": {"start": PARAGRAPH.index(ANSWER_COUNT), "text": ANSWER_COUNT}},
    ]}  # fmt: skip
    ids = []
    for _ in range(n):
        claim = assignment_next_for_annotator(user=world["people"]["tamar"], slug=world["qa"].slug)
        ids.append(annotation_submit(user=world["people"]["tamar"], assignment_id=claim.pk, value=value).pk)
    return ids


# ---------------------------------------------------------------- drafts


def test_question_drafts_survive_a_reload_and_another_device(world, page, browser, artifacts_dir):
    from annotation.models import Annotation, Assignment

    base = world["url"]
    paragraphs(world["qa"], 2)
    hebrew(page, base)
    login(page, base, "tamar")
    page.goto(f"{base}/p/he-comfort-qa/annotate/")
    page.wait_for_function("(t) => document.getElementById('paragraph').textContent === t", arg=PARAGRAPH)
    keyboard_select(page, PARAGRAPH, ANSWER_CITY)
    page.wait_for_function("(t) => document.getElementById('answer-text').textContent === t", arg=ANSWER_CITY)
    add_question(page, "לאן נסעה רינה?")
    with page.expect_response(lambda r: r.url.endswith("/draft/") and r.request.method == "PUT") as saved:
        add_question(page, "מה אמרה לשכנים?", answerable=False)
    assert saved.value.status == 200
    claim = Assignment.objects.get(status="claimed")
    assert claim.draft["questions"][0] == {"question": "לאן נסעה רינה?", "answerable": True,
                                           "answer": {"start": PARAGRAPH.index(ANSWER_CITY), "text": ANSWER_CITY}}  # fmt: skip

    # A third question typed and the tab hidden at once: saved on the way out, no wait.
    add_question(page, "באיזה יום?", answerable=False)
    with page.expect_response(lambda r: r.url.endswith("/draft/") and r.request.method == "PUT"):
        page.evaluate(
            "() => { Object.defineProperty(document, 'visibilityState', {value: 'hidden', configurable: true});"
            " document.dispatchEvent(new Event('visibilitychange')); }"
        )
    assert len(Assignment.objects.get(pk=claim.pk).draft["questions"]) == 3

    page.reload()
    page.wait_for_function("() => document.querySelectorAll('#questions .qa-question').length === 3")
    assert page.locator("#questions .q-text").all_text_contents() == ["לאן נסעה רינה?", "מה אמרה לשכנים?", "באיזה יום?"]
    screenshots(page, artifacts_dir, "qa_draft_restored")

    # Another device: a new browser session of the same annotator.
    other = browser.new_context(locale="he-IL")
    second = other.new_page()
    hebrew(second, base)
    login(second, base, "tamar")
    second.goto(f"{base}/p/he-comfort-qa/annotate/")
    second.wait_for_function("() => document.querySelectorAll('#questions .qa-question').length === 3")
    assert second.locator("#questions .q-answer").first.text_content() == ANSWER_CITY
    # Submitted there: the draft goes with the claim, and the next paragraph starts empty.
    with second.expect_response(lambda r: "/submit/" in r.url) as submitted:
        second.click("#done-paragraph")
    assert submitted.value.status == 201
    second.wait_for_function("() => document.querySelectorAll('#questions .qa-question').length === 0")
    other.close()
    assert Assignment.objects.get(pk=claim.pk).draft is None
    assert len(Annotation.objects.get().value["questions"]) == 3
    page.problems.assert_clean(page)


# ---------------------------------------------------------------- review


def test_a_comment_typed_after_the_grade_is_saved_and_unsaved_text_is_kept(world, page, artifacts_dir):
    from annotation.models import Feedback, Review

    [annotation_id] = authored(world, 1)
    base = world["url"]
    hebrew(page, base)
    login(page, base, "rivka")
    page.goto(f"{base}/p/he-comfort-qa/review/")
    first = page.locator(".review-question").nth(0)
    first.wait_for()
    with page.expect_response(lambda r: "/review/" in r.url and r.request.method == "POST") as graded:
        first.locator("button[data-grade=good]").click()
    assert graded.value.status == 201
    # The comment comes after the grade: saved a moment later, with that grade.
    comment = "ניסוח טוב. \u200fאפשר לשאול גם על Tel Aviv?"
    with page.expect_response(lambda r: "/review/" in r.url and r.request.method == "POST") as late:
        first.locator(".review-comment").press_sequentially(comment, delay=5)
    assert late.value.status == 200
    page.wait_for_function("() => document.querySelector('.review-question').dataset.unsaved === 'false'")
    review = Review.objects.get(annotation_id=annotation_id, question=0)
    assert (review.grade, review.comment) == ("good", comment)
    # One message in the inbox, with the comment (corrected, not a second message).
    assert list(Feedback.objects.values_list("message", flat=True)) == [comment]

    # Text for a question not graded yet: marked unsaved, and kept over a reload.
    second = page.locator(".review-question").nth(1)
    second.locator(".review-comment").fill("עוד לא החלטתי")
    assert second.get_attribute("data-unsaved") == "true" and second.locator(".unsaved-mark").is_visible()
    screenshots(page, artifacts_dir, "review_unsaved")
    page.reload()
    second = page.locator(".review-question").nth(1)
    second.wait_for()
    assert second.locator(".review-comment").input_value() == "עוד לא החלטתי"
    assert second.get_attribute("data-unsaved") == "true" and second.locator(".unsaved-mark").is_visible()
    assert page.locator(".review-question").nth(0).locator(".review-comment").input_value() == comment
    assert Review.objects.filter(question=1).count() == 0
    # Graded: the kept text goes with the grade.
    with page.expect_response(lambda r: "/review/" in r.url and r.request.method == "POST"):
        second.locator("button[data-grade=verified]").click()
    assert Review.objects.get(question=1).comment == "עוד לא החלטתי"
    page.wait_for_function("() => document.querySelectorAll('.review-question')[1].dataset.unsaved === 'false'")
    page.problems.assert_clean(page)


def test_review_pages_grade_keys_and_the_answer_marked_in_the_paragraph(world, page, artifacts_dir):
    from annotation.models import Review

    ids = authored(world, 23)
    base = world["url"]
    hebrew(page, base)
    login(page, base, "rivka")
    page.goto(f"{base}/p/he-comfort-qa/review/")
    page.wait_for_function("() => document.querySelectorAll('.review-card').length === 20")
    assert page.locator("#page-text").text_content() == "1 / 2"
    # The active question's answer is marked: exactly its code points of the paragraph.
    card = page.locator(".review-card").first
    assert card.locator("mark.answer-span").text_content() == ANSWER_CITY
    assert card.locator("p.text").text_content() == PARAGRAPH
    screenshots(page, artifacts_dir, "review_page_one")

    page.keyboard.press("3")  # good, for the active (first) question
    page.wait_for_function("() => document.querySelector('.review-question').dataset.grade === 'good'")
    assert Review.objects.get(annotation_id=ids[0], question=0).grade == "good"
    # The next question is active now, and its answer is the one marked.
    assert page.locator(".review-question.active").get_attribute("data-question") == "1"
    assert card.locator("mark.answer-span").text_content() == ANSWER_COUNT
    page.keyboard.press("KeyJ")
    assert page.locator(".review-question.active").get_attribute("data-annotation") == str(ids[1])
    page.keyboard.press("1")  # rejected
    page.wait_for_function("(id) => document.querySelector(`.review-question[data-annotation='${id}']`).dataset.grade === 'rejected'",
                           arg=ids[1])  # fmt: skip
    assert Review.objects.get(annotation_id=ids[1], question=0).grade == "rejected"

    page.click("#page-next")
    page.wait_for_function("() => document.querySelectorAll('.review-card').length === 3")
    assert page.locator("#page-text").text_content() == "2 / 2"
    screenshots(page, artifacts_dir, "review_page_two")
    page.problems.assert_clean(page)


# ---------------------------------------------------------------- label pages


def premise(page) -> str:
    return page.locator("#premise").text_content()


def test_flash_previous_edit_decided_and_skip_on_the_label_page(world, page, artifacts_dir):
    from annotation.models import Annotation, Assignment, Item

    base = world["url"]
    hebrew(page, base)
    login(page, base, "eli")
    page.goto(f"{base}/p/he-comfort-nli/annotate/")
    page.wait_for_function("() => document.getElementById('premise').textContent !== ''")
    first = premise(page)
    entailment = page.locator(".label-button[data-label=entailment]")
    expected = re.sub(r"^\s*1\s*", "", entailment.text_content()).strip()

    # A submit by key: the chosen label flashes over the next item.
    with page.expect_response(lambda r: "/submit/" in r.url) as submitted:
        page.keyboard.press("1")
    assert submitted.value.status == 201
    page.wait_for_function("(p) => document.getElementById('premise').textContent !== p", arg=first)
    assert page.locator("#flash").is_visible() and page.locator("#flash").text_content() == expected
    screenshots(page, artifacts_dir, "nli_flash")
    page.wait_for_selector("#flash", state="hidden")
    second = premise(page)

    # Backspace: back to the item just done, its label marked; 2 changes it.
    page.keyboard.press("Backspace")
    page.wait_for_function("(p) => document.getElementById('premise').textContent === p", arg=first)
    assert page.locator("#previous-banner").is_visible()
    assert entailment.get_attribute("aria-pressed") == "true"
    screenshots(page, artifacts_dir, "nli_previous")
    neutral = re.sub(r"^\s*2\s*", "", page.locator(".label-button[data-label=neutral]").text_content()).strip()
    with page.expect_response(lambda r: r.request.method == "PATCH") as changed:
        page.keyboard.press("2")
    assert changed.value.status == 200
    page.wait_for_function("(t) => document.getElementById('flash').textContent === t", arg=neutral)
    assert Annotation.objects.get().value == {"label": "neutral"}
    # ...and back to the claim that was on screen.
    page.wait_for_function("(p) => document.getElementById('premise').textContent === p", arg=second)
    assert page.locator("#previous-banner").is_hidden()

    # A decided round: the page says so and a label key changes nothing.
    Item.objects.filter(pk=Annotation.objects.get().item_id).update(status="accepted")
    page.keyboard.press("Backspace")
    page.wait_for_function("() => document.getElementById('previous-banner').classList.contains('decided')")
    assert page.locator("#previous-text").text_content() == page.locator("#msg-previous-decided").text_content() != ""
    screenshots(page, artifacts_dir, "nli_decided")
    page.keyboard.press("3")
    page.wait_for_selector("#error", state="visible")
    assert Annotation.objects.get().value == {"label": "neutral"}
    page.keyboard.press("Escape")
    page.wait_for_function("(p) => document.getElementById('premise').textContent === p", arg=second)

    # S skips: the claim is released, another item comes, and nothing was stored for it.
    held = Assignment.objects.get(status="claimed")
    with page.expect_response(lambda r: "/skip/" in r.url) as skipped:
        page.keyboard.press("KeyS")
    assert skipped.value.status == 204
    page.wait_for_function("(p) => document.getElementById('premise').textContent !== p", arg=second)
    assert Assignment.objects.get(pk=held.pk).status == "skipped"
    assert Annotation.objects.count() == 1
    page.problems.assert_clean(page)


def test_top_bar_inbox_link_and_feedback_entries_with_question_answer_and_paragraph(world, page, artifacts_dir):
    from annotation.models import Feedback
    from annotation.services.reviews import review_create

    [annotation_id] = authored(world, 1)
    review_create(
        user=world["people"]["rivka"],
        annotation_id=annotation_id,
        grade="verified",
        comment="קרוב מדי לפסקה",
        question=1,
    )
    Feedback.objects.create(recipient=world["people"]["tamar"], project=world["qa"], message="הערה כללית")
    base = world["url"]
    hebrew(page, base)
    login(page, base, "tamar")
    page.goto(f"{base}/")
    assert page.locator("#inbox-unread").text_content() == "2"
    page.click("#inbox-link")
    page.wait_for_url(re.compile(r"/feedback/$"))
    assert page.locator("#inbox-unread").text_content() == "2"
    entry = page.locator(".feedback-entry").nth(1)
    assert entry.locator(".q-text").text_content() == "עם כמה חברות?"
    assert entry.locator(".q-answer").text_content() == ANSWER_COUNT
    entry.locator(".feedback-context summary").click()
    assert entry.locator(".feedback-paragraph").text_content() == PARAGRAPH
    assert entry.locator("mark.answer-span").text_content() == ANSWER_COUNT
    assert entry.locator(".feedback-project-link").get_attribute("href") == "/p/he-comfort-qa/annotate/"
    screenshots(page, artifacts_dir, "feedback_entries")
    Feedback.objects.update(read_at="2026-01-01T00:00:00Z")
    page.goto(f"{base}/p/he-comfort-qa/annotate/")
    assert page.locator("#inbox-unread").count() == 0 and page.locator("#inbox-link").is_visible()
    screenshots(page, artifacts_dir, "inbox_link")
    page.problems.assert_clean(page)


def test_rating_page_flashes_the_scores_and_changes_an_earlier_rating(world, page, artifacts_dir):
    from annotation.models import Annotation, Membership
    from annotation.services.imports import items_import
    from annotation.services.projects import project_create

    mt = project_create(actor=world["qa"].created_by, slug="he-comfort-mt", name="תרגום", kind="translation_rating",
                        language="he")  # fmt: skip
    Membership.objects.create(project=mt, user=world["people"]["eli"], role="annotator", status="active")
    rows = [{"id": f"m{i}", "source": {"premise": f"The train left at {i} o'clock.", "hypothesis": "A train left.", "label": "e"},
             "candidates": [{"system": "x", "premise": f"הרכבת יצאה בשעה {i}.", "hypothesis": "רכבת יצאה."}]}
            for i in range(2)]  # fmt: skip
    assert items_import(project=mt, data=_jsonl(rows), fmt="jsonl").created == 2
    base = world["url"]
    hebrew(page, base)
    login(page, base, "eli")
    page.goto(f"{base}/p/he-comfort-mt/annotate/")
    page.locator("#task").wait_for(state="visible")
    first = page.locator(".candidate-premise").text_content()
    for key in ("Digit4", "Digit5", "Digit3", "KeyY"):
        page.keyboard.press(key)
    with page.expect_response(lambda r: "/submit/" in r.url) as sent:
        page.keyboard.press("Enter")
    assert sent.value.status == 201
    page.wait_for_function("() => document.getElementById('flash').textContent === '1: 4 5 3 ✓'")
    page.wait_for_function("(p) => document.querySelector('.candidate-premise').textContent !== p", arg=first)

    page.keyboard.press("Backspace")
    page.wait_for_function("(p) => document.querySelector('.candidate-premise').textContent === p", arg=first)
    assert page.locator("#previous-banner").is_visible()
    checked = page.eval_on_selector_all(
        "#candidates input:checked", "inputs => inputs.map(i => i.name + '=' + i.value)"
    )
    assert checked == ["c0-accuracy=4", "c0-fluency=5", "c0-cultural_fit=3", "c0-label_valid=yes"]
    screenshots(page, artifacts_dir, "translation_previous")
    page.locator("input[name='c0-fluency'][value='2']").check()
    with page.expect_response(lambda r: r.request.method == "PATCH") as changed:
        page.click("#submit")
    assert changed.value.status == 200
    assert Annotation.objects.get().value["ratings"]["0"]["fluency"] == 2
    page.wait_for_function("(p) => document.querySelector('.candidate-premise').textContent !== p", arg=first)
    page.problems.assert_clean(page)
