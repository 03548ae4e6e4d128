"""What the browser tests share: the users' password, logging in through the page, and small
helpers for waiting on API responses and building import files."""

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
