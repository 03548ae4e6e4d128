"""A supervisor's form with changes not saved asks before the page is left (a reload, a link,
the interface-language buttons), in Chromium at 1366 and 390 px in the Hebrew and the
Persian interface: the project's settings, a new project and an item's text edit. Once the
server has what the form shows, leaving asks nothing."""

import pytest

from tests.browser.helpers import _is, login
from tests.browser.test_quality_pages import SLUG, hebrew, judged  # noqa: F401 (a fixture)
from tests.console.test_settings_controls import world  # noqa: F401 (a fixture)
from tests.kinds.nli_authoring.test_browser_drafts import leaving_asks

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = {"wide": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}


@pytest.mark.parametrize("language", ["he", "fa"])
@pytest.mark.parametrize("size", WIDTHS)
def test_settings_and_a_new_project_ask_before_their_changes_are_left(world, page, size, language):  # noqa: F811
    base = world["url"]
    page.set_viewport_size(WIDTHS[size])
    login(page, base, "sara-sup", language=language)
    page.goto(f"{base}/console/p/fa-nli/settings/")
    assert not leaving_asks(page)
    page.fill("#guidelines", "برچسب را با دقت بزنید.")
    assert leaving_asks(page)
    with page.expect_response(_is("PATCH", r"/api/projects/fa-nli/$")) as saved:
        page.click("#project-form button[type=submit]")
    assert saved.value.status == 200
    page.wait_for_selector("#form-notice:not([hidden])")
    assert not leaving_asks(page)
    world["projects"]["nli_relabel"].refresh_from_db()
    assert world["projects"]["nli_relabel"].guidelines == "برچسب را با دقت بزنید."

    page.goto(f"{base}/console/projects/new/")
    assert not leaving_asks(page)
    page.fill("#name", "پروژهٔ تازه")
    assert leaving_asks(page)
    page.problems.assert_clean(page)


def test_an_items_text_edit_asks_before_it_is_left(judged, page):  # noqa: F811
    from annotation.models import Item

    base = judged["url"]
    accepted = Item.objects.get(pk=judged["items"]["j2"].pk)
    hebrew(page, base)
    login(page, base, "boss")
    page.goto(f"{base}/console/p/{SLUG}/items/{accepted.pk}/")
    assert not leaving_asks(page)
    page.locator('#item-text-edit textarea[data-field="hypothesis"]').fill(accepted.payload["hypothesis"] + " (תוקן)")
    assert leaving_asks(page)
    page.fill("#text-edit-reason", "תיקון כתיב")
    with page.expect_navigation():
        page.click("#item-text-edit button[type=submit]")
    assert not leaving_asks(page)  # the reload shows the stored text
    page.problems.assert_clean(page)
