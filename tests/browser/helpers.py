"""What the browser tests share: the users' password, logging in through the page, and small
helpers for waiting on navigations and API responses and building import files.

Read a page only once it has settled. A click on a link returns as soon as the next document
is committed, before it has been parsed: Chromium stops parsing at a stylesheet linked inside
<body> (most pages link their own CSS from the content block) until that file has arrived, so
`page.inner_text("main")` at that moment can be `''` on a slow or busy machine. Navigate with
`follow` (or `with page.expect_navigation():`), and assert with `expect(...)`, which retries
until the page shows what is asserted or its timeout passes; a bare `inner_text`,
`text_content`, `count()` or `is_visible()` reads once, whatever state the page is in."""

import json
import re

PASSWORD = "browser-pass-123"


def login(page, base_url: str, username: str, language: str | None = None) -> None:
    """Sign in through the login page; with `language`, the interface is in that language
    (Django's language cookie) instead of the browser's (en-US in the fixtures)."""
    if language:
        page.context.add_cookies([{"name": "django_language", "value": language, "url": base_url}])
    page.goto(f"{base_url}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    with page.expect_navigation():
        page.click("button[type=submit].primary")
    assert not page.url.rstrip("/").endswith("/login"), "login failed"


def expect(target, message: str | None = None):
    """Playwright's web-first assertions (`expect(locator).to_contain_text(...)`), imported
    when called so that a machine without Playwright skips browser tests instead of failing
    to collect them."""
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(target, message)


def follow(page, selector: str) -> None:
    """Click `selector`, a link or button that opens another page, and return once that page
    has loaded (its load event: every stylesheet and script of the document is in)."""
    with page.expect_navigation():
        page.click(selector)


def _is(method: str, pattern: str):
    """A predicate for page.expect_response: this method, a URL matching `pattern`."""
    return lambda response: response.request.method == method and re.search(pattern, response.url) is not None


def _jsonl(rows) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")


# Screen x of a substring of an element's (single) text node, via a DOM Range.
_RECT_JS = """([selector, needle, which]) => {
  const el = document.querySelector(selector);
  const node = el.firstChild;
  const start = node.data.indexOf(needle);
  if (start < 0) return null;
  const range = document.createRange();
  const rectOf = (from, to) => { range.setStart(node, from); range.setEnd(node, to); const r = range.getClientRects()[0]; return {left: r.left, right: r.right, top: r.top}; };
  if (which === 'chars') {
    const out = [];
    for (let i = start; i < start + needle.length; i++) {
      if (/\\s/.test(node.data[i])) continue;
      out.push(rectOf(i, i + 1));
    }
    return out;
  }
  return rectOf(start, start + needle.length);
}"""
