"""The supervisor console in a real browser (Debian chromium through Playwright), Hebrew
interface and a Hebrew project made from LCHAIM's Hebrew dev sample: create the project
through its page, create a user and reset a password, add the member, edit settings (a
round-bound change refused with the field marked, then a change saved), browse and open
items, preview the annotate page without claiming anything, and the annotate page's guide
opened on the first visit only. Every page at 1366×900 and 390×844, screenshots in
tests/browser/artifacts/console_*.png; at 390 px no page scrolls sideways (tables scroll
inside their card), and no CSP violation or JavaScript error anywhere."""

import json
from pathlib import Path

import pytest

from tests.browser.helpers import PASSWORD, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LCHAIM = Path(__file__).resolve().parents[3] / "shared" / "data" / "lchaim" / "aws_heb_dev_sample.json"
SIZES = {"wide": (1366, 900), "phone": (390, 844)}
SUPERVISOR, ANNOTATOR = "dana-sup", "avi-annotator"


def shoot(page, artifacts_dir, name: str) -> None:
    """Screenshots at both sizes; at phone width the page itself must not scroll sideways."""
    for size, (width, height) in SIZES.items():
        page.set_viewport_size({"width": width, "height": height})
        page.wait_for_timeout(100)
        overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 1, f"{name} at {width}px scrolls sideways by {overflow}px"
        page.screenshot(path=str(artifacts_dir / f"console_{name}_{size}.png"), full_page=True)
    page.set_viewport_size({"width": 1366, "height": 900})


@pytest.fixture
def world(transactional_db, live_server):
    from django.contrib.auth import get_user_model

    from annotation.models import Membership
    from annotation.services.projects import project_create

    User = get_user_model()
    sup = User.objects.create_user(username=SUPERVISOR, password=PASSWORD)
    # Supervising one project is what lets a user create projects and users.
    seed = project_create(actor=User.objects.create_user(username="root", password=PASSWORD, is_staff=True),
                          slug="seed", name="Seed", kind="nli_relabel", language="he")  # fmt: skip
    Membership.objects.create(project=seed, user=sup, role="supervisor", status="active")
    return {"url": live_server.url}


def assert_clean_but_refusals(page) -> None:
    """No CSP violation, no JavaScript error, no console message but the browser's own note
    of the 400 and 404 answers the test provoked on purpose."""
    assert page.problems.csp_violations(page) == [] and page.problems.page_errors == []
    others = [
        m for m in page.problems.console if "Failed to load resource: the server responded with a status of 40" not in m
    ]
    assert others == []


def _import_sample(slug: str, n: int = 12) -> None:
    from annotation.models import Project
    from annotation.services.imports import items_import

    rows = json.loads(LCHAIM.read_text(encoding="utf-8"))[:n]
    lines = "".join(json.dumps({"id": r["uid"], "premise": r["premise"], "hypothesis": r["hypothesis"], "label": r["label"],
                                "split": "dev" if i % 2 else "test"}, ensure_ascii=False) + "\n" for i, r in enumerate(rows))  # fmt: skip
    items_import(project=Project.objects.get(slug=slug), data=lines.encode(), fmt="jsonl", filename="he.jsonl")


