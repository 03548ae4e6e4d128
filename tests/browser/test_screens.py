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

from tests.browser.page_matrix import LANGUAGES, MT, NLI, PAGES, SUM, VIEWPORTS, role_pages, world
from tests.security.world import USERNAMES

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

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


@pytest.mark.parametrize("language", list(LANGUAGES))
def test_every_page_in_every_language_and_width(world, role_pages, artifacts_dir, language):
    base = world["url"]
    direction = LANGUAGES[language][1]
    out = artifacts_dir / "screens"
    out.mkdir(exist_ok=True)
    failures = []
    for width_name, viewport in VIEWPORTS.items():
        pages = role_pages(language, viewport)
        for name, role, url, status in PAGES:
            page = pages[role]
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
        pages.close()
    (out / f"{language}-problems.txt").write_text("\n".join(failures) + "\n", encoding="utf-8")
    assert failures == []


def test_expired_session_leads_to_login_and_back(world, role_pages):
    """The annotate page's fetch meets a 401 once the session is gone: on to the login page
    with ?next=, and after logging in, back to the same page."""
    base = world["url"]
    page = role_pages("en", VIEWPORTS["wide"])["annotator"]
    page.goto(f"{base}/p/{NLI}/annotate/")
    page.wait_for_selector("#task:not([hidden])")
    page.context.clear_cookies()  # the session expired (or ended in another tab)
    with page.expect_navigation(url=re.compile(r"/login/\?session=ended&next=")):
        page.keyboard.press("Digit1")  # submits a label: POST → 401
    # The login page is told that the session ended, so that it says so.
    assert page.url == f"{base}/login/?session=ended&next=%2Fp%2F{NLI}%2Fannotate%2F"
    page.fill("input[name=username]", USERNAMES["annotator"])
    page.fill("input[name=password]", "browser-pass-123")
    with page.expect_navigation():
        page.click("button[type=submit].primary")
    assert page.url == f"{base}/p/{NLI}/annotate/"


def test_language_switcher_changes_on_one_click_and_names_languages_in_their_own(world, role_pages):
    base = world["url"]
    page = role_pages("en", VIEWPORTS["phone"])[None]
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


_ACTIVE_IN_VIEW = """(selector) => {
  const box = document.querySelector(selector).getBoundingClientRect();
  return {inView: box.top >= 0 && box.bottom <= window.innerHeight + 1, top: box.top, bottom: box.bottom, height: window.innerHeight, y: window.scrollY};
}"""


@pytest.mark.parametrize(("slug", "active"), [(MT, ".criterion.active"), (SUM, ".rating.active")])
def test_rating_by_keyboard_keeps_the_highlighted_criterion_in_view(world, role_pages, slug, active):
    """At phone size the rating pages are several screens long: each key that moves the
    highlight scrolls it into view (translation: 1-5 and Y; summary: 1-5)."""
    base = world["url"]
    page = role_pages("he", VIEWPORTS["phone"])["annotator"]
    page.goto(f"{base}/p/{slug}/annotate/")
    page.wait_for_selector(active)
    for step in range(7):
        on_label = page.evaluate("(s) => document.querySelector(s).dataset.criterion === 'label_valid'", active)
        page.keyboard.press("KeyY" if on_label else "Digit3")
        page.wait_for_timeout(50)
        where = page.evaluate(_ACTIVE_IN_VIEW, active)
        assert where["inView"], f"step {step}: the highlighted criterion is off screen: {where}"
