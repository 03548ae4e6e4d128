"""The error pages' language buttons in a real browser: on the 404 page of an unknown
address (also what `make run` shows, DEBUG on), one click gives the same page in Persian,
right to left, with its way back: a person who lands on a wrong address is never stuck."""

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
