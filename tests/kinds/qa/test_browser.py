"""The qa_authoring pages in a real browser (Debian chromium through Playwright).

Answers are marked with the mouse and with the keyboard in an RTL paragraph, and the stored
`start` (code points of the stored paragraph) and `text` are checked against Python's slicing:
- Hebrew, with Latin words, digits and an emoji (two UTF-16 units, one code point) before the
  answers, so a page that sent the browser's UTF-16 offsets would be off by one;
- Persian, with ZWNJ inside the words of the answers.
Questions are edited and deleted before "Done, next paragraph". Then a reviewer grades on the
review page, the annotator finds grade and comment in the feedback inbox (unread count), and a
validator marks their own span on the validation page. Screenshots: tests/browser/artifacts/qa_*.png."""

import json
import re

import pytest
import regex

from tests.browser.helpers import PASSWORD, _jsonl, follow, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ZWNJ = "\u200c"
HE_PARAGRAPH = "בשנת 2019 הודיעה חברת Intel 🚀 כי תשקיע 11 מיליארד דולר בקריית גת, עיר בדרום הארץ."
HE_MOUSE_ANSWER = "קריית גת"  # without the prefix letter ב
HE_KEY_ANSWER = "11 מיליארד"
FA_PARAGRAPH = f"کتاب{ZWNJ}های تاریخی در کتابخانه{ZWNJ}ی ملی ایران نگهداری می{ZWNJ}شوند و بیش از ۲۰۰ هزار جلد دارند."
FA_MOUSE_ANSWER = f"کتابخانه{ZWNJ}ی ملی"
FA_KEY_ANSWER = f"می{ZWNJ}شوند"
# Pointed Hebrew: shin + shin dot + qamats is one character of three code points.
SHATA = "\u05e9\u05c1\u05b8\u05ea\u05b8\u05d4"  # drank
MAYIM = "\u05de\u05b7\u05d9\u05b4\u05dd"  # water
NIQQUD_PARAGRAPH = f"הילד {SHATA} {MAYIM} קרים בבוקר, אחרי ריצה ארוכה בפארק."


@pytest.fixture
def qa_setup(transactional_db, live_server):
    from django.contrib.auth import get_user_model

    from annotation.models import Membership
    from annotation.services.imports import items_import
    from annotation.services.projects import project_create

    User = get_user_model()
    admin = User.objects.create_user(username="qa-admin", password=PASSWORD, is_staff=True)
    users = {
        name: User.objects.create_user(username=name, password=PASSWORD)
        for name in ("dana", "reza", "rivka", "yossi", "noa")
    }
    he = project_create(
        actor=admin,
        slug="he-qa",
        name="HeQ authoring",
        kind="qa_authoring",
        language="he",
        settings={"validate_splits": ["train", "dev", "test"]},
    )
    fa = project_create(
        actor=admin,
        slug="fa-qa",
        name="پرسش و پاسخ",
        kind="qa_authoring",
        language="fa",
        settings={"min_questions": 2, "max_questions": 3},
    )
    Membership.objects.create(project=he, user=users["dana"], role="annotator", status="trial")
    Membership.objects.create(project=he, user=users["rivka"], role="reviewer", status="active")
    Membership.objects.create(project=he, user=users["yossi"], role="annotator", status="active")
    Membership.objects.create(project=fa, user=users["reza"], role="annotator", status="active")
    pointed = project_create(actor=admin, slug="nq-qa", name="Pointed text", kind="qa_authoring", language="he")
    Membership.objects.create(project=pointed, user=users["noa"], role="annotator", status="active")
    assert (
        items_import(
            project=pointed, data=_jsonl([{"id": "nq-1", "context": NIQQUD_PARAGRAPH, "title": "בוקר"}]), fmt="jsonl"
        ).created
        == 1
    )
    assert (
        items_import(
            project=he, data=_jsonl([{"id": "he-1", "context": HE_PARAGRAPH, "title": "אינטל"}]), fmt="jsonl"
        ).created
        == 1
    )
    assert (
        items_import(
            project=fa, data=_jsonl([{"id": "fa-1", "context": FA_PARAGRAPH, "title": "کتابخانه"}]), fmt="jsonl"
        ).created
        == 1
    )
    return {"url": live_server.url, "users": users}


