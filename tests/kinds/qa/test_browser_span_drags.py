"""Mouse drags on the question-authoring page as an annotator makes them, in Chromium, on
right-to-left paragraphs at desktop and phone widths (annotation/metrics/morphology.py):

- a press inside the answer already marked starts a new selection (not a drag of the text);
- decimal numbers in Persian text, Latin or Persian digits, keep their whole part when dragged
  from the first digit; ה-19 dragged from ה to 9 is ה-19;
- prefix readings are offered where likely (לקו → קו with קו elsewhere in the paragraph) and
  not for words whose first letter is a root letter (מבקרים, מתקני);
- a full stop dragged along is left out of the answer, and the stored answer is without it."""

import pytest

from tests.browser.helpers import PASSWORD, _jsonl, expect, login
from tests.kinds.qa.test_browser import add_question, char_box, utf16

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

HE_TEXT = "הגשר נחנך במאה ה-19, נמתח לאורך 1.2 קילומטרים מעל הנהר ומשך מבקרים רבים אל הקו החדש ולקו הישן."
FA_TEXT = "هزینه‌ی این سد 1.2 میلیارد دلار بود؛ تاج آن در ارتفاع ۱۲۷۴٫۱ متر قرار دارد و آب خروجی تا ۷۰٫۷ درجه گرم می‌شود."
WIDTHS = [1366, 390]


@pytest.fixture
def drag_setup(transactional_db, live_server):
    from django.contrib.auth import get_user_model

    from annotation.models import Membership
    from annotation.services.imports import items_import
    from annotation.services.projects import project_create

    User = get_user_model()
    admin = User.objects.create_user(username="drag-admin", password=PASSWORD, is_staff=True)
    for slug, language, text, name in (("he-drag", "he", HE_TEXT, "tamar"), ("fa-drag", "fa", FA_TEXT, "sara")):
        project = project_create(actor=admin, slug=slug, name=slug, kind="qa_authoring", language=language)
        user = User.objects.create_user(username=name, password=PASSWORD)
        Membership.objects.create(project=project, user=user, role="annotator", status="active")
        items_import(project=project, data=_jsonl([{"id": f"{slug}-1", "context": text}]), fmt="jsonl")
    return live_server.url


def _open(page, base: str, width: int, user: str, slug: str, text: str) -> None:
    page.set_viewport_size({"width": width, "height": 800})
    login(page, base, user, language=slug[:2])
    page.goto(f"{base}/p/{slug}/annotate/")
    expect(page.locator("#paragraph")).to_have_text(text)


def _centre(box: dict) -> tuple[float, float]:
    return (box["left"] + box["right"]) / 2, (box["top"] + box["bottom"]) / 2


# Scroll the page and the sticky paragraph card (its own scroll box) to show [i, j) (UTF-16).
_SHOW = """([i, j]) => {
  const node = document.getElementById('paragraph').firstChild;
  const range = document.createRange(); range.setStart(node, i); range.setEnd(node, j);
  const card = document.querySelector('.paragraph-card');
  card.scrollTop += range.getBoundingClientRect().top - card.getBoundingClientRect().top - 8;
  const rect = range.getBoundingClientRect();
  if (rect.top < 0 || rect.bottom > window.innerHeight) { window.scrollBy(0, rect.top - window.innerHeight / 3); }
  card.scrollTop += range.getBoundingClientRect().top - card.getBoundingClientRect().top - 8;
}"""


def _drag(page, text: str, first: int, last: int) -> None:
    """Press on the middle of character `first` (a code point offset) and release on the
    middle of character `last`, as a hand does, once the reader has scrolled them into view."""
    page.evaluate(_SHOW, [utf16(text, first), utf16(text, last + 1)])
    x1, y1 = _centre(char_box(page, utf16(text, first)))
    x2, y2 = _centre(char_box(page, utf16(text, last)))
    page.mouse.move(x1, y1)
    page.mouse.down()
    page.mouse.move((x1 + x2) / 2, (y1 + y2) / 2, steps=5)
    page.mouse.move(x2, y2, steps=5)
    page.mouse.up()


def _drag_over(page, text: str, phrase: str) -> None:
    start = text.index(phrase)
    _drag(page, text, start, start + len(phrase) - 1)


def _answer(page):
    return expect(page.locator("#answer-text"))


@pytest.mark.parametrize("width", WIDTHS)
def test_persian_decimals_keep_their_whole_part(drag_setup, page, width, artifacts_dir):
    _open(page, drag_setup, width, "sara", "fa-drag", FA_TEXT)
    for phrase in ("1.2 میلیارد", "۱۲۷۴٫۱ متر", "۷۰٫۷ درجه"):
        _drag_over(page, FA_TEXT, phrase)
        _answer(page).to_have_text(phrase)
    page.screenshot(path=str(artifacts_dir / f"qa_drag_decimals_{width}.png"), full_page=True)
    page.problems.assert_clean(page)


@pytest.mark.parametrize("width", WIDTHS)
def test_hebrew_drags_prefix_numbers_offers_and_a_new_drag_inside_the_answer(drag_setup, page, width):
    from annotation.models import Annotation

    _open(page, drag_setup, width, "tamar", "he-drag", HE_TEXT)
    # ה-19 from ה to 9.
    _drag_over(page, HE_TEXT, "ה-19")
    _answer(page).to_have_text("ה-19")
    # לקו: קו stands after ה in הקו, so the reading without ל is offered.
    _drag_over(page, HE_TEXT, "לקו")
    _answer(page).to_have_text("לקו")
    expect(page.locator("#prefix-offer")).to_be_visible()
    expect(page.locator("#prefix-variant")).to_have_text("קו")
    # מבקרים is not מ + בקרים: nothing offered.
    _drag_over(page, HE_TEXT, "מבקרים")
    _answer(page).to_have_text("מבקרים")
    expect(page.locator("#prefix-offer")).to_be_hidden()

    # Mark "1.2 קילומטרים", then press inside that answer and drag on to the full stop: the new
    # selection replaces the old one, and the full stop is left out.
    _drag_over(page, HE_TEXT, "1.2 קילומטרים")
    _answer(page).to_have_text("1.2 קילומטרים")
    inside = HE_TEXT.index("קילומטרים") + 4
    _drag(page, HE_TEXT, inside, len(HE_TEXT) - 1)
    _answer(page).to_have_text("קילומטרים מעל הנהר ומשך מבקרים רבים אל הקו החדש ולקו הישן")
    add_question(page, "מה אורך הגשר?")
    _drag_over(page, HE_TEXT, "הישן.")
    _answer(page).to_have_text("הישן")
    add_question(page, "איזה קו?")
    add_question(page, "מתי נבנה הגשר?", answerable=False)
    with page.expect_response(lambda r: r.request.method == "POST" and "/submit/" in r.url) as submitted:
        page.click("#done-paragraph")
    assert submitted.value.status == 201, submitted.value.text()
    answers = [q["answer"]["text"] for q in Annotation.objects.get().value["questions"] if q["answer"]]
    assert answers == ["קילומטרים מעל הנהר ומשך מבקרים רבים אל הקו החדש ולקו הישן", "הישן"]
    page.problems.assert_clean(page)
