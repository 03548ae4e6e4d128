"""The browser fixtures of tests/browser, for the kinds' own browser tests."""

from tests.browser.conftest import artifacts_dir, browser, browser_context, chromium_executable, page  # noqa: F401
