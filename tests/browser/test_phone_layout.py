"""What a person sees at phone (390 px) and desktop (1366 px) widths, measured in Chromium:

- the home page lists projects as cards on a phone, each name a link and the Annotate button
  within the screen, in the English and Persian interfaces, and the page never scrolls sideways;
- the annotator-quality table shows its flag and "move back to trial" columns at 1366 px
  without a sideways scroll;
- the first-visit guide opens collapsed on a phone (its summary is the visible toggle), so the
  item is in view; on a desktop it opens as before;
- the question page's sticky paragraph, cut at 45 % of the screen, shows a cue while more of it
  is below, and none once its end is in view;
- the console's kind select fits the phone's screen."""

import pytest

from tests.browser.helpers import PASSWORD, _jsonl, expect, login
from tests.browser.test_quality_pages import SLUG as QUALITY_SLUG
from tests.browser.test_quality_pages import judged  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Hand-written, long enough to overflow the paragraph's box on a phone.
LONG_PARAGRAPH = " ".join(
    [
        "העירייה פתחה השבוע גן ציבורי חדש בשכונה הצפונית, ובו שבילי הליכה, מגרש משחקים ופינת קריאה מוצלת.",
        "לדברי מהנדסת העיר, העבודות נמשכו כשנתיים ועלו כשמונה מיליון שקלים, שחלקם הגיעו מתרומות של תושבים.",
        "בגן נשתלו יותר ממאתיים עצים, רובם ממינים מקומיים שאינם צריכים השקיה רבה בקיץ.",
        "בערבים תפעל במקום תאורה חסכונית, ובסופי השבוע יתקיימו בו הופעות קטנות של להקות מהאזור.",
        "התושבים ביקשו להוסיף גם ברזיות ומתקני כושר, והעירייה הבטיחה לבחון את הבקשה בתקציב הבא.",
    ]
)
WIDTHS = [390, 1366]
# Whether an element's box lies within the screen's width, and whether the page scrolls sideways.
_IN_VIEW = "(e) => { const r = e.getBoundingClientRect(); return r.left >= -0.5 && r.right <= window.innerWidth + 0.5 && r.width > 0; }"
_SIDEWAYS = "() => document.documentElement.scrollWidth > document.documentElement.clientWidth + 1"


@pytest.fixture
def world(transactional_db, live_server):
    from django.contrib.auth import get_user_model

    from annotation.models import Membership
    from annotation.services.imports import items_import
    from annotation.services.projects import project_create

    User = get_user_model()
    admin = User.objects.create_user(username="phone-admin", password=PASSWORD, is_staff=True)
    shira = User.objects.create_user(username="shira", password=PASSWORD)
    qa = project_create(
        actor=admin, slug="he-long", name="שאלות על פסקאות ארוכות מאוד של חדשות מקומיות", kind="qa_authoring",
        language="he", guidelines="כתבו שאלות במילים שלכם.\n\n" * 6,
    )  # fmt: skip
    items_import(project=qa, data=_jsonl([{"id": "long-1", "context": LONG_PARAGRAPH}]), fmt="jsonl")
    nli = project_create(actor=admin, slug="fa-nli-phone", name="استنتاج زبان طبیعی", kind="nli_relabel", language="fa")
    items_import(
        project=nli, data=_jsonl([{"id": "n1", "premise": "باران آمد.", "hypothesis": "زمین خیس است."}]), fmt="jsonl"
    )
    for project in (qa, nli):
        Membership.objects.create(project=project, user=shira, role="annotator", status="active")
    return live_server.url


@pytest.mark.parametrize("language", ["en", "fa"])
@pytest.mark.parametrize("width", WIDTHS)
def test_home_lists_projects_with_linked_names_and_annotate_in_view(world, page, width, language, artifacts_dir):
    page.set_viewport_size({"width": width, "height": 844})
    login(page, world, "shira", language=language)
    page.goto(f"{world}/")
    rows = page.locator("table.project-list tbody tr")
    expect(rows).to_have_count(2)
    for i in range(2):
        row = rows.nth(i)
        name = row.locator(".project-name a")
        expect(name).to_have_attribute(
            "href", f"/p/{'fa-nli-phone' if 'استنتاج' in name.inner_text() else 'he-long'}/annotate/"
        )
        button = row.locator("a.button.primary")
        expect(button).to_be_visible()
        assert button.evaluate(_IN_VIEW), (width, language, button.bounding_box())
    assert not page.evaluate(_SIDEWAYS)
    page.screenshot(path=str(artifacts_dir / f"home_{language}_{width}.png"), full_page=True)
    page.problems.assert_clean(page)


