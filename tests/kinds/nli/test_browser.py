"""The nli_relabel annotator page in a real browser (Debian chromium through Playwright).

An annotator logs in, labels Hebrew and Persian items with keys 1/2/3 only, and the test
checks `dir`/`lang`, byte-exact text (ZWNJ, LRM/RLM, NBSP, Persian digits), the visual order
of mixed Latin/digit runs, that the reference label, the author and the payload's extra
fields never reach the page, the progress bar, the "nothing left" state, CSP and JS errors,
logout and the 404 for a project the user is not a member of (docs/text.md, docs/security.md).
Screenshots: tests/browser/artifacts/annotate_<lang>*.png.
"""

import json
import re

import pytest

from tests.browser.helpers import _RECT_JS, PASSWORD, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ANNOTATOR = "noa-annotator"
AUTHOR = "yael-author-x7"  # the items' author: must never appear on the annotator's page
EXTRA_SECRET = "hidden-extra-q9z"  # in the stored payload's `extra`, never sent to annotators
LABELS = ("entailment", "neutral", "contradiction")
KEY_FOR = {"entailment": "1", "neutral": "2", "contradiction": "3"}
ZWNJ, LRM, RLM, NBSP = "\u200c", "\u200e", "\u200f", "\u00a0"

# Items of our own writing. `rtl_order`: substrings of the premise that must appear from
# right to left on screen in this order; `ltr_runs`: runs (digits, Latin) whose characters
# must read left to right. `choose`: the label the annotator gives (key 1/2/3), deliberately
# not always the reference label.
ITEMS = {
    "he": [
        {
            "id": "he-1",
            "premise": "המוזיאון פתח ב-2024 תערוכה של Van Gogh עם 45 ציורים.",
            "hypothesis": "בתערוכה יש פחות מ-50 ציורים (לפי ה-catalogue).",
            "label": "entailment",
            "rtl_order": ["המוזיאון", "2024", "תערוכה", "Van Gogh", "ציורים"],
            "ltr_runs": ["2024", "Van Gogh", "45"],
            "choose": "entailment",
        },
        {
            "id": "he-2",
            # an RLM after the Latin name and an NBSP before the currency sign: kept exactly
            "premise": f"דנה קנתה 3 מחברות ו-2 עטים ב-Office Depot{RLM}, ושילמה 27.50{NBSP}₪.",
            "hypothesis": "דנה לא קנתה שום דבר בחנות.",
            "label": "c",
            "rtl_order": ["דנה", "מחברות", "Office Depot", "ושילמה"],
            "ltr_runs": ["Office Depot", "27.50"],
            "choose": "neutral",
        },
        {
            "id": "he-3",
            "premise": f"לפי דוח ה-OECD, שיעור התעסוקה עלה ל-78% בשנת 2023{LRM}.",
            "hypothesis": "שיעור האבטלה ירד ל-3.1% באותה שנה.",
            "label": "n",
            "rtl_order": ["לפי", "OECD", "שיעור", "2023"],
            "ltr_runs": ["OECD", "2023"],
            "choose": "contradiction",
        },
    ],
    "fa": [
        {
            "id": "fa-1",
            "premise": f"کتاب{ZWNJ}خانه{ZWNJ}ی مرکزی ۱۲ هزار جلد کتاب دارد و از ساعت ۸ تا ۲۰ باز است.",
            "hypothesis": f"کتاب{ZWNJ}خانه شب{ZWNJ}ها تعطیل است.",
            "label": "e",
            "rtl_order": [f"کتاب{ZWNJ}خانه{ZWNJ}ی", "۱۲", "جلد", "۲۰", "باز"],
            "ltr_runs": ["۱۲", "۲۰"],
            "choose": "neutral",
        },
        {
            "id": "fa-2",
            "premise": f"مریم با لپ{ZWNJ}تاپ Lenovo خود مقاله{ZWNJ}ای ۳۵۰۰ کلمه{ZWNJ}ای درباره{ZWNJ}ی Python نوشت.",
            "hypothesis": f"مریم هیچ{ZWNJ}وقت برنامه{ZWNJ}نویسی نکرده است.",
            "label": "neutral",
            "rtl_order": ["مریم", "Lenovo", "۳۵۰۰", "Python", "نوشت"],
            "ltr_runs": ["Lenovo", "۳۵۰۰", "Python"],
            "choose": "contradiction",
        },
        {
            "id": "fa-3",
            "premise": "قیمت بلیت قطار در سال ۱۴۰۲ به ۴۵۰٬۰۰۰ تومان رسید (حدود 9 USD).",
            "hypothesis": "بلیت قطار در سال ۱۴۰۲ رایگان شد.",
            "label": "contradiction",
            "rtl_order": ["قیمت", "۱۴۰۲", "۴۵۰٬۰۰۰", "تومان", "USD"],
            "ltr_runs": ["۱۴۰۲", "۴۵۰٬۰۰۰"],
            "choose": "entailment",
        },
    ],
}

