"""The error pages' language buttons in a real browser: on the 404 page of an unknown
address (also what `make run` shows, DEBUG on), one click gives the same page in Persian,
right to left, with its way back: a person who lands on a wrong address is never stuck. The
"Nothing left" card of an annotate page has its way back and the top bar's language buttons
too, in view at 1366 and 390 px."""

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("width", [1366, 390])
def test_the_404_page_switches_language_and_stays(live_server, page, settings, width):
    settings.DEBUG = True
    page.set_viewport_size({"width": width, "height": 844})
    response = page.goto(f"{live_server.url}/p/no-such-project/nowhere/?x=1")
    assert response.status == 404 and page.locator("#error-page").is_visible()
    with page.expect_navigation():
        page.click(".lang-switch button[value=fa]")
    assert page.url == f"{live_server.url}/p/no-such-project/nowhere/?x=1"
    assert page.locator("html").get_attribute("lang") == "fa" and page.locator("html").get_attribute("dir") == "rtl"
    assert page.locator("#error-page a[href='/']").is_visible()
    overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1
    page.problems.console = [m for m in page.problems.console if "404 (Not Found)" not in m]
    page.problems.assert_clean(page)


@pytest.mark.parametrize("width", [1366, 390])
def test_the_nothing_left_card_has_a_way_back_and_a_language_switch(live_server, page, width):
    """An annotator with nothing left to do is not stuck either: the card says so in their
    language, with the way back to their projects in view, and the top bar's language
    buttons give the same card in another language."""
    from django.contrib.auth import get_user_model

    from annotation.models import Membership
    from annotation.services.projects import project_create
    from tests.browser.helpers import PASSWORD, login

    User = get_user_model()
    admin = User.objects.create_user(username="empty-admin", password=PASSWORD, is_staff=True)
    project = project_create(actor=admin, slug="fa-empty", name="پروژهٔ خالی", kind="nli_relabel", language="fa")
    annotator = User.objects.create_user(username="sara", password=PASSWORD)
    Membership.objects.create(project=project, user=annotator, role="annotator", status="active")
    page.set_viewport_size({"width": width, "height": 844})
    login(page, live_server.url, "sara", language="fa")
    page.goto(f"{live_server.url}/p/fa-empty/annotate/")
    done = page.locator("#done")
    done.wait_for(state="visible")
    way_back = page.locator("#done-home")
    box = way_back.bounding_box()
    assert way_back.get_attribute("href") == "/" and box["y"] + box["height"] <= 844  # seen without scrolling
    persian = done.locator("h2").inner_text()
    with page.expect_navigation():
        page.click(".topbar .lang-switch button[value=he]")
    assert page.url == f"{live_server.url}/p/fa-empty/annotate/"
    done.wait_for(state="visible")
    assert page.locator("html").get_attribute("lang") == "he" and done.locator("h2").inner_text() != persian
    assert page.locator("#done-home").is_visible()
    with page.expect_navigation():
        page.click("#done-home")
    assert page.url == f"{live_server.url}/"
    assert page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth") <= 1
    page.problems.assert_clean(page)
