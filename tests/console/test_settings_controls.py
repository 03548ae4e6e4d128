"""The settings forms' typed controls in a real browser (Debian chromium through Playwright),
Persian interface: a choice is a select of named options, a list a set of checkboxes,
rules per source a table of number boxes, a setting that may be unset an empty number box;
the rarely changed ones are folded away; numbers say their unit and help texts are isolated.
What they send is what the API stores. A new
project's defaults that depend on its language follow the language chosen, and the language
field starts at the interface's language."""

import pytest

from tests.browser.helpers import PASSWORD, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def world(transactional_db, live_server):
    from django.contrib.auth import get_user_model

    from annotation.models import Membership
    from annotation.services.projects import project_create

    User = get_user_model()
    root = User.objects.create_user(username="root", password=PASSWORD, is_staff=True)
    sup = User.objects.create_user(username="sara-sup", password=PASSWORD)
    projects = {
        kind: project_create(actor=root, slug=slug, name=f"پروژه {slug}", kind=kind, language="fa")
        for kind, slug in (("qa_authoring", "fa-qa"), ("nli_relabel", "fa-nli"))
    }
    for project in projects.values():
        Membership.objects.create(project=project, user=sup, role="supervisor", status="active")
    return {"url": live_server.url, "projects": projects}


def test_typed_controls_store_what_they_show(world, page):
    base = world["url"]
    login(page, base, "sara-sup", language="fa")

    page.goto(f"{base}/console/p/fa-qa/settings/")
    assert page.locator("#s-validate_splits input[type=checkbox]").count() == 3  # train, dev, test
    assert not page.locator("#s-pool_rules").is_visible()  # folded away
    page.click(".rare-settings summary")
    page.locator('#s-validate_splits input[value="test"]').uncheck()
    page.locator('#s-pool_rules tr[data-row="wikipedia"] input[data-column="max_chars"]').fill("1500")
    page.click("#project-form button[type=submit]")
    page.wait_for_selector("#form-notice:not([hidden])")
    project = world["projects"]["qa_authoring"]
    project.refresh_from_db()
    assert project.settings["validate_splits"] == ["dev"]
    assert project.settings["pool_rules"]["wikipedia"]["max_chars"] == 1500
    assert project.settings["pool_rules"]["geektime"]["max_chars"] is None  # an empty box stays unset

    page.goto(f"{base}/console/p/fa-nli/settings/")
    # A number says its unit, in Persian; a help text that mixes directions is isolated so
    # its punctuation stays in place.
    from django.utils import translation

    with translation.override("fa"):
        seconds = str(translation.gettext("seconds"))
    page.click(".rare-settings summary")
    assert page.locator('[data-setting="claim_ttl"] .unit').inner_text() == seconds != "seconds"
    helps = page.locator(".setting .hint > bdi")
    assert helps.count() > 5
    assert set(helps.evaluate_all("(all) => all.map((el) => getComputedStyle(el).unicodeBidi)")) == {"isolate"}
    page.click(".rare-settings summary")
    options = page.locator("#s-aggregation option")
    assert options.count() == 4 and "k_of_n" not in options.all_inner_texts()[0]
    page.select_option("#s-aggregation", "majority")
    page.click(".rare-settings summary")
    assert page.input_value("#s-overlap_min") == ""
    page.fill("#s-overlap_min", "0")
    page.click("#project-form button[type=submit]")
    # A refused value is marked beside its field, in Persian, and named by its label above.
    page.wait_for_selector("#s-overlap_min ~ .field-error")
    said = page.locator("#form-error").inner_text()
    assert page.locator("label[for=s-overlap_min]").inner_text() in said and "overlap_min" not in said
    page.fill("#s-overlap_min", "")
    page.click("#project-form button[type=submit]")
    page.wait_for_selector("#form-notice:not([hidden])")
    project = world["projects"]["nli_relabel"]
    project.refresh_from_db()
    assert (project.settings["aggregation"], project.settings["overlap_min"]) == ("majority", None)


def test_new_project_starts_in_the_interface_language_with_its_defaults(world, page):
    base = world["url"]
    login(page, base, "sara-sup", language="fa")
    page.goto(f"{base}/console/projects/new/")
    assert page.input_value("#language") == "fa"
    default = page.locator('#nli_relabel-fold_letter_variants option[value=""]')
    persian_default = default.inner_text()
    page.select_option("#language", "he")
    assert default.inner_text() != persian_default  # Persian folds letter variants by default, Hebrew does not
    page.select_option("#language", "fa")
    assert default.inner_text() == persian_default
