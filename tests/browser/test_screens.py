"""The screenshot matrix: every page opened in Hebrew, Persian and English at
1366×900 and 390×844, a screenshot of each kept under the artifacts folder, and on each:

- the page's `lang` and `dir` are the interface language's (not the project's);
- item text blocks carry the project's language and direction;
- nothing makes the page scroll sideways at 390 px (tables scroll inside their card);
- no Content-Security-Policy violation;
- the known mixed-direction cases are isolated: dates (`<time>`), counts and numbers
  (`.num`, `.badge`, the progress line), chart tick labels (SVG text, where "-0.2" once read
  "0.2-") and user names (`<bdi>`); interface text (labels, hints, headings) keeps the
  interface's direction, where ":Answer" came from an English label in an RTL block.

The data is the security suite's world (one project of every kind with work in every state),
with Hebrew text that carries Latin words and numbers, and Latin system names."""

import re

import pytest

from tests.browser.fixtures import _CSP_LISTENER
from tests.browser.helpers import login
from tests.security.world import KIND_SLUGS, USERNAMES, build_world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LANGUAGES = {"he": ("he-IL", "rtl"), "fa": ("fa-IR", "rtl"), "en": ("en-US", "ltr")}
VIEWPORTS = {"wide": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}
NLI, QA, MT, LABEL, PHRASE, SUM, AUTHOR = (
    KIND_SLUGS[k]
    for k in (
        "nli_relabel",
        "qa_authoring",
        "translation_rating",
        "label_test",
        "phrase_pair",
        "summary_rating",
        "nli_authoring",
    )
)

# (name, role, url, expected status); role None: not signed in.
PAGES = [
    ("login", None, "/login/", 200),
    ("home", "annotator", "/", 200),
    *((f"annotate-{kind}", "annotator", f"/p/{slug}/annotate/", 200) for kind, slug in KIND_SLUGS.items()),
    ("feedback", "annotator", "/feedback/", 200),
    ("revisions", "annotator", f"/p/{NLI}/revisions/", 200),
    ("validate", "annotator", f"/p/{QA}/validate/", 200),
    ("review", "reviewer", f"/p/{QA}/review/", 200),
    ("project-qa", "supervisor", f"/p/{QA}/", 200),
    ("project-nli", "supervisor", f"/p/{NLI}/", 200),
    ("dashboard-nli", "supervisor", f"/p/{NLI}/dashboard/", 200),
    ("dashboard-label", "supervisor", f"/p/{LABEL}/dashboard/", 200),
    ("lchaim-mt", "supervisor", f"/p/{MT}/lchaim/", 200),
    ("lchaim-label", "supervisor", f"/p/{LABEL}/lchaim/", 200),
    ("coherence", "supervisor", f"/p/{PHRASE}/coherence/", 200),
    ("summaries", "supervisor", f"/p/{SUM}/summaries/", 200),
    ("quality", "supervisor", f"/p/{QA}/quality/", 200),
    # The supervisor console, annotator quality and adjudication, the release stage.
    ("console-new-project", "supervisor", "/console/projects/new/", 200),
    ("console-users", "supervisor", "/console/users/", 200),
    ("console-settings", "supervisor", f"/console/p/{NLI}/settings/", 200),
    ("console-items", "supervisor", f"/console/p/{NLI}/items/", 200),
    ("console-preview", "supervisor", f"/console/p/{PHRASE}/preview/", 200),
    ("annotators", "supervisor", f"/p/{NLI}/annotators/", 200),
    ("adjudication", "supervisor", f"/p/{NLI}/adjudication/", 200),
    ("release", "supervisor", f"/p/{NLI}/release/", 200),
    ("releases", "supervisor", f"/p/{NLI}/releases/", 200),
    ("bias", "supervisor", f"/p/{NLI}/bias/", 200),
    ("leaderboard", "supervisor", f"/p/{NLI}/leaderboard/", 200),
    ("error-403", "disqualified", f"/p/{NLI}/annotate/", 403),
    ("error-404", "annotator", "/p/no-such-project/", 404),
    ("error-500", None, "/__server_error__/", 500),
]