def char_box(page, index_utf16: int) -> dict:
    """The on-screen box of the character at a UTF-16 offset of the paragraph."""
    return page.evaluate(
        """(i) => { const node = document.getElementById('paragraph').firstChild;
                    const r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + 1);
                    const b = r.getBoundingClientRect(); return {left: b.left, right: b.right, top: b.top, bottom: b.bottom}; }""",
        index_utf16,
    )


def utf16(text: str, codepoints: int) -> int:
    return len(text[:codepoints].encode("utf-16-le")) // 2


def mouse_select(page, paragraph: str, answer: str) -> None:
    """Drag from the first character's right (reading-start) edge to the last one's left edge:
    in an RTL line the answer runs from right to left."""
    start = paragraph.index(answer)
    first = char_box(page, utf16(paragraph, start))
    last = char_box(page, utf16(paragraph, start + len(answer) - 1))
    y_first = (first["top"] + first["bottom"]) / 2
    y_last = (last["top"] + last["bottom"]) / 2
    page.mouse.move(first["right"] - 1, y_first)
    page.mouse.down()
    page.mouse.move((first["right"] + last["left"]) / 2, (y_first + y_last) / 2, steps=5)
    page.mouse.move(last["left"] + 1, y_last, steps=5)
    page.mouse.up()


def characters(text: str) -> int:
    """User-perceived characters (extended grapheme clusters): one arrow press each."""
    return len(regex.findall(r"\X", text))


def keyboard_select(page, paragraph: str, answer: str) -> None:
    """Caret to the answer's start one character at a time (ArrowLeft moves on in RTL; an
    emoji, a letter with its points is one press), then Shift+ArrowLeft over the answer."""
    page.focus("#paragraph")
    page.keyboard.press("Home")
    for _ in range(characters(paragraph[: paragraph.index(answer)])):
        page.keyboard.press("ArrowLeft")
    for _ in range(characters(answer)):
        page.keyboard.press("Shift+ArrowLeft")


def answer_shown(page) -> str:
    return page.locator("#answer-text").text_content()


def add_question(page, text: str, *, answerable: bool = True) -> None:
    page.locator("#question-input").fill(text)
    page.locator("#question-input").dispatch_event("input")
    if not answerable:
        page.check("#answerable-no")
    page.click("#add-question")


