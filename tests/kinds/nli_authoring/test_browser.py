"""The nli_authoring page and the author's revision page in a real browser (Debian chromium
through Playwright; fixtures in tests/browser/fixtures.py).

A Persian author writes premise + three hypotheses for one multiple-choice question, with
ZWNJ typed inside words, sees the live length/copy warnings for the contradiction and the
length warning for the neutral hypothesis (FarsTail §3.1 steps 3-4), gives the web sources
of the premise and the neutral hypothesis, submits with Ctrl+Enter, and the three
nli_relabel items hold the exact text and the sources.
Then a failed item is revised (and another withdrawn) on /p/<slug>/revisions/.
Screenshots: tests/browser/artifacts/authoring_*.png."""

import json

import pytest

from tests.browser.helpers import PASSWORD, _is, _jsonl, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ZWNJ, NBSP = "\u200c", "\u00a0"
QUESTION = {
    "id": "q-un",
    "question": "دبیر کل سازمان ملل متحد قبل از آنتونیو گوترش چه کسی بود؟",
    "choices": ["خاویر سولانا", "بان کی مون", "کوفی عنان", "یوشیرو موری"],
    "answer_index": 1,
    "split": "train",
}
TEXTS = {
    "entailment": "بان کی مون قبل از آنتونیو گوترش دبیر کل سازمان ملل متحد بود.",
    "premise": f"مجمع عمومی سازمان ملل، آنتونیو گوترش را به عنوان جانشین بان کی{ZWNJ}مون برگزید.",
    "contradiction": f"پیش از آنتونیو گوترش، کوفی عنان دبیر کل سازمان ملل بوده{ZWNJ}است.",
    "neutral": f"اعضای سازمان ملل به اتفاق آرا آنتونیو گوترش را نامزد کردند{ZWNJ}.  ",
}
SOURCES = {
    "premise_source": "https://fa.wikipedia.org/wiki/%D8%A2%D9%86%D8%AA%D9%88%D9%86%DB%8C%D9%88_%DA%AF%D9%88%D8%AA%D8%B1%D8%B4",
    "neutral_source": "https://news.un.org/fa/story/2016/10/1",
}


@pytest.fixture
def authoring_setup(transactional_db, live_server, settings):
    from django.contrib.auth import get_user_model

    from annotation.models import Membership
    from annotation.services.imports import items_import
    from annotation.services.projects import project_create

    settings.CELERY_TASK_ALWAYS_EAGER = True  # consensus in-process: these tests are about the pages
    User = get_user_model()
    admin = User.objects.create_user(username="browser-admin", password=PASSWORD, is_staff=True)
    users = {
        name: User.objects.create_user(username=name, password=PASSWORD)
        for name in ("sara-author", "voter-1", "voter-2")
    }
    relabel = project_create(
        actor=admin,
        slug="fa-relabel-br",
        name="FarsTail relabel",
        kind="nli_relabel",
        language="fa",
        settings={"consensus_n": 3, "consensus_k": 2, "revision_rounds": 1},
    )
    authoring = project_create(
        actor=admin,
        slug="fa-author-br",
        name="FarsTail authoring",
        kind="nli_authoring",
        language="fa",
        settings={"relabel_project": relabel.slug},
    )
    for project in (relabel, authoring):
        for user in users.values():
            Membership.objects.create(project=project, user=user, role="annotator", status="active")
    assert items_import(project=authoring, data=_jsonl([QUESTION]), fmt="jsonl", user=admin).created == 1
    return {"url": live_server.url, "users": users, "relabel": relabel, "authoring": authoring, "admin": admin}


def warnings_shown(page, list_id: str = "warnings") -> list[str]:
    return page.evaluate(f"() => [...document.querySelectorAll('#{list_id} li')].map(li => li.dataset.warning)")