def test_console_end_to_end_in_hebrew(world, page, artifacts_dir):
    from django.contrib.auth import get_user_model

    from annotation.models import Assignment, Membership, Project
    from annotation.services import assignments

    base = world["url"]
    page.context.add_cookies([{"name": "django_language", "value": "he", "url": base}])
    login(page, base, SUPERVISOR)
    assert page.evaluate("document.documentElement.dir") == "rtl"

    # --- a new project, its kind's settings with the papers' defaults ---
    page.goto(f"{base}/console/projects/new/")
    shoot(page, artifacts_dir, "project_new")
    page.select_option("#kind", "nli_relabel")
    fieldset = page.locator('.kind-settings[data-kind="nli_relabel"]')
    assert fieldset.is_visible() and not page.locator('.kind-settings[data-kind="qa_authoring"]').is_visible()
    assert fieldset.locator("#nli_relabel-consensus_k").input_value() == "4"
    page.fill("#slug", "he-console")
    page.fill("#name", "ניסוי מסוף")
    page.fill("#guidelines", "## הנחיות\n\nקראו את **ההנחה** עד הסוף. <script>window.__xss=1</script>")
    page.fill("#nli_relabel-consensus_k", "3")
    page.fill("#nli_relabel-consensus_n", "4")
    with page.expect_navigation():
        page.click("#project-form button[type=submit]")
    assert page.url.endswith("/p/he-console/")
    project = Project.objects.get(slug="he-console")
    assert (project.settings["consensus_k"], project.settings["consensus_n"], project.language) == (3, 4, "he")
    _import_sample("he-console")

    # --- users: create one, refuse a weak password, reset it ---
    page.goto(f"{base}/console/users/")
    page.fill("#new-username", ANNOTATOR)
    page.fill("#new-password", "a-first-pass-phrase-1")
    page.click("#user-create button[type=submit]")
    page.wait_for_selector("#user-create .form-notice:not([hidden])")
    annotator = get_user_model().objects.get(username=ANNOTATOR)
    # An account she did not create is not hers to reset.
    page.fill("#reset-username", "root")
    page.fill("#reset-password", "another-Long-phrase-7")
    page.click("#password-reset button[type=submit]")
    page.wait_for_selector("#password-reset .form-error:not([hidden])")
    assert annotator.__class__.objects.get(username="root").check_password(PASSWORD)

    # --- the member, through the project page's form ---
    page.goto(f"{base}/p/he-console/")
    page.fill("input[name=username]", ANNOTATOR)
    page.select_option('form[action$="/members/add/"] select[name=role]', "annotator")
    page.select_option('form[action$="/members/add/"] select[name=status]', "active")
    with page.expect_navigation():
        page.click('form[action$="/members/add/"] button[type=submit]')
    assert Membership.objects.get(project=project, user=annotator).status == "active"

    # --- the account she created, never logged in: a weak password refused, then a reset ---
    page.goto(f"{base}/console/users/")
    page.fill("#reset-username", ANNOTATOR)
    page.fill("#reset-password", "123")
    page.click("#password-reset button[type=submit]")
    page.wait_for_selector("#password-reset .form-error:not([hidden])")
    # Named by the field's label in Hebrew, the validators' words in Hebrew, beside the field too.
    said = page.locator("#password-reset .form-error").inner_text()
    assert said.startswith(page.locator("label[for=reset-password]").inner_text() + ":") and "password" not in said
    assert page.locator("#reset-password ~ .field-error").count() == 1
    page.fill("#reset-password", PASSWORD)
    page.click("#password-reset button[type=submit]")
    page.wait_for_selector("#password-reset .form-notice:not([hidden])")
    shoot(page, artifacts_dir, "users")
    annotator.refresh_from_db()
    assert annotator.check_password(PASSWORD)
    claim = assignments.assignment_next_for_annotator(user=annotator, slug="he-console")
    assignments.annotation_submit(user=annotator, assignment_id=claim.pk, value={"label": "neutral"})
    labelled = claim.item

    # --- settings: a round-bound change refused and marked, then a safe change saved ---
    page.goto(f"{base}/console/p/he-console/settings/")
    page.fill("#s-consensus_k", "4")
    page.click("#project-form button[type=submit]")
    page.wait_for_selector("#form-error:not([hidden])")
    # Named by its label, in the interface's language; the message also sits beside the field.
    label = page.locator("label[for=s-consensus_k]").inner_text()
    assert (
        label in page.locator("#form-error").inner_text()
        and "consensus_k" not in page.locator("#form-error").inner_text()
    )
    assert page.locator("#s-consensus_k ~ .field-error").count() == 1
    assert page.get_attribute("#s-consensus_k", "aria-invalid") == "true"
    project.refresh_from_db()
    assert project.settings["consensus_k"] == 3
    shoot(page, artifacts_dir, "settings_refused")
    page.fill("#s-consensus_k", "3")
    page.click(".kind-settings .rare-settings summary")  # the claim's length is folded away as rarely changed
    page.fill("#s-claim_ttl", "900")
    page.fill("#name", "ניסוי מסוף 2")
    page.fill("#g-label-neutral", "לא נובע ולא סותר")
    page.click("#project-form button[type=submit]")
    page.wait_for_selector("#form-notice:not([hidden])")
    project.refresh_from_db()
    assert (project.name, project.settings["claim_ttl"], project.label_guide) == (
        "ניסוי מסוף 2",
        900,
        {"label": {"neutral": "לא נובע ולא סותר"}},
    )

    # --- the item browser and one item ---
    page.goto(f"{base}/console/p/he-console/items/?split=dev")
    assert page.locator(".items-table tbody tr").count() == 6
    page.goto(f"{base}/console/p/he-console/items/")
    page.select_option("select[name=annotator]", ANNOTATOR)
    with page.expect_navigation():
        page.click(".filters button[type=submit]")
    rows = page.locator(".items-table tbody tr")
    assert rows.count() == 1 and labelled.external_id in rows.first.inner_text()
    shoot(page, artifacts_dir, "items")
    with page.expect_navigation():
        rows.first.locator("a").click()
    assert ANNOTATOR in page.inner_text("main") and "neutral" in page.inner_text("main")
    assert page.locator(".exports a").count() == 3  # jsonl, csv, farstail
    shoot(page, artifacts_dir, "item")

    # --- preview as annotator: a key shows the next item and stores nothing ---
    claims = Assignment.objects.count()
    page.goto(f"{base}/console/p/he-console/preview/")
    page.wait_for_selector("#task:not([hidden])")
    shown = "() => document.getElementById('premise').textContent + document.getElementById('hypothesis').textContent"
    first = page.evaluate(shown)
    page.keyboard.press("1")
    page.wait_for_function(f"(text) => ({shown})() !== text", arg=first)
    assert page.locator("#preview-note").inner_text() != ""
    assert Assignment.objects.count() == claims
    assert (
        page.evaluate("document.documentElement.dir") == "rtl"
        and page.evaluate("document.documentElement.lang") == "he"
    )
    assert "לא נובע ולא סותר" in page.inner_text("#guide")
    shoot(page, artifacts_dir, "preview")
    assert_clean_but_refusals(page)