def test_hebrew_spans_by_mouse_and_keyboard_then_review_feedback_validation(qa_setup, page, artifacts_dir):
    from annotation.models import Annotation, Feedback, QuestionValidation

    base = qa_setup["url"]
    login(page, base, "dana", language="he")
    response = page.goto(f"{base}/p/he-qa/annotate/")
    assert response.status == 200
    assert page.locator("html").get_attribute("dir") == "rtl" and page.locator("html").get_attribute("lang") == "he"
    page.wait_for_function("(t) => document.getElementById('paragraph').textContent === t", arg=HE_PARAGRAPH)
    assert page.locator("#paragraph").evaluate("e => getComputedStyle(e).direction") == "rtl"

    # Mouse: the answer comes after Latin, digits and an emoji.
    mouse_select(page, HE_PARAGRAPH, HE_MOUSE_ANSWER)
    page.wait_for_function("(t) => document.getElementById('answer-text').textContent === t", arg=HE_MOUSE_ANSWER)
    # Live word overlap: a question copying the paragraph warns, a reworded one does not.
    from annotation.metrics.overlap import question_overlap

    copied = "היכן תשקיע חברת Intel 11 מיליארד דולר?"
    page.locator("#question-input").fill(copied)
    page.locator("#question-input").dispatch_event("input")
    assert page.locator("#overlap-warning").is_visible()
    # The page's live figure is the server's (annotation/metrics/overlap.py): 6 of 7 words.
    assert (
        page.locator("#overlap-value").text_content()
        == f"{round(question_overlap(copied, HE_PARAGRAPH) * 100)}%"
        == "86%"
    )
    page.locator("#question-input").fill("באיזו עיר יושקע הסכום?")
    page.locator("#question-input").dispatch_event("input")
    assert (
        page.locator("#overlap-warning").is_hidden() and page.locator("#overlap-value").text_content() == "25%"
    )  # "עיר" is in the paragraph
    page.click("#add-question")
    assert page.locator("#questions li").count() == 1

    # Keyboard: Shift+arrows in the RTL paragraph, across the emoji.
    keyboard_select(page, HE_PARAGRAPH, HE_KEY_ANSWER)
    assert answer_shown(page) == HE_KEY_ANSWER
    add_question(page, "מה גודל ההשקעה?")
    add_question(page, "כמה עובדים יועסקו במפעל?", answerable=False)
    add_question(page, "שאלה למחיקה?", answerable=False)
    assert page.locator("#questions li").count() == 4
    # Delete the fourth, edit the second.
    page.locator("#questions li").nth(3).locator(".q-delete").click()
    page.locator("#questions li").nth(1).locator(".q-edit").click()
    assert page.locator("#question-input").input_value() == "מה גודל ההשקעה?"
    assert answer_shown(page) == HE_KEY_ANSWER
    page.locator("#question-input").fill("מה היקף ההשקעה המתוכננת?")
    page.click("#add-question")
    texts = page.locator("#questions .q-text").all_text_contents()
    assert texts == ["באיזו עיר יושקע הסכום?", "מה היקף ההשקעה המתוכננת?", "כמה עובדים יועסקו במפעל?"]
    page.screenshot(path=str(artifacts_dir / "qa_he_questions.png"), full_page=True)

    with page.expect_response(lambda r: r.request.method == "POST" and "/submit/" in r.url) as submitted:
        page.click("#done-paragraph")
    assert submitted.value.status == 201
    page.wait_for_selector("#nothing-left", state="visible")
    value = Annotation.objects.get().value
    spans = [q["answer"] for q in value["questions"]]
    start = HE_PARAGRAPH.index(HE_MOUSE_ANSWER)
    assert spans[0] == {"start": start, "text": HE_MOUSE_ANSWER}
    assert utf16(HE_PARAGRAPH, start) == start + 1  # the emoji: UTF-16 would have been off by one
    assert spans[1] == {"start": HE_PARAGRAPH.index(HE_KEY_ANSWER), "text": HE_KEY_ANSWER}
    assert spans[2] is None and value["questions"][2]["answerable"] is False
    page.problems.assert_clean(page)

    # Review: rivka grades the first question with a comment.
    review_page = page.context.browser.new_context(locale="en-US").new_page()  # its own session
    login(review_page, base, "rivka")
    review_page.goto(f"{base}/p/he-qa/review/")
    block = review_page.locator(".review-question").first
    block.wait_for()
    assert block.locator(".q-text").text_content() == "באיזו עיר יושקע הסכום?"
    assert block.locator(".q-answer").text_content() == HE_MOUSE_ANSWER
    block.locator(".review-comment").fill("שאלה טובה, ניסוח שונה מהפסקה.")
    with review_page.expect_response(lambda r: "/review/" in r.url and r.request.method == "POST") as graded:
        block.locator("button[data-grade=good]").click()
    assert graded.value.status == 201
    review_page.screenshot(path=str(artifacts_dir / "qa_he_review.png"), full_page=True)
    review_page.context.close()
    assert Feedback.objects.get().message == "שאלה טובה, ניסוח שונה מהפסקה."

    # Feedback: dana sees the unread count, the grade and the comment, and marks it read.
    page.goto(f"{base}/p/he-qa/annotate/")
    page.wait_for_selector("#unread-badge", state="visible")
    assert page.locator("#unread-badge").text_content().startswith("1")
    page.goto(f"{base}/feedback/")
    assert page.locator("#unread-count").text_content() == "1"
    entry = page.locator(".feedback-entry").first
    assert entry.get_attribute("dir") is None  # the entry's labels read in the interface's direction
    assert entry.locator(".feedback-message").get_attribute("lang") == "he"  # the texts in the project's language
    assert entry.locator(".grade").get_attribute("data-grade") == "good"
    assert entry.locator(".feedback-message").text_content() == "שאלה טובה, ניסוח שונה מהפסקה."
    page.screenshot(path=str(artifacts_dir / "qa_he_feedback.png"), full_page=True)
    with page.expect_navigation():
        entry.locator(".mark-read").click()
    assert page.locator("#unread-count").is_hidden()
    assert Feedback.objects.get().read_at is not None

    # Validation: yossi answers blind, with the prefix letter this time (an extra gold span).
    validator = page.context.browser.new_context(locale="en-US").new_page()
    login(validator, base, "yossi")
    validator.goto(f"{base}/p/he-qa/validate/")
    validator.wait_for_function("(t) => document.getElementById('paragraph').textContent === t", arg=HE_PARAGRAPH)
    validator.wait_for_function("() => document.getElementById('validate-qa').dataset.question !== undefined")
    # Questions come in random order: call the others unanswerable until the first one shows.
    while validator.locator("#question").text_content() != "באיזו עיר יושקע הסכום?":
        before = validator.locator("#validate-qa").get_attribute("data-question")
        validator.click("#submit-unanswerable")
        validator.wait_for_function("(q) => document.getElementById('validate-qa').dataset.question !== q", arg=before)
    mouse_select(validator, HE_PARAGRAPH, "ב" + HE_MOUSE_ANSWER)
    validator.wait_for_function(
        "(t) => document.getElementById('answer-text').textContent === t", arg="ב" + HE_MOUSE_ANSWER
    )
    with validator.expect_response(lambda r: "/validations/submit/" in r.url) as sent:
        validator.click("#submit-span")
    assert sent.value.status == 201
    validation = QuestionValidation.objects.get(question=0)
    assert (validation.answer_start, validation.answer_text) == (start - 1, "ב" + HE_MOUSE_ANSWER)
    validator.context.close()