def text(slug: str, field: str) -> str:
    """Hebrew with a Latin word and numbers in it, ending with a period; identifiers (name,
    title, system) short and, for systems, Latin."""
    name = field.rstrip("0123456789-")
    if name == "system":
        return f"system {'AB'[int(field[-1])]}"
    if name in ("name", "title"):
        return f"פרויקט {slug[4:]} 2026"
    return f"המשפט {field} מזכיר את GPT-4 ואת 57 המילים שבו, ולא עוד."


# Each known mixed-direction case, checked on whatever the page shows of it.
_CHECK = r"""(project) => {
  const problems = [];
  const style = (el) => getComputedStyle(el);
  const isolated = (el) => ['isolate', 'isolate-override', 'plaintext'].includes(style(el).unicodeBidi);
  const describe = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (el.className && el.className.baseVal === undefined ? '.' + String(el.className).split(' ').join('.') : '');
  for (const el of document.querySelectorAll('time')) {
    if (!isolated(el) || style(el).direction !== 'ltr') problems.push('date not isolated LTR: ' + describe(el));
  }
  for (const el of document.querySelectorAll('svg text')) {
    if (style(el).direction !== 'ltr') problems.push('chart label not LTR: ' + el.textContent);
  }
  for (const el of document.querySelectorAll('.num, .badge, #progress-text')) {
    if (!isolated(el)) problems.push('number not isolated: ' + describe(el));
  }
  for (const el of document.querySelectorAll('.who')) {
    if (!el.querySelector('bdi')) problems.push('user name not in <bdi>');
  }
  for (const el of document.querySelectorAll('#task .text:not(.source .text), .feedback-message, .q-text')) {
    const holder = el.closest('[lang]');
    if (holder === document.documentElement || holder.lang !== project.lang) problems.push('item text without the project language: ' + describe(el));
    if (el.tagName === 'BDI') continue;  // <bdi> takes the direction of its own text
    if (!el.closest('[dir]') || el.closest('[dir]') === document.documentElement) problems.push('item text without its direction: ' + describe(el));
  }
  // Interface text keeps the interface's direction: no block of the page's chrome is turned
  // by the project's language (":Answer" came from an English label inside an RTL block).
  for (const el of document.querySelectorAll('.feedback-entry, .answer-line, .hint, h1, h2')) {
    const own = el.closest('[dir]');  // a direction set on purpose: the element's own, or dir=auto
    if (style(el).direction !== style(document.documentElement).direction && !(own && own !== document.documentElement && (own === el || own.dir === 'auto'))) problems.push('interface text turned: ' + describe(el));
  }
  const root = document.scrollingElement;
  return {problems, lang: document.documentElement.lang, dir: document.documentElement.dir,
          scrollWidth: root.scrollWidth, innerWidth: window.innerWidth};
}"""


@pytest.fixture
def world(transactional_db, live_server):
    return {"url": live_server.url, "world": build_world(text)}


def _server_error_html(language: str) -> str:
    """The 500 page as Django renders it: no request, no context, no database."""
    from django.test import RequestFactory
    from django.utils import translation
    from django.views.defaults import server_error

    with translation.override(language):
        return server_error(RequestFactory().get("/")).content.decode()


@pytest.mark.parametrize("language", list(LANGUAGES))
def test_every_page_in_every_language_and_width(world, browser, artifacts_dir, settings, language):
    base = world["url"]
    locale, direction = LANGUAGES[language]
    out = artifacts_dir / "screens"
    out.mkdir(exist_ok=True)
    error_page = _server_error_html(language)
    failures = []
    for width_name, viewport in VIEWPORTS.items():
        contexts = {}
        for name, role, url, status in PAGES:
            if role not in contexts:
                context = browser.new_context(locale=locale, viewport=viewport)
                context.set_default_timeout(15_000)
                page = context.new_page()
                page.add_init_script(_CSP_LISTENER)  # the strict CSP holds: no page is refused a script or a style
                page.route(
                    re.compile(r".*/__server_error__/$"),
                    lambda route: route.fulfill(
                        status=500,
                        body=error_page,
                        content_type="text/html; charset=utf-8",
                        headers={"Content-Security-Policy": settings.CONTENT_SECURITY_POLICY},
                    ),
                )
                if role is not None:
                    login(page, base, USERNAMES[role])
                contexts[role] = (context, page)
            page = contexts[role][1]
            where = f"{language} {width_name} {name}"
            response = page.goto(base + url, wait_until="networkidle")
            if response.status != status:
                failures.append(f"{where}: status {response.status}, expected {status}")
                continue
            page.screenshot(path=str(out / f"{language}-{viewport['width']}-{name}.png"), full_page=True)
            state = page.evaluate(_CHECK, {"lang": "he"})
            if (state["lang"], state["dir"]) != (language, direction):
                failures.append(f"{where}: html lang/dir {state['lang']}/{state['dir']}")
            if width_name == "phone" and state["scrollWidth"] > state["innerWidth"]:
                failures.append(f"{where}: scrolls sideways ({state['scrollWidth']} > {state['innerWidth']})")
            failures.extend(f"{where}: {problem}" for problem in state["problems"])
            failures.extend(f"{where}: CSP {v}" for v in page.evaluate("() => window.__mashovCspViolations"))
        for context, _page in contexts.values():
            context.close()
    (out / f"{language}-problems.txt").write_text("\n".join(failures) + "\n", encoding="utf-8")
    assert failures == []