def test_author_writes_three_pairs_in_persian(authoring_setup, page, artifacts_dir):
    from annotation.models import Item

    base, relabel = authoring_setup["url"], authoring_setup["relabel"]
    login(page, base, "sara-author")
    # A Persian author reading the page in Persian (Django's language cookie).
    page.context.add_cookies([{"name": "django_language", "value": "fa", "url": base}])
    with page.expect_response(_is("GET", r"/next/$")) as first:
        response = page.goto(f"{base}/p/fa-author-br/annotate/")
    assert response.status == 200
    assert first.value.status == 200
    csp = response.headers.get("content-security-policy", "")
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert page.locator("html").get_attribute("dir") == "rtl"
    assert page.locator("html").get_attribute("lang") == "fa"

    page.wait_for_function("([q]) => document.getElementById('question').textContent === q", arg=[QUESTION["question"]])
    choices = page.locator("#choices .choice-text").all_text_contents()
    assert choices == QUESTION["choices"]
    correct = page.locator("#choices .choice.correct .choice-text").all_text_contents()
    assert correct == [QUESTION["choices"][QUESTION["answer_index"]]]
    assert page.locator("#revisions-link").get_attribute("href") == f"/p/{relabel.slug}/revisions/"
    page.wait_for_function(
        "() => document.getElementById('progress-text').textContent === '۰ / ۱'"
    )  # the Persian interface's digits

    # Typed through the keyboard, ZWNJ included.
    page.locator("#entailment").press_sequentially(TEXTS["entailment"])
    page.locator("#premise").press_sequentially(TEXTS["premise"])
    # A copy of the entailment hypothesis, then a far too short one: live warnings.
    page.locator("#contradiction").fill(TEXTS["entailment"])
    page.locator("#contradiction").dispatch_event("input")
    assert warnings_shown(page) == ["copy"]
    # The same copy typed with Arabic yeh and kaf is still a copy in a Persian project.
    arabic_letters = TEXTS["entailment"].replace("\u06cc", "\u064a").replace("\u06a9", "\u0643")
    assert arabic_letters != TEXTS["entailment"]
    page.locator("#contradiction").fill(arabic_letters)
    page.locator("#contradiction").dispatch_event("input")
    assert warnings_shown(page) == ["copy"]
    page.locator("#contradiction").fill("")
    page.locator("#contradiction").press_sequentially("کوفی عنان.")
    assert warnings_shown(page) == ["length"]
    assert page.locator("#warnings").is_visible()
    page.screenshot(path=str(artifacts_dir / "authoring_fa_warnings.png"), full_page=True)
    page.locator("#contradiction").fill("")
    page.locator("#contradiction").press_sequentially(TEXTS["contradiction"])
    assert warnings_shown(page) == []
    assert page.locator("#warnings").is_hidden()
    # A neutral hypothesis far shorter than the other two: its own warning, in Persian.
    page.locator("#neutral").press_sequentially("گوترش.")
    assert warnings_shown(page, "neutral-warnings") == ["length"]
    assert page.locator("#neutral-warnings").is_visible()
    assert "فرضیهٔ خنثی" in page.locator("#neutral-warnings li").inner_text()
    assert warnings_shown(page) == []
    page.screenshot(path=str(artifacts_dir / "authoring_fa_neutral_warning.png"), full_page=True)
    page.locator("#neutral").fill("")
    page.locator("#neutral").press_sequentially(TEXTS["neutral"])
    assert warnings_shown(page, "neutral-warnings") == []
    assert page.locator("#neutral-warnings").is_hidden()
    for name, text in TEXTS.items():
        assert page.locator(f"#{name}").input_value() == text

    # The web sources: labelled in Persian, written left to right; a bad one is refused by
    # the server (400 naming the field, marked on the page), then corrected.
    assert page.locator('label[for="premise_source"]').inner_text() == "نشانی وب مقدمه (اختیاری)"
    assert page.locator('label[for="neutral_source"]').inner_text() == "نشانی وب فرضیهٔ خنثی (اختیاری)"
    assert page.evaluate("() => getComputedStyle(document.getElementById('premise_source')).direction") == "ltr"
    page.locator("#premise_source").fill("ftp://example.org/a")
    with page.expect_response(_is("POST", r"/api/assignments/\d+/submit/$")) as refused:
        page.keyboard.press("Control+Enter")
    assert refused.value.status == 400
    assert [e["field"] for e in refused.value.json()["errors"]] == ["value.premise_source"]
    page.locator("#error").wait_for(state="visible")
    assert page.locator("#premise_source").get_attribute("aria-invalid") == "true"
    assert not Item.objects.filter(project=relabel).exists()
    for name, url in SOURCES.items():
        page.locator(f"#{name}").fill(url)
    assert page.evaluate("() => getComputedStyle(document.getElementById('premise')).direction") == "rtl"
    page.screenshot(path=str(artifacts_dir / "authoring_fa.png"), full_page=True)

    with (
        page.expect_response(_is("POST", r"/api/assignments/\d+/submit/$")) as submitted,
        page.expect_response(_is("GET", r"/next/$")) as following,
    ):
        page.keyboard.press("Control+Enter")
    assert submitted.value.status == 201
    assert submitted.value.json()["warnings"] == []
    assert json.loads(submitted.value.request.post_data)["value"] == {**TEXTS, **SOURCES}
    assert submitted.value.request.headers.get("idempotency-key")
    assert following.value.status == 204
    page.locator("#done").wait_for(state="visible")
    assert page.locator("#task").is_hidden()
    page.wait_for_function("() => document.getElementById('progress-text').textContent === '۱ / ۱'")

    items = list(Item.objects.filter(project=relabel).select_related("author").order_by("position", "id"))
    assert [(i.reference_label, i.payload["premise"], i.payload["hypothesis"]) for i in items] == [
        ("entailment", TEXTS["premise"], TEXTS["entailment"]),
        ("contradiction", TEXTS["premise"], TEXTS["contradiction"]),
        ("neutral", TEXTS["premise"], TEXTS["neutral"]),
    ]
    assert [i.payload.get("extra") for i in items] == [
        {"premise_source": SOURCES["premise_source"]},
        {"premise_source": SOURCES["premise_source"]},
        SOURCES,
    ]
    assert {i.author.username for i in items} == {"sara-author"}
    assert {i.group for i in items} == {"fa-author-br:q-un"}
    assert {i.split for i in items} == {"train"}
    page.screenshot(path=str(artifacts_dir / "authoring_fa_done.png"), full_page=True)
    # Chromium logs the deliberate 400 above as a failed resource load; nothing else may appear.
    expected = [m for m in page.problems.console if "status of 400" in m and "/submit/" in m]
    assert len(expected) == 1
    page.problems.console = [m for m in page.problems.console if m not in expected]
    page.problems.assert_clean(page)