# A sentence of an RTL language that happens to start with a Latin word: the paragraph is
# still right-to-left, so the Latin word belongs at the right edge.
LATIN_FIRST = {
    "he": {
        "id": "he-latin",
        "premise": "Intel פתחה מפעל חדש בקריית גת בשנת 2023.",
        "hypothesis": "Intel סגרה את כל המפעלים שלה בישראל.",
        "label": "c",
        "first": "Intel",
        "last": "בשנת",
    },
    "fa": {
        "id": "fa-latin",
        "premise": f"Google Maps در تهران ۳ مسیر تازه پیشنهاد می{ZWNJ}دهد.",
        "hypothesis": f"Google Maps در ایران کار نمی{ZWNJ}کند.",
        "label": "c",
        "first": "Google",
        "last": "پیشنهاد",
    },
}


def _jsonl(items: list[dict]) -> bytes:
    rows = []
    for item in items:
        rows.append(
            {
                "id": item["id"],
                "premise": item["premise"],
                "hypothesis": item["hypothesis"],
                "label": item["label"],
                "author": AUTHOR,
                "extra": {"note": EXTRA_SECRET},
            }
        )
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")


@pytest.fixture
def rtl_setup(transactional_db, live_server):
    """An admin, an author, an annotator who belongs to a Hebrew and a Persian nli_relabel
    project (plus a Latin-first one per language), and a project the annotator is not in."""
    from django.contrib.auth import get_user_model

    from annotation.models import Membership
    from annotation.services.imports import items_import
    from annotation.services.projects import project_create

    User = get_user_model()
    admin = User.objects.create_user(username="browser-admin", password=PASSWORD, is_staff=True)
    User.objects.create_user(username=AUTHOR, password=PASSWORD)
    annotator = User.objects.create_user(username=ANNOTATOR, password=PASSWORD)
    projects = {}
    for lang, items in ITEMS.items():
        for suffix, rows in (("", items), ("-latin", [LATIN_FIRST[lang]])):
            slug = f"{lang}-browser{suffix}"
            project = project_create(
                actor=admin, slug=slug, name=f"{lang.upper()} NLI browser{suffix}", kind="nli_relabel", language=lang
            )
            Membership.objects.create(project=project, user=annotator, role="annotator", status="active")
            result = items_import(project=project, data=_jsonl(rows), fmt="jsonl", filename=f"{slug}.jsonl", user=admin)
            assert result.created == len(rows)
            projects[slug] = project
    secret = project_create(actor=admin, slug="he-not-yours", name="Not yours", kind="nli_relabel", language="he")
    items_import(project=secret, data=_jsonl([ITEMS["he"][0] | {"id": "secret-1"}]), fmt="jsonl", user=admin)
    return {"annotator": annotator, "projects": projects, "secret": secret, "url": live_server.url}


def _is_next(response) -> bool:
    return response.request.method == "GET" and re.search(r"/api/projects/[^/]+/next/$", response.url) is not None


def _is_submit(response) -> bool:
    return response.request.method == "POST" and re.search(r"/api/assignments/\d+/submit/$", response.url) is not None


def _keys_anywhere(value) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys_anywhere(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys_anywhere(v)}
    return set()


