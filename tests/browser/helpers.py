"""What the browser tests share: the users' password, logging in through the page, and small
helpers for waiting on API responses and building import files."""

import json
import re

PASSWORD = "browser-pass-123"


def login(page, base_url: str, username: str) -> None:
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
