"""The supervisor's item page in a real browser, on a Hebrew project with a Hebrew interface:
its decisions table shows the decision in effect, and the reopen form starts a new round with
no gold through `POST /api/items/{id}/reopen/` (the history stays, the page shows it after its
reload); a blank reason is refused in place, next to the field, with nothing changed."""

import pytest

from tests.browser.helpers import _is, expect, login
from tests.browser.test_quality_pages import SIZES, SLUG, hebrew, judged  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_supervisor_reopens_a_decided_item_from_its_page(judged, page, artifacts_dir):  # noqa: F811
    from annotation.models import Decision, Item

    base = judged["url"]
    accepted = Item.objects.get(pk=judged["items"]["j2"].pk)  # 2 of 3 said contradiction: accepted
    assert (accepted.status, accepted.gold_label) == ("accepted", "contradiction")
    hebrew(page, base)
    login(page, base, "boss")
    page.set_viewport_size(SIZES["phone"])
    response = page.goto(f"{base}/console/p/{SLUG}/items/{accepted.pk}/")
    assert response.status == 200
    assert page.locator("html").get_attribute("dir") == "rtl"
    rows = page.locator("#decisions tbody tr")
    expect(rows).to_have_count(1)
    expect(page.locator("#decisions tbody tr.effective")).to_contain_text("contradiction")

    # Whitespace passes the browser's `required` but not the service: the error sits by the field.
    reason = page.locator("#reopen-reason")
    reason.fill("   ")
    with page.expect_response(_is("POST", r"/reopen/$")) as refused:
        page.click("#item-reopen button[type=submit]")
    assert refused.value.status == 400
    expect(page.locator("#item-reopen .form-error")).to_be_visible()
    expect(reason).to_have_attribute("aria-invalid", "true")
    assert Item.objects.get(pk=accepted.pk).status == "accepted"
    assert Decision.objects.filter(item=accepted).count() == 1

    reason.fill("התווית שנויה במחלוקת, סבב נוסף")
    with page.expect_navigation():
        with page.expect_response(_is("POST", r"/reopen/$")) as sent:
            page.click("#item-reopen button[type=submit]")
    assert sent.value.status == 201
    # After the reload: the reopening is the decision in effect, the earlier one stays listed.
    expect(rows).to_have_count(2)
    expect(page.locator("#decisions tbody tr.effective")).to_contain_text("התווית שנויה במחלוקת")
    expect(page.locator("#decisions tbody")).to_contain_text("contradiction")
    expect(page.locator("#item-reopen")).to_have_count(0)  # nothing decided to reopen any more
    item = Item.objects.get(pk=accepted.pk)
    assert (item.status, item.gold_label) == ("open", "")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= SIZES["phone"]["width"] + 1
    page.screenshot(path=str(artifacts_dir / "item_reopen_he_phone.png"), full_page=True)
    # The browser logs the refused request; that 400 was the point, any other message is not.
    expected = [m for m in page.problems.console if "status of 400" in m and "/reopen/" in m]
    assert len(expected) == 1
    page.problems.console = [m for m in page.problems.console if m not in expected]
    page.problems.assert_clean(page)