def assert_next_payload_is_clean(body: dict) -> None:
    """The item as /next/ sends it: premise and hypothesis only; no label, author or extra."""
    assert set(body) == {"assignment", "expires_at", "item"}
    assert set(body["item"]) == {"id", "external_id", "payload"}
    assert set(body["item"]["payload"]) == {"premise", "hypothesis"}
    forbidden = {"label", "reference_label", "author", "gold", "extra", "group"}
    assert not (_keys_anywhere(body) & forbidden)
    text = json.dumps(body, ensure_ascii=False)
    assert AUTHOR not in text and EXTRA_SECRET not in text


def assert_page_hides_reference(page) -> None:
    """No reference label, author or extra anywhere in the DOM. The three label buttons and
    the guide to their meanings necessarily name every label, the same for every item, and
    the flash repeats the annotator's own last choice, so
    they are removed before the label names are searched."""
    html = page.content()
    assert AUTHOR not in html
    assert EXTRA_SECRET not in html
    rest = page.evaluate(
        """() => {
             const copy = document.documentElement.cloneNode(true);
             copy.querySelectorAll('.label-button, #flash, #guide').forEach(b => b.remove());
             return copy.outerHTML;
           }"""
    )
    for label in LABELS:
        assert label not in rest.lower(), f"{label!r} appears outside the label buttons"
    data_attributes = page.evaluate(
        """() => {
             const out = [];
             for (const el of document.querySelectorAll('*')) {
               if (el.classList.contains('label-button')) continue;
               for (const a of el.attributes) if (a.name.startsWith('data-')) out.push([el.id || el.tagName, a.name, a.value]);
             }
             return out;
           }"""
    )
    for _owner, name, value in data_attributes:
        assert name == "data-assignment", f"unexpected data attribute {name}={value!r}"
        assert value.isdigit()
    button_data = page.evaluate(
        "() => [...document.querySelectorAll('.label-button')].map(b => [...b.attributes].filter(a => a.name.startsWith('data-')).map(a => a.name).sort())"
    )
    assert button_data == [["data-key", "data-label"]] * 3


def assert_visual_order(page, selector: str, rtl_order: list[str], ltr_runs: list[str]) -> None:
    boxes = [page.evaluate(_RECT_JS, [selector, needle, "whole"]) for needle in rtl_order]
    assert None not in boxes
    assert len({round(b["top"]) for b in boxes}) == 1, "the sentence wrapped; the order check needs one line"
    centres = [(b["left"] + b["right"]) / 2 for b in boxes]
    assert centres == sorted(centres, reverse=True), f"expected right-to-left order {rtl_order}, got x={centres}"
    for run in ltr_runs:
        chars = page.evaluate(_RECT_JS, [selector, run, "chars"])
        lefts = [c["left"] for c in chars]
        assert lefts == sorted(lefts), f"{run!r} is not laid out left to right: {lefts}"


def wait_for_item_text(page, premise: str, hypothesis: str) -> None:
    page.wait_for_function(
        """([p, h]) => !document.getElementById('task').hidden
                        && document.getElementById('premise').textContent === p
                        && document.getElementById('hypothesis').textContent === h""",
        arg=[premise, hypothesis],
    )


# The bar's text in Latin digits: a Persian interface writes them in Persian digits.
_PROGRESS_TEXT = """document.getElementById('progress-text').textContent
    .replace(/[\u06f0-\u06f9]/g, digit => String(digit.charCodeAt(0) - 0x06F0))"""


def wait_for_progress_done(page, done: int) -> dict:
    """Wait until the bar shows `done` labeled items; returns what the bar shows (its text
    in Latin digits)."""
    page.wait_for_function(
        f"""d => document.getElementById('progress').value === d && ({_PROGRESS_TEXT}).startsWith(d + ' / ')""",
        arg=done,
    )
    return page.evaluate(
        f"""() => ({{value: document.getElementById('progress').value,
                   max: document.getElementById('progress').max,
                   text: {_PROGRESS_TEXT}}})"""
    )


