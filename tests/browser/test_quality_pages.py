"""The annotator-quality page and the adjudication page in a real browser (Debian chromium
through Playwright), on a Hebrew project with a Hebrew interface: the table sorts by a
column's title, flagged rows are marked, "move back to trial" changes the membership through
the API; an adjudicator decides an item and it leaves the queue. No CSP violation, no
console error. Screenshots at 1366×900 and 390×844: tests/browser/artifacts/quality_*.png."""

import pytest

from tests.browser.helpers import PASSWORD, _is, _jsonl, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SLUG = "he-judge"
# Hand-written pairs (not from any dataset).
ROWS = [
    {"id": "j1", "premise": "הילדים משחקים בגן", "hypothesis": "יש ילדים בגן"},
    {"id": "j2", "premise": "הרכבת יצאה באיחור", "hypothesis": "הרכבת הגיעה בזמן"},
    {"id": "j3", "premise": "הספרייה סגורה בשבת", "hypothesis": "אפשר לשאול ספרים ביום ראשון"},
]
# j1 fails (a three-way split), j2 is accepted, j3 is accepted but Dawid-Skene disagrees.
VOTES = {
    "j1": {"ori": "entailment", "tal": "neutral", "gil": "contradiction"},
    "j2": {"ori": "contradiction", "tal": "contradiction", "gil": "neutral"},
    "j3": {"ori": "neutral", "tal": "neutral", "gil": "entailment"},
}
SIZES = {"desktop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}


@pytest.fixture
def judged(transactional_db, live_server):
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from annotation.models import Item, ItemAggregate, Membership
    from annotation.services.assignments import annotation_submit, assignment_next_for_annotator
    from annotation.services.consensus import consensus_compute_for_item
    from annotation.services.imports import items_import
    from annotation.services.projects import project_create

    User = get_user_model()
    admin = User.objects.create_user(username="browser-admin", password=PASSWORD, is_staff=True)
    project = project_create(
        actor=admin, slug=SLUG, name="שיפוט הסקה", kind="nli_relabel", language="he",
        settings={"consensus_k": 2, "consensus_n": 3, "quality_flag_below": 0.6},
    )  # fmt: skip
    people = {}
    for name, role in (
        ("boss", "supervisor"),
        ("dana", "reviewer"),
        ("ori", "annotator"),
        ("tal", "annotator"),
        ("gil", "annotator"),
    ):
        people[name] = User.objects.create_user(username=name, password=PASSWORD)
        Membership.objects.create(
            project=project, user=people[name], role=role, status="active", adjudicator=name == "dana"
        )
    assert items_import(project=project, data=_jsonl(ROWS), fmt="jsonl", user=admin).created == len(ROWS)
    for name in ("ori", "tal", "gil"):
        while (assignment := assignment_next_for_annotator(user=people[name], slug=SLUG)) is not None:
            annotation_submit(
                user=people[name],
                assignment_id=assignment.pk,
                value={"label": VOTES[assignment.item.external_id][name]},
            )
    items = {item.external_id: item for item in Item.objects.filter(project=project)}
    for item in items.values():
        consensus_compute_for_item(item.pk)
    now = timezone.now()
    ItemAggregate.objects.create(
        item=items["j3"], round=1, method="k_of_n", label="neutral", confidence=2 / 3, computed_at=now
    )
    ItemAggregate.objects.create(
        item=items["j3"], round=1, method="dawid_skene", label="entailment", confidence=0.6, computed_at=now
    )
    return {"url": live_server.url, "project": project, "items": items, "people": people}


def hebrew(page, base: str) -> None:
    page.context.add_cookies([{"name": "django_language", "value": "he", "url": base}])


def shoot(page, artifacts_dir, name: str) -> None:
    for size, viewport in SIZES.items():
        page.set_viewport_size(viewport)
        page.screenshot(path=str(artifacts_dir / f"quality_{name}_{size}.png"), full_page=True)
        if size == "phone":
            # Nothing but the tables' own scrolling box is wider than the phone.
            assert page.evaluate("() => document.documentElement.scrollWidth") <= viewport["width"] + 1


def test_supervisor_decides_items_of_the_queue(judged, page, artifacts_dir):
    from annotation.models import Adjudication, Item

    base = judged["url"]
    hebrew(page, base)
    login(page, base, "boss")
    page.set_viewport_size(SIZES["desktop"])
    response = page.goto(f"{base}/p/{SLUG}/adjudication/")
    assert response.status == 200
    assert "unsafe-inline" not in response.headers.get("content-security-policy", "")
    assert page.locator("html").get_attribute("dir") == "rtl"
    cards = page.locator(".queue-item")
    assert cards.count() == 2
    failed = page.locator(f'.queue-item[data-item="{judged["items"]["j1"].pk}"]')
    assert failed.locator(".reason-failed").count() == 1
    assert failed.locator(".payload dd").first.text_content() == ROWS[0]["premise"]
    assert sorted(failed.locator(".votes tbody td:first-child").all_text_contents()) == ["gil", "ori", "tal"]
    disagreeing = page.locator(f'.queue-item[data-item="{judged["items"]["j3"].pk}"]')
    assert disagreeing.locator(".reason-methods_disagree").count() == 1
    shoot(page, artifacts_dir, "adjudication_he")

    page.set_viewport_size(SIZES["desktop"])
    counts_js = "() => [document.getElementById('h-queue').textContent, document.querySelector('#h-agreement ~ p.hint').textContent]"
    before = page.evaluate(counts_js)
    failed.locator("select[name=label]").select_option("neutral")
    failed.locator("input[name=comment]").fill("ההשערה אינה נובעת ואינה סותרת")
    with page.expect_response(_is("POST", r"/adjudicate/$")) as sent:
        failed.locator("button[type=submit]").click()
    assert sent.value.status == 201
    page.wait_for_selector(f'.queue-item[data-item="{judged["items"]["j1"].pk}"]', state="detached")
    assert page.locator("#adjudication-status").is_visible()
    assert cards.count() == 1
    decision = Adjudication.objects.get(item=judged["items"]["j1"])
    assert (decision.label, decision.comment, decision.adjudicator.username) == (
        "neutral",
        "ההשערה אינה נובעת ואינה סותרת",
        "boss",
    )
    assert Item.objects.get(pk=judged["items"]["j1"].pk).gold_label == "neutral"
    # The counters follow the decision without a reload (they stayed stale until one), and
    # agree with what a reload shows.
    page.wait_for_function(f"() => ({counts_js})()[0] !== {before[0]!r} && ({counts_js})()[1] !== {before[1]!r}")
    after = page.evaluate(counts_js)
    # A reload shows the queue without it, and agreement with and without it.
    page.reload()
    assert page.evaluate(counts_js) == after
    assert page.locator(".queue-item").count() == 1
    assert (
        page.locator("[data-figure='alpha.with']").text_content()
        != page.locator("[data-figure='alpha.without']").text_content()
    )
    shoot(page, artifacts_dir, "adjudication_he_after")
    page.problems.assert_clean(page)


def test_an_adjudicator_who_is_a_reviewer_sees_pseudonyms_and_decides(judged, page, artifacts_dir):
    base = judged["url"]
    hebrew(page, base)
    login(page, base, "dana")
    page.set_viewport_size(SIZES["phone"])
    page.goto(f"{base}/p/{SLUG}/adjudication/")
    voters = page.locator(".votes tbody td:first-child").all_text_contents()
    assert voters and not set(voters) & {"ori", "tal", "gil"}
    card = page.locator(f'.queue-item[data-item="{judged["items"]["j3"].pk}"]')
    card.locator("select[name=label]").select_option("entailment")
    with page.expect_response(_is("POST", r"/adjudicate/$")) as sent:
        card.locator("button[type=submit]").click()
    assert sent.value.status == 201
    page.wait_for_selector(f'.queue-item[data-item="{judged["items"]["j3"].pk}"]', state="detached")
    page.screenshot(path=str(artifacts_dir / "quality_adjudicator_he_phone.png"), full_page=True)
    page.problems.assert_clean(page)


def test_quality_page_sorts_flags_and_moves_back_to_trial(judged, page, artifacts_dir):
    from annotation.models import Membership

    base = judged["url"]
    hebrew(page, base)
    login(page, base, "boss")
    page.set_viewport_size(SIZES["desktop"])
    response = page.goto(f"{base}/p/{SLUG}/annotators/")
    assert response.status == 200
    assert page.locator("html").get_attribute("dir") == "rtl"
    names = lambda: page.locator("#quality-table tbody th[scope=row]").all_text_contents()  # noqa: E731
    assert names() == ["gil", "ori", "tal"]
    # gil never agrees with a consensus (kappa -1/3 < 0.6): flagged; tal always does (kappa 1).
    assert page.locator('#quality-table tr[data-annotator="gil"]').get_attribute("class") == "flagged"
    assert page.locator('#quality-table tr[data-annotator="tal"]').get_attribute("class") is None
    kappa = page.locator("#quality-table thead th").nth(7)
    kappa.locator("button").click()
    assert kappa.get_attribute("aria-sort") == "ascending"
    assert names()[0] == "gil"
    kappa.locator("button").click()
    assert kappa.get_attribute("aria-sort") == "descending"
    assert names()[-1] == "gil"  # ori and tal both have kappa 1
    shoot(page, artifacts_dir, "annotators_he")

    page.set_viewport_size(SIZES["desktop"])
    row = page.locator('#quality-table tr[data-annotator="gil"]')
    with page.expect_response(_is("PATCH", r"/members/gil/$")) as sent:
        row.locator("form.trial-form button").click()
    assert sent.value.status == 200
    page.wait_for_selector('#quality-table tr[data-annotator="gil"] form.trial-form', state="detached")
    assert row.locator(".member-status").text_content() == "trial"
    assert Membership.objects.get(project=judged["project"], user=judged["people"]["gil"]).status == "trial"
    assert page.locator("#quality-status").is_visible()

    # The same figures, compact, on the project page.
    page.goto(f"{base}/p/{SLUG}/")
    assert page.locator("#project-quality tbody tr").count() == 3
    assert page.locator('#project-quality tr[data-annotator="gil"]').get_attribute("class") == "flagged"
    shoot(page, artifacts_dir, "project_he")
    page.problems.assert_clean(page)