def test_expired_session_leads_to_login_and_back(world, browser):
    """The annotate page's fetch meets a 401 once the session is gone: on to the login page
    with ?next=, and after logging in, back to the same page."""
    base = world["url"]
    context = browser.new_context(locale="en-US", viewport=VIEWPORTS["wide"])
    page = context.new_page()
    login(page, base, USERNAMES["annotator"])
    page.goto(f"{base}/p/{NLI}/annotate/")
    page.wait_for_selector("#task:not([hidden])")
    context.clear_cookies()  # the session expired (or ended in another tab)
    with page.expect_navigation(url=re.compile(r"/login/\?session=ended&next=")):
        page.keyboard.press("Digit1")  # submits a label: POST → 401
    # The login page is told that the session ended, so that it says so.
    assert page.url == f"{base}/login/?session=ended&next=%2Fp%2F{NLI}%2Fannotate%2F"
    page.fill("input[name=username]", USERNAMES["annotator"])
    page.fill("input[name=password]", "browser-pass-123")
    with page.expect_navigation():
        page.click("button[type=submit].primary")
    assert page.url == f"{base}/p/{NLI}/annotate/"
    context.close()


def test_language_switcher_changes_on_one_click_and_names_languages_in_their_own(world, browser):
    base = world["url"]
    context = browser.new_context(locale="en-US", viewport=VIEWPORTS["phone"])
    page = context.new_page()
    page.goto(f"{base}/login/")
    buttons = page.locator(".lang-switch button")
    assert [buttons.nth(i).inner_text() for i in range(buttons.count())] == ["English", "עברית", "فارسی"]
    assert page.locator(".lang-switch button[aria-current]").inner_text() == "English"
    with page.expect_navigation():
        page.locator('.lang-switch button[value="fa"]').click()
    assert page.url == f"{base}/login/"
    html = page.locator("html")
    assert (html.get_attribute("lang"), html.get_attribute("dir")) == ("fa", "rtl")
    assert page.locator(".lang-switch button[aria-current]").inner_text() == "فارسی"
    context.close()


_ACTIVE_IN_VIEW = """(selector) => {
  const box = document.querySelector(selector).getBoundingClientRect();
  return {inView: box.top >= 0 && box.bottom <= window.innerHeight + 1, top: box.top, bottom: box.bottom, height: window.innerHeight, y: window.scrollY};
}"""


@pytest.mark.parametrize(("slug", "active"), [(MT, ".criterion.active"), (SUM, ".rating.active")])
def test_rating_by_keyboard_keeps_the_highlighted_criterion_in_view(world, browser, slug, active):
    """At phone size the rating pages are several screens long: each key that moves the
    highlight scrolls it into view (translation: 1-5 and Y; summary: 1-5)."""
    base = world["url"]
    context = browser.new_context(locale="he-IL", viewport=VIEWPORTS["phone"])
    page = context.new_page()
    login(page, base, USERNAMES["annotator"])
    page.goto(f"{base}/p/{slug}/annotate/")
    page.wait_for_selector(active)
    for step in range(7):
        on_label = page.evaluate("(s) => document.querySelector(s).dataset.criterion === 'label_valid'", active)
        page.keyboard.press("KeyY" if on_label else "Digit3")
        page.wait_for_timeout(50)
        where = page.evaluate(_ACTIVE_IN_VIEW, active)
        assert where["inView"], f"step {step}: the highlighted criterion is off screen: {where}"
    context.close()