def stored_labels(annotator, project) -> dict[str, str]:
    from annotation.models import Annotation

    rows = Annotation.objects.filter(annotator=annotator, item__project=project).select_related("item")
    return {a.item.external_id: a.value["label"] for a in rows}


@pytest.mark.parametrize("lang", ["he", "fa"])
def test_annotator_labels_rtl_items_with_the_keyboard(rtl_setup, page, artifacts_dir, lang):
    from annotation.models import Item

    project = rtl_setup["projects"][f"{lang}-browser"]
    annotator = rtl_setup["annotator"]
    source = {item["id"]: item for item in ITEMS[lang]}
    total = len(source)
    login(page, rtl_setup["url"], ANNOTATOR, language=lang)  # the interface in the project's language

    with page.expect_response(_is_next) as first_next:
        response = page.goto(f"{rtl_setup['url']}/p/{project.slug}/annotate/")
    assert response.status == 200
    csp = response.headers.get("content-security-policy", "")
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "unsafe-eval" not in csp

    html = page.locator("html")
    assert html.get_attribute("dir") == "rtl"
    assert html.get_attribute("lang") == lang

    # RTL flow: label 1 sits to the right of label 3.
    first_box = page.locator('.label-button[data-key="1"]').bounding_box()
    last_box = page.locator('.label-button[data-key="3"]').bounding_box()
    assert first_box["x"] > last_box["x"] + last_box["width"] - 1

    next_response = first_next.value
    expected: dict[str, str] = {}
    for step in range(total):
        assert next_response.status == 200
        body = next_response.json()
        assert_next_payload_is_clean(body)
        external_id = body["item"]["external_id"]
        item = source[external_id]
        stored = Item.objects.get(pk=body["item"]["id"])
        assert stored.project_id == project.pk
        # Byte-exact all the way: the source text, the database and the page agree.
        assert stored.payload["premise"] == item["premise"] and stored.payload["hypothesis"] == item["hypothesis"]
        assert body["item"]["payload"] == {"premise": item["premise"], "hypothesis": item["hypothesis"]}
        wait_for_item_text(page, item["premise"], item["hypothesis"])
        assert page.evaluate("() => getComputedStyle(document.getElementById('premise')).direction") == "rtl"
        assert page.evaluate("() => getComputedStyle(document.getElementById('hypothesis')).direction") == "rtl"
        assert_visual_order(page, "#premise", item["rtl_order"], item["ltr_runs"])
        assert_page_hides_reference(page)
        wait_for_progress_done(page, step)  # the total is checked in test_progress_total_counts_the_item_on_screen
        if step == 0:
            page.screenshot(path=str(artifacts_dir / f"annotate_{lang}.png"), full_page=True)

        with page.expect_response(_is_submit) as submitted, page.expect_response(_is_next) as following:
            page.keyboard.press(KEY_FOR[item["choose"]])
        assert submitted.value.status == 201
        expected[external_id] = item["choose"]
        wait_for_progress_done(page, step + 1)  # the bar advanced
        assert stored_labels(annotator, project) == expected
        next_response = following.value

    assert next_response.status == 204
    page.locator("#done").wait_for(state="visible")
    assert page.locator("#task").is_hidden()
    assert page.locator("#error").is_hidden()
    assert stored_labels(annotator, project) == {k: v["choose"] for k, v in source.items()}
    assert wait_for_progress_done(page, total) == {"value": total, "max": total, "text": f"{total} / {total}"}
    assert_page_hides_reference(page)
    page.screenshot(path=str(artifacts_dir / f"annotate_{lang}_done.png"), full_page=True)
    page.problems.assert_clean(page)


def test_progress_total_counts_the_item_on_screen(rtl_setup, page):
    """The bar's total is every item the annotator labels here: done + the one on screen +
    the ones still to come — "0 / 3" on the first of three items, "2 / 3" on the last."""
    project = rtl_setup["projects"]["he-browser"]
    total = len(ITEMS["he"])
    login(page, rtl_setup["url"], ANNOTATOR)
    page.goto(f"{rtl_setup['url']}/p/{project.slug}/annotate/")
    shown = []
    for step in range(total):
        page.locator("#task").wait_for(state="visible")
        shown.append(wait_for_progress_done(page, step)["text"])
        with page.expect_response(_is_next):
            page.keyboard.press("2")
    page.locator("#done").wait_for(state="visible")
    shown.append(wait_for_progress_done(page, total)["text"])
    assert shown == [f"{n} / {total}" for n in range(total + 1)]