def test_empty_fields_are_flagged_before_sending(authoring_setup, page):
    from annotation.models import Item

    login(page, authoring_setup["url"], "sara-author")
    page.goto(f"{authoring_setup['url']}/p/fa-author-br/annotate/")
    page.wait_for_function("([q]) => document.getElementById('question').textContent === q", arg=[QUESTION["question"]])
    page.locator("#entailment").fill(TEXTS["entailment"])
    page.locator("#neutral").fill("   ")
    page.click("#submit")
    page.locator("#error").wait_for(state="visible")
    invalid = page.evaluate("() => [...document.querySelectorAll('textarea[aria-invalid=true]')].map(t => t.id)")
    assert invalid == ["premise", "contradiction", "neutral"]
    assert not Item.objects.filter(project=authoring_setup["relabel"]).exists()
    page.problems.assert_clean(page)


def _fail_round_one(setup):
    """Two items authored by sara-author whose three votes (the author's and two voters')
    all differ, so that 2 of 3 is not reached."""
    from annotation.models import Item
    from annotation.services.assignments import annotation_submit, assignment_next_for_annotator
    from annotation.services.imports import items_import

    rows = [
        {
            "id": "r-1",
            "premise": f"کتاب{ZWNJ}خانه ساعت ۸ باز می{ZWNJ}شود.",
            "hypothesis": "کتابخانه صبح باز است.",
            "label": "entailment",
            "author": "sara-author",
        },
        {
            "id": "r-2",
            "premise": "هوا آفتابی است.",
            "hypothesis": "باران می‌بارد.",
            "label": "contradiction",
            "author": "sara-author",
        },
    ]
    items_import(project=setup["relabel"], data=_jsonl(rows), fmt="jsonl", user=setup["admin"])
    votes = {"voter-1": {"r-1": "neutral", "r-2": "neutral"}, "voter-2": {"r-1": "contradiction", "r-2": "entailment"}}
    for voter, labels in votes.items():
        user = setup["users"][voter]
        while (assignment := assignment_next_for_annotator(user=user, slug=setup["relabel"].slug)) is not None:
            annotation_submit(
                user=user, assignment_id=assignment.pk, value={"label": labels[assignment.item.external_id]}
            )
    return {row["id"]: Item.objects.get(project=setup["relabel"], external_id=row["id"]) for row in rows}