def test_persian_spans_with_zwnj(qa_setup, page, artifacts_dir):
    from annotation.models import Annotation

    base = qa_setup["url"]
    login(page, base, "reza", language="fa")
    page.goto(f"{base}/p/fa-qa/annotate/")
    assert page.locator("html").get_attribute("dir") == "rtl" and page.locator("html").get_attribute("lang") == "fa"
    page.wait_for_function("(t) => document.getElementById('paragraph').textContent === t", arg=FA_PARAGRAPH)
    # Arabic yeh typed for Persian yeh: the same words in a Persian project (its default
    # fold_letter_variants), as the server counts them.
    from annotation.metrics.overlap import question_overlap

    typed = "\u0645\u0644\u064a \u0627\u064a\u0631\u0627\u0646"  # "ملي ايران"
    page.locator("#question-input").fill(typed)
    page.locator("#question-input").dispatch_event("input")
    assert round(question_overlap(typed, FA_PARAGRAPH, fold_letters=True) * 100) == 100
    assert page.locator("#overlap-value").text_content() == "۱۰۰٪"  # in the Persian interface's digits

    mouse_select(page, FA_PARAGRAPH, FA_MOUSE_ANSWER)
    page.wait_for_function("(t) => document.getElementById('answer-text').textContent === t", arg=FA_MOUSE_ANSWER)
    add_question(page, "کتاب‌های تاریخی کجا نگهداری می‌شوند؟")
    # Keyboard by word: Ctrl+ArrowLeft moves a word on in RTL; ZWNJ does not end a word.
    page.focus("#paragraph")
    page.keyboard.press("Home")
    words_before = FA_PARAGRAPH[: FA_PARAGRAPH.index(FA_KEY_ANSWER)].split()
    for _ in words_before:
        page.keyboard.press("Control+ArrowLeft")
    page.keyboard.press("Control+Shift+ArrowLeft")
    assert answer_shown(page) == FA_KEY_ANSWER
    add_question(page, "این کتاب‌ها چه می‌شوند؟")
    assert page.locator("#done-paragraph").is_enabled()
    page.screenshot(path=str(artifacts_dir / "qa_fa_questions.png"), full_page=True)
    with page.expect_response(
        lambda r: r.request.method == "POST" and re.search(r"/submit/$", r.url) is not None
    ) as sent:
        page.click("#done-paragraph")
    assert sent.value.status == 201, sent.value.text()
    page.wait_for_selector("#nothing-left", state="visible")
    questions = Annotation.objects.get().value["questions"]
    assert questions[0]["answer"] == {"start": FA_PARAGRAPH.index(FA_MOUSE_ANSWER), "text": FA_MOUSE_ANSWER}
    assert questions[1]["answer"] == {"start": FA_PARAGRAPH.index(FA_KEY_ANSWER), "text": FA_KEY_ANSWER}
    assert questions[0]["question"] == "کتاب‌های تاریخی کجا نگهداری می‌شوند؟"  # ZWNJ typed and kept
    page.problems.assert_clean(page)