@pytest.mark.parametrize("lang", ["he", "fa"])
def test_rtl_sentence_starting_with_a_latin_word_stays_right_to_left(rtl_setup, page, artifacts_dir, lang):
    """A Hebrew/Persian sentence whose first word is Latin is still an RTL paragraph: the
    Latin word is at the right edge (docs/text.md "Display": mixed text in the right order)."""
    item = LATIN_FIRST[lang]
    login(page, rtl_setup["url"], ANNOTATOR)
    page.goto(f"{rtl_setup['url']}/p/{lang}-browser-latin/annotate/")
    wait_for_item_text(page, item["premise"], item["hypothesis"])
    page.screenshot(path=str(artifacts_dir / f"annotate_{lang}_latin_first.png"), full_page=True)
    for selector in ("#premise", "#hypothesis"):
        assert page.evaluate(f"() => getComputedStyle(document.querySelector('{selector}')).direction") == "rtl", (
            selector
        )
    first = page.evaluate(_RECT_JS, ["#premise", item["first"], "whole"])
    last = page.evaluate(_RECT_JS, ["#premise", item["last"], "whole"])
    assert first["left"] > last["right"], f"{item['first']!r} should be right of {item['last']!r} in an RTL paragraph"
    page.problems.assert_clean(page)


def test_english_chrome_keeps_its_own_direction_on_an_rtl_page(rtl_setup, page):
    """With the interface in English, the page is still dir="rtl" (the project's), but
    English sentences and the "done / total" counter must not be reordered by it: the final
    period of the hint is at its right end and the counter reads "0 / 3", not "3 / 0"."""
    login(page, rtl_setup["url"], ANNOTATOR)
    page.goto(f"{rtl_setup['url']}/p/he-browser/annotate/")
    page.locator("#task").wait_for(state="visible")
    wait_for_progress_done(page, 0)
    hint = page.locator(".hint").text_content()
    assert hint.startswith("Keys") and hint.endswith(".")
    keys = page.evaluate(_RECT_JS, [".hint", "Keys", "whole"])
    period = page.evaluate(_RECT_JS, [".hint", hint[-1], "chars"])[-1]
    counter = page.evaluate(_RECT_JS, ["#progress-text", page.locator("#progress-text").text_content(), "chars"])
    problems = []
    if not period["left"] > keys["right"]:
        problems.append("the hint's final period is drawn at its left end ('.Keys 1, 2, 3 ...')")
    if not counter[0]["left"] < counter[-1]["left"]:
        problems.append("the progress counter reads right to left ('3 / 0' for 0 done of 3)")
    assert problems == []


def test_logout_and_annotate_page_of_a_foreign_project_is_404(rtl_setup, page):
    base = rtl_setup["url"]
    login(page, base, ANNOTATOR)

    not_member = page.goto(f"{base}/p/{rtl_setup['secret'].slug}/annotate/")
    assert not_member.status == 404
    not_member_body = not_member.text()
    assert "Not yours" not in not_member_body
    missing = page.goto(f"{base}/p/no-such-project/annotate/")
    assert missing.status == 404
    assert missing.text() == not_member_body  # "not yours" and "missing" look the same

    page.goto(f"{base}/p/he-browser/annotate/")
    assert page.locator(".who").inner_text() == ANNOTATOR
    with page.expect_navigation():
        page.get_by_role("button", name="Log out").click()
    assert page.url.startswith(f"{base}/login/")
    assert page.locator(".who").count() == 0

    after = page.goto(f"{base}/p/he-browser/annotate/")
    assert after.status == 200 and "/login/" in page.url  # redirected to the login page
    assert page.locator("#annotate").count() == 0
    api = page.request.get(f"{base}/api/projects/he-browser/next/")
    assert api.status in (401, 403)