def test_quality_table_shows_flag_and_action_at_desktop_width(judged, page):  # noqa: F811
    login(page, judged["url"], "boss", language="he")
    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(f"{judged['url']}/p/{QUALITY_SLUG}/annotators/")
    expect(page.locator("#quality-table")).to_be_visible()
    box = page.locator(".table-scroll")
    assert box.evaluate("(e) => e.scrollWidth <= e.clientWidth + 1"), box.evaluate(
        "(e) => [e.scrollWidth, e.clientWidth]"
    )
    for cell in (page.locator("#quality-table thead th").last, page.locator("form.trial-form button").first):
        assert cell.evaluate(_IN_VIEW), cell.bounding_box()
    page.set_viewport_size({"width": 390, "height": 844})
    assert not page.evaluate(_SIDEWAYS)


@pytest.mark.parametrize("width", WIDTHS)
def test_first_visit_guide_and_the_paragraph_scroll_cue(world, page, width, artifacts_dir):
    page.set_viewport_size({"width": width, "height": 844})
    login(page, world, "shira", language="he")
    page.goto(f"{world}/p/he-long/annotate/")
    expect(page.locator("#paragraph")).to_have_text(LONG_PARAGRAPH)
    guide = page.locator("#guide")
    summary = guide.locator("summary")
    expect(summary).to_be_visible()
    assert summary.evaluate(_IN_VIEW)
    is_open = guide.evaluate("(e) => e.open")
    if width == 390:
        assert not is_open  # collapsed: the item is in view
        top = page.locator("#paragraph").evaluate("(e) => e.getBoundingClientRect().top")
        assert top < 844 * 0.75, top
        summary.click()  # the toggle opens it
        assert guide.evaluate("(e) => e.open")
        summary.click()
    else:
        assert is_open
    # The paragraph's box: a cue while its end is out of view.
    card = page.locator(".paragraph-card")
    overflows = card.evaluate("(e) => e.scrollHeight > e.clientHeight + 2")
    cue = page.locator("#paragraph-more")
    if overflows:
        expect(cue).to_be_visible()
        assert cue.evaluate(_IN_VIEW)
        page.screenshot(path=str(artifacts_dir / f"qa_scroll_cue_{width}.png"))
        card.evaluate("(e) => { e.scrollTop = e.scrollHeight; }")
        expect(cue).to_be_hidden()
    else:
        expect(cue).to_be_hidden()
    if width == 390:
        assert overflows  # the long paragraph does not fit 45 % of a phone's screen
    assert not page.evaluate(_SIDEWAYS)
    page.problems.assert_clean(page)


# Width of every option's label in the select's own font, against the room inside the select
# (its width less padding, border and the arrow): a label wider than that is shown cut.
_LABELS_FIT = """(s) => {
  const style = getComputedStyle(s);
  const ctx = document.createElement('canvas').getContext('2d');
  ctx.font = style.font;
  const room = s.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 20;
  return Array.from(s.options).map((o) => [o.text, ctx.measureText(o.text).width, room]).filter((x) => x[1] > x[2]);
}"""


@pytest.mark.parametrize("language", ["en", "he", "fa"])
def test_kind_select_fits_a_phone(world, page, language):
    page.set_viewport_size({"width": 390, "height": 844})
    login(page, world, "phone-admin", language=language)
    page.goto(f"{world}/console/projects/new/")
    select = page.locator("#kind")
    expect(select).to_be_visible()
    assert select.evaluate(_IN_VIEW), select.bounding_box()
    assert select.evaluate(_LABELS_FIT) == []
    assert not page.evaluate(_SIDEWAYS)
    page.problems.assert_clean(page)