def test_pointed_letters_are_selected_whole(qa_setup, page, artifacts_dir):
    """A pointed letter is one character: one Shift+Arrow press takes the letter with all its
    points, a mouse selection ending between a letter and its points grows to the whole letter,
    and the spans submitted are accepted as the paragraph's exact slices."""
    from annotation.models import Annotation

    base = qa_setup["url"]
    login(page, base, "noa")
    page.goto(f"{base}/p/nq-qa/annotate/")
    page.wait_for_function("(t) => document.getElementById('paragraph').textContent === t", arg=NIQQUD_PARAGRAPH)
    page.focus("#paragraph")
    page.keyboard.press("Home")
    for _ in range(characters(NIQQUD_PARAGRAPH[: NIQQUD_PARAGRAPH.index(SHATA)])):
        page.keyboard.press("ArrowLeft")
    page.keyboard.press("Shift+ArrowLeft")
    first_letter = SHATA[:3]  # shin, shin dot, qamats
    assert answer_shown(page) == first_letter
    selected = page.evaluate("() => document.getSelection().toString()")
    assert selected == first_letter and len(selected) == 3
    for _ in range(characters(SHATA) - 1):
        page.keyboard.press("Shift+ArrowLeft")
    assert answer_shown(page) == SHATA
    add_question(page, "מה עשה הילד?")

    # A selection from between mem and its patah to inside the final letter's cluster.
    start = NIQQUD_PARAGRAPH.index(MAYIM)
    page.evaluate(
        """([s, e]) => { const node = document.getElementById('paragraph').firstChild;
                         document.getSelection().setBaseAndExtent(node, s, node, e); }""",
        [utf16(NIQQUD_PARAGRAPH, start + 1), utf16(NIQQUD_PARAGRAPH, start + 3)],
    )
    page.wait_for_function("(t) => document.getElementById('answer-text').textContent === t", arg=MAYIM[:4])
    add_question(page, "מה שתה הילד?")
    add_question(page, "כמה זמן רץ הילד?", answerable=False)
    page.screenshot(path=str(artifacts_dir / "qa_niqqud_questions.png"), full_page=True)
    with page.expect_response(lambda r: r.request.method == "POST" and "/submit/" in r.url) as submitted:
        page.click("#done-paragraph")
    assert submitted.value.status == 201, submitted.value.text()
    spans = [q["answer"] for q in Annotation.objects.get().value["questions"]]
    assert spans[0] == {"start": NIQQUD_PARAGRAPH.index(SHATA), "text": SHATA}
    assert spans[1] == {"start": start, "text": MAYIM[:4]}  # mem + patah, yod + hiriq: whole letters
    page.problems.assert_clean(page)


