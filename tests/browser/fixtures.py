"""Browser fixtures: Debian chromium driven by Playwright's sync API against pytest-django's
`live_server`. A plugin of tests/conftest.py, so that browser tests in any folder share one
Chromium (Playwright's sync API cannot start twice in one session).

Playwright's sync API keeps an asyncio event loop running in the test thread from the moment
it starts until it stops, and Django refuses ORM calls in a thread with a running loop
(SynchronousOnlyOperation). The browser fixture therefore sets DJANGO_ALLOW_ASYNC_UNSAFE for
as long as Playwright runs (test-only; restored when the session ends). The flag only turns
off Django's guard: the ORM calls made here are plain synchronous calls in the test thread.
"""

import os
import shutil
import time
from pathlib import Path

import pytest

REQUIRE_SERVICES = os.environ.get("MASHOV_REQUIRE_SERVICES") == "1"
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    # The same browser on every machine, whatever the machine's own settings: the interface
    # language a context without `locale` gets, and pixels one to one in screenshots.
    "--lang=en-US",
    "--force-device-scale-factor=1",
]
# The clock's zone the pages see (Date, Intl) does not follow the machine's.
CHROMIUM_ENV = {"TZ": "UTC"}
ASYNC_UNSAFE = "DJANGO_ALLOW_ASYNC_UNSAFE"


def _unavailable(reason: str):
    """Skip on a developer machine; fail in CI (MASHOV_REQUIRE_SERVICES=1)."""
    if REQUIRE_SERVICES:
        pytest.fail(f"{reason} (MASHOV_REQUIRE_SERVICES=1 requires the browser tests to run)", pytrace=False)
    pytest.skip(reason)


def pytest_report_header(config):
    """The browser and driver versions at the top of every run, so that two machines' runs can
    be compared: Debian's chromium is whatever `.ci/run` installs that day (its archive keeps
    no older builds to pin), Playwright is pinned in requirements-dev.txt."""
    import subprocess
    from importlib.metadata import PackageNotFoundError, version

    path = shutil.which("chromium")
    chromium = "not installed"
    if path:
        try:
            chromium = (
                subprocess.run([path, "--version"], capture_output=True, text=True, timeout=20).stdout.strip()
                or "unknown"
            )
        except (OSError, subprocess.SubprocessError):
            chromium = "unknown"
    try:
        playwright = version("playwright")
    except PackageNotFoundError:
        playwright = "not installed"
    return f"browser tests: {chromium}; playwright {playwright}"


@pytest.fixture(scope="session")
def chromium_executable() -> str:
    path = shutil.which("chromium")
    if not path:
        _unavailable("Debian chromium is not installed (apt-get install chromium); browser tests skipped")
    return path


@pytest.fixture(scope="session")
def browser(chromium_executable):
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright Python package is not installed (pip install -r requirements-dev.txt)")
    previous = os.environ.get(ASYNC_UNSAFE)
    os.environ[ASYNC_UNSAFE] = "true"
    playwright = sync_playwright().start()
    try:
        browser = playwright.chromium.launch(
            executable_path=chromium_executable, args=CHROMIUM_ARGS, env={**os.environ, **CHROMIUM_ENV}, headless=True
        )
    except Exception:
        playwright.stop()
        _restore_env(previous)
        raise
    yield browser
    browser.close()
    playwright.stop()
    _restore_env(previous)


def _restore_env(previous: str | None) -> None:
    if previous is None:
        os.environ.pop(ASYNC_UNSAFE, None)
    else:
        os.environ[ASYNC_UNSAFE] = previous


class PageProblems:
    """Console errors/warnings, uncaught page errors and CSP violations seen during a test."""

    def __init__(self):
        self.console: list[str] = []
        self.page_errors: list[str] = []

    def on_console(self, message) -> None:
        if message.type not in ("error", "warning"):
            return
        where = (message.location or {}).get("url", "")
        # Chromium asks for /favicon.ico on its own; the app has none. Not a page problem.
        if where.endswith("/favicon.ico"):
            return
        self.console.append(f"{message.type}: {message.text} ({where})")

    def csp_violations(self, page) -> list[str]:
        reported = page.evaluate("() => window.__mashovCspViolations || []")
        logged = [m for m in self.console if "Content Security Policy" in m or "Content-Security-Policy" in m]
        return list(reported) + logged

    def assert_clean(self, page) -> None:
        assert self.csp_violations(page) == [], "CSP violations"
        assert self.page_errors == [], "uncaught JavaScript errors"
        assert self.console == [], "console errors or warnings"


# Runs before any page script; records every CSP violation the document reports.
_CSP_LISTENER = """
window.__mashovCspViolations = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__mashovCspViolations.push(e.effectiveDirective + " blocked " + (e.blockedURI || "inline") + " at " + e.sourceFile + ":" + e.lineNumber);
});
"""


@pytest.fixture
def browser_context(browser):
    context = browser.new_context(locale="en-US", viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    yield context
    context.close()


def settle_before_closing(page):
    """Follow the page's requests; the function returned waits (up to 5 s) for those still
    in flight. Requests the page already sent (a heartbeat, a draft save) finish before the
    test's database is flushed: one still inside its transaction when the flush truncates
    the tables deadlocks with it. Closing the page then stops its timers from sending more."""
    in_flight: set = set()
    page.on("request", lambda request: in_flight.add(request))
    page.on("requestfinished", lambda request: in_flight.discard(request))
    page.on("requestfailed", lambda request: in_flight.discard(request))

    def settle() -> None:
        deadline = time.monotonic() + 5
        while in_flight and time.monotonic() < deadline:
            page.wait_for_timeout(50)

    return settle


@pytest.fixture
def page(browser_context):
    page = browser_context.new_page()
    problems = PageProblems()
    page.on("console", problems.on_console)
    page.on("pageerror", lambda e: problems.page_errors.append(str(e)))
    page.add_init_script(_CSP_LISTENER)
    page.problems = problems
    settle = settle_before_closing(page)
    yield page
    settle()
    leave_while_followed(page)
    settle()
    page.close()


# What a tab going away does to the page, done while its requests are still followed: the
# handlers of `pagehide` and of `visibilitychange` to hidden send what is unsaved (a draft,
# a comment typed after a grade) with keepalive. Sent by page.close() instead, such a
# request reaches the server after the fixture stopped waiting, and deadlocks with the
# flush of the test's database. Run here, they find nothing left to send when it closes.
_LEAVE = """() => {
  Object.defineProperty(document, "visibilityState", { value: "hidden", configurable: true });
  document.dispatchEvent(new Event("visibilitychange"));
  window.dispatchEvent(new PageTransitionEvent("pagehide", { persisted: false }));
}"""


def leave_while_followed(page) -> None:
    if page.is_closed():
        return
    try:
        page.evaluate(_LEAVE)
    except Exception:  # noqa: BLE001 - a page gone or navigating has no handlers left to run
        return


@pytest.fixture
def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
