"""The supervisor's item page in a real browser, on a Hebrew project with a Hebrew interface:
the text edit form of an accepted item stores a corrected hypothesis through
`POST /api/items/{id}/text/` with its reason (the gold label stands, the revision is listed
after the reload, before and after); a blank reason is refused in place, next to the field,
with nothing changed. At 1366 and at 390 px."""

import pytest

from tests.browser.helpers import _is, expect, login
from tests.browser.test_quality_pages import SIZES, SLUG, hebrew, judged  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_supervisor_edits_the_text_of_an_accepted_item(judged, page, artifacts_dir, size):  # noqa: F811
    from annotation.models import Item, ItemRevision

    base = judged["url"]
    accepted = Item.objects.get(pk=judged["items"]["j2"].pk)
    assert accepted.status == "accepted"
    hebrew(page, base)
    login(page, base, "boss")
    page.set_viewport_size(SIZES[size])
    assert page.goto(f"{base}/console/p/{SLUG}/items/{accepted.pk}/").status == 200
    form = page.locator("#item-text-edit")
    hypothesis = form.locator('textarea[data-field="hypothesis"]')
    expect(hypothesis).to_have_value(accepted.payload["hypothesis"])
    corrected = accepted.payload["hypothesis"] + " (תוקן)"
    hypothesis.fill(corrected)

    reason = page.locator("#text-edit-reason")
    reason.fill("   ")
    with page.expect_response(_is("POST", r"/text/$")) as refused:
        form.locator("button[type=submit]").click()
    assert refused.value.status == 400
    expect(form.locator(".form-error")).to_be_visible()
    expect(reason).to_have_attribute("aria-invalid", "true")
    assert Item.objects.get(pk=accepted.pk).payload == accepted.payload and not ItemRevision.objects.exists()

    reason.fill("תיקון כתיב")
    with page.expect_navigation():
        with page.expect_response(_is("POST", r"/text/$")) as sent:
            form.locator("button[type=submit]").click()
    assert sent.value.status == 201
    item = Item.objects.get(pk=accepted.pk)
    assert item.payload["hypothesis"] == corrected and (item.status, item.gold_label) == (
        "accepted",
        accepted.gold_label,
    )
    expect(page.locator('#item-text-edit textarea[data-field="hypothesis"]')).to_have_value(corrected)
    expect(page.locator("body")).to_contain_text("תיקון כתיב")
    expect(page.locator("body")).to_contain_text("הטקסט נערך בידי מפקח")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= SIZES[size]["width"] + 1
    page.screenshot(path=str(artifacts_dir / f"item_text_edit_he_{size}.png"), full_page=True)
    expected = [m for m in page.problems.console if "status of 400" in m and "/text/" in m]
    assert len(expected) == 1
    page.problems.console = [m for m in page.problems.console if m not in expected]
    page.problems.assert_clean(page)