def test_revision_page_revises_and_withdraws(authoring_setup, page, artifacts_dir):
    from annotation.models import Item

    items = _fail_round_one(authoring_setup)
    assert {i.status for i in Item.objects.filter(pk__in=[i.pk for i in items.values()])} == {"needs_revision"}
    base = authoring_setup["url"]
    login(page, base, "sara-author")
    # From the authoring page's link.
    page.goto(f"{base}/p/fa-author-br/annotate/")
    with page.expect_navigation():
        page.click("#revisions-link")
    assert page.url == f"{base}/p/fa-relabel-br/revisions/"
    assert page.locator("html").get_attribute("dir") == "ltr"  # the interface's (English), not the project's
    cards = page.locator(".revision-item")
    assert cards.count() == 2
    first = page.locator(f'.revision-item[data-item="{items["r-1"].pk}"]')
    second = page.locator(f'.revision-item[data-item="{items["r-2"].pk}"]')
    assert first.locator("textarea.premise").input_value() == items["r-1"].payload["premise"]
    assert first.locator("textarea.hypothesis").input_value() == items["r-1"].payload["hypothesis"]
    assert first.locator(".label-count").all_text_contents() == ["Contradiction: 1", "Neutral: 1"]
    assert "voter-1" not in page.content() and "voter-2" not in page.content()
    page.screenshot(path=str(artifacts_dir / "revisions_fa.png"), full_page=True)

    # Nothing changed: refused on the page, nothing sent.
    first.locator("button.revise").click()
    assert first.locator(".item-error").is_visible()
    # A blank hypothesis: the server's 400 is shown.
    first.locator("textarea.hypothesis").fill("   ")
    with page.expect_response(_is("POST", r"/api/items/\d+/revise/$")) as refused:
        first.locator("button.revise").click()
    assert refused.value.status == 400
    first.locator(".item-error").wait_for(state="visible")
    # Named by its label beside the text box it marks, not by the API's field code.
    assert first.locator(".item-error").inner_text().startswith("Hypothesis: ")
    assert first.locator("textarea.hypothesis").get_attribute("aria-invalid") == "true"

    new_hypothesis = f"کتاب{ZWNJ}خانه شب{ZWNJ}ها بسته است."
    first.locator("textarea.hypothesis").fill("")
    first.locator("textarea.hypothesis").press_sequentially(new_hypothesis)
    with page.expect_response(_is("POST", r"/api/items/\d+/revise/$")) as revised:
        first.locator("button.revise").click()
    assert revised.value.status == 200
    assert json.loads(revised.value.request.post_data) == {
        "hypothesis": new_hypothesis
    }  # the untouched premise is not sent
    first.locator(".item-done").wait_for(state="visible")
    item = Item.objects.get(pk=items["r-1"].pk)
    assert (item.status, item.round) == ("open", 2)
    assert item.payload == {"premise": items["r-1"].payload["premise"], "hypothesis": new_hypothesis}

    page.once("dialog", lambda dialog: dialog.accept())
    with page.expect_response(_is("POST", r"/api/items/\d+/revise/$")) as withdrawn:
        second.locator("button.withdraw").click()
    assert withdrawn.value.status == 200
    second.locator(".item-done").wait_for(state="visible")
    assert Item.objects.get(pk=items["r-2"].pk).status == "removed"
    page.screenshot(path=str(artifacts_dir / "revisions_fa_done.png"), full_page=True)

    page.reload()
    page.locator("#nothing").wait_for(state="visible")
    assert page.locator(".revision-item").count() == 0
    # Chromium logs the deliberate 400 above as a failed resource load; nothing else may appear.
    expected = [m for m in page.problems.console if "status of 400" in m and "/revise/" in m]
    assert len(expected) == 1
    page.problems.console = [m for m in page.problems.console if m not in expected]
    page.problems.assert_clean(page)