def test_guide_opens_on_the_first_visit_only(world, page, artifacts_dir):
    from django.contrib.auth import get_user_model

    from annotation.models import Membership, Project

    base = world["url"]
    project = Project.objects.get(slug="seed")
    project.guidelines = "## הנחיות\n\nסמנו **נובע** רק כשההנחה מחייבת את ההשערה. [עוד](https://example.org)"
    project.save()
    _import_sample("seed", n=3)
    user = get_user_model().objects.create_user(username=ANNOTATOR, password=PASSWORD)
    Membership.objects.create(project=project, user=user, role="annotator", status="active")
    page.context.add_cookies([{"name": "django_language", "value": "he", "url": base}])
    login(page, base, ANNOTATOR)
    page.goto(f"{base}/p/seed/annotate/")
    page.wait_for_selector("#task:not([hidden])")
    guide = page.locator("#guide")
    assert guide.get_attribute("open") is not None
    assert page.locator("#guide .guidelines strong").inner_text() == "נובע"
    assert page.get_attribute("#guide .guidelines a", "rel") == "noopener nofollow"
    assert "FarsTail" in guide.inner_text()
    shoot(page, artifacts_dir, "annotate_guide")
    page.click("#guide summary")
    assert guide.get_attribute("open") is None
    page.reload()
    page.wait_for_selector("#task:not([hidden])")
    assert page.locator("#guide").get_attribute("open") is None
    page.problems.assert_clean(page)


def test_preview_opens_every_kinds_annotate_page_without_a_claim(transactional_db, live_server, page, artifacts_dir):
    """The preview of a project of each kind (tests/security/world.py, Hebrew) shows an item
    on that kind's own annotate page, claims nothing, and runs without a script error."""
    from annotation.models import Assignment
    from tests.security.world import KIND_SLUGS, USERNAMES, build_world

    build_world(lambda slug, name: f"{name} טקסט")
    claims = Assignment.objects.count()
    page.context.add_cookies([{"name": "django_language", "value": "he", "url": live_server.url}])
    login(page, live_server.url, USERNAMES["supervisor"])
    for kind, slug in KIND_SLUGS.items():
        page.goto(f"{live_server.url}/console/p/{slug}/preview/")
        page.wait_for_selector("#task:not([hidden])")
        assert page.locator("#preview-note").is_visible(), kind
        assert page.evaluate("document.documentElement.dir") == "rtl", kind
        page.screenshot(path=str(artifacts_dir / f"console_preview_{kind}_wide.png"), full_page=True)
    assert Assignment.objects.count() == claims
    assert_clean_but_refusals(page)