def test_imported_question_validated_blind_then_quality_page(qa_setup, page, artifacts_dir):
    """HeQ §3.3: a question that came with the imported file is answered blind on the
    validation page (the span lands on the exact characters, stored against the file's question
    id), then the reviewer's quality dashboard shows the validator-vs-file agreement, RTL."""
    from annotation.models import Item, Project, QuestionValidation
    from annotation.selectors.names import annotator_pseudonym
    from annotation.services.imports import items_import

    answer_start = HE_PARAGRAPH.index(HE_MOUSE_ANSWER)
    doc = {
        "version": "v1.1",
        "data": [
            {
                "title": "אינטל",
                "source": "Wikipedia",
                "paragraphs": [
                    {
                        "context": HE_PARAGRAPH,
                        "qas": [
                            {
                                "question": "באיזו עיר תשקיע החברה?",
                                "id": "imp-1",
                                "answers": [{"text": HE_MOUSE_ANSWER, "answer_start": answer_start}],
                                "is_impossible": False,
                                "WH Question": "איזו",
                                "question quality": "good",
                                "wrong_answers": [],
                            }
                        ],
                    }
                ],
            }
        ],
    }
    he = Project.objects.get(slug="he-qa")
    Item.objects.filter(project=he).delete()
    assert items_import(project=he, data=json.dumps(doc, ensure_ascii=False).encode("utf-8"), fmt="squad").created == 1
    base = qa_setup["url"]

    login(page, base, "yossi")
    page.goto(f"{base}/p/he-qa/validate/")
    page.wait_for_function("(t) => document.getElementById('paragraph').textContent === t", arg=HE_PARAGRAPH)
    assert page.locator("#question").text_content() == "באיזו עיר תשקיע החברה?"
    assert page.locator("#validate-qa").get_attribute("data-question-key") == "imp-1"
    assert page.locator("#answer-text").text_content() == ""  # blind: nothing marked for them
    mouse_select(page, HE_PARAGRAPH, "ב" + HE_MOUSE_ANSWER)
    page.wait_for_function("(t) => document.getElementById('answer-text').textContent === t", arg="ב" + HE_MOUSE_ANSWER)
    with page.expect_response(lambda r: "/validations/submit/" in r.url) as sent:
        page.click("#submit-span")
    assert sent.value.status == 201, sent.value.text()
    page.wait_for_selector("#nothing-left", state="visible")
    stored = QuestionValidation.objects.get()
    assert (stored.item_id, stored.question_key, stored.annotation_id) == (
        Item.objects.get(project=he).pk,
        "imp-1",
        None,
    )
    assert (stored.answer_start, stored.answer_text) == (answer_start - 1, "ב" + HE_MOUSE_ANSWER)
    page.problems.assert_clean(page)

    reviewer = page.context.browser.new_context(locale="he-IL").new_page()
    login(reviewer, base, "rivka", language="he")
    reviewer.goto(f"{base}/p/he-qa/review/")
    follow(reviewer, "#quality-link")  # read once the page has loaded (tests/browser/helpers.py)
    reviewer.wait_for_selector("#qa-quality")
    assert reviewer.locator("html").get_attribute("dir") == "rtl"
    row = reviewer.locator('tr[data-row="imported"]')
    assert row.locator('[data-figure="span_agreement.imported.pairs"]').text_content() == "1"
    assert row.locator('[data-figure="span_agreement.imported.em"]').text_content() == "0.000"
    assert reviewer.locator('[data-figure="span_agreement.imported.tlnls"]').text_content() == "0.917"  # (5/6 + 1) / 2
    # A reviewer sees people by their export pseudonym, never by username (selectors.names).
    yossi = annotator_pseudonym(he.pk, qa_setup["users"]["yossi"].pk)
    assert reviewer.locator(f'tr[data-row="validator:{yossi}"] bdi.validator').text_content() == yossi
    assert "yossi" not in reviewer.locator("main").inner_text()
    # The first position bin sits at the inline start: on the right in an RTL page.
    bars = reviewer.locator('[data-chart="answer_positions"] svg.qq-histogram rect.qq-imported')
    assert float(bars.first.get_attribute("x")) > float(bars.last.get_attribute("x"))
    reviewer.screenshot(path=str(artifacts_dir / "qa_quality.png"), full_page=True)
    reviewer.context.close()


def test_review_page_shows_bidi_controls_in_free_text(qa_setup, page, artifacts_dir):
    """docs/text.md "Identifiers and bidi controls": a bidi override typed into a question is kept byte for byte and shown to
    the reviewer as a visible mark, so it cannot silently reorder what they read."""
    from annotation.models import Annotation
    from annotation.services.assignments import annotation_submit, assignment_next_for_annotator

    rlo = "\u202e"
    question = f"באיזו עיר {rlo}Intel{rlo} תשקיע?"
    start = HE_PARAGRAPH.index(HE_MOUSE_ANSWER)
    value = {
        "questions": [
            {"question": question, "answerable": True, "answer": {"start": start, "text": HE_MOUSE_ANSWER}},
            {"question": "מתי?", "answerable": True, "answer": {"start": HE_PARAGRAPH.index("2019"), "text": "2019"}},
            {"question": "כמה עובדים?", "answerable": False, "answer": None},
        ]
    }
    dana = qa_setup["users"]["dana"]
    assignment = assignment_next_for_annotator(user=dana, slug="he-qa")
    annotation_submit(user=dana, assignment_id=assignment.pk, value=value)
    assert Annotation.objects.get().value["questions"][0]["question"] == question  # stored as typed

    login(page, qa_setup["url"], "rivka")
    page.goto(f"{qa_setup['url']}/p/he-qa/review/")
    first = page.locator(".review-question").first.locator("bdi.q-text")
    first.wait_for()
    marks = first.locator(".bidi-control")
    assert marks.count() == 2 and marks.first.is_visible()
    assert marks.first.text_content() == "U+202E"
    # Only the marks replace the controls: the rest of the question is there as typed.
    assert first.text_content() == question.replace(rlo, "U+202E")
    page.screenshot(path=str(artifacts_dir / "qa_review_bidi.png"), full_page=True)
    page.problems.assert_clean(page)
