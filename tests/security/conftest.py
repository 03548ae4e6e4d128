"""The browser fixtures of tests/browser, for the XSS pages test."""

from tests.browser.conftest import browser, chromium_executable  # noqa: F401
