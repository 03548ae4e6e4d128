"""What the screenshot matrix (test_screens.py) and the interface-language check
(test_interface_language.py) share: the pages they open and as whom, the world behind them
(the security suite's, with Hebrew text that carries Latin words and numbers, and Latin
system names), and one signed-in browser page per role in a given language and size."""

import re

import pytest

from tests.browser.fixtures import _CSP_LISTENER, settle_before_closing
from tests.browser.helpers import login
from tests.security.world import KIND_SLUGS, USERNAMES, build_world

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
    # The final audit with a drawn sample (`world`), so the marks form of each question shows.
    ("question-audit", "supervisor", f"/p/{QA}/question-audit/", 200),
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


def _server_error_html(language: str) -> str:
    """The 500 page as Django renders it: no request, no context, no database."""
    from django.test import RequestFactory
    from django.utils import translation
    from django.views.defaults import server_error

    with translation.override(language):
        return server_error(RequestFactory().get("/")).content.decode()


@pytest.fixture
def world(transactional_db, live_server):
    from annotation.kinds.qa.audit import audit_sample_draw

    built = build_world(text)
    # The question project's final audit has its sample drawn, as a supervisor leaves it
    # between two marks: the page then shows every sampled question with its marks form.
    audit_sample_draw(user=built.users["supervisor"], slug=QA, per_source=5, seed=1)
    return {"url": live_server.url, "world": built}


class RolePages:
    """One browser page per role (None: not signed in), opened on first use in its own
    context with the language's locale and the viewport, signed in as that role, watching
    for CSP violations, and answering the matrix's /__server_error__/ with the real 500
    page. `close()` lets their requests in flight finish, then closes them all."""

    def __init__(self, browser, base: str, settings, language: str, viewport: dict):
        self.browser, self.base, self.viewport = browser, base, viewport
        self.locale = LANGUAGES[language][0]
        self.error_page = _server_error_html(language)
        self.csp = settings.CONTENT_SECURITY_POLICY
        self.pages: dict = {}
        self.settles: list = []

    def __getitem__(self, role):
        if role not in self.pages:
            context = self.browser.new_context(locale=self.locale, viewport=self.viewport)
            context.set_default_timeout(15_000)
            page = context.new_page()
            self.settles.append(settle_before_closing(page))
            page.add_init_script(_CSP_LISTENER)  # the strict CSP holds: no page is refused a script or a style
            page.route(
                re.compile(r".*/__server_error__/$"),
                lambda route: route.fulfill(
                    status=500,
                    body=self.error_page,
                    content_type="text/html; charset=utf-8",
                    headers={"Content-Security-Policy": self.csp},
                ),
            )
            if role is not None:
                login(page, self.base, USERNAMES[role])
            self.pages[role] = page
        return self.pages[role]

    def close(self) -> None:
        for settle in self.settles:
            settle()
        for page in self.pages.values():
            page.context.close()
        self.pages, self.settles = {}, []


@pytest.fixture
def role_pages(world, browser, settings):
    """`role_pages(language, viewport)`: a RolePages on the world's server; all closed at the end."""
    opened = []

    def open_pages(language: str, viewport: dict) -> RolePages:
        pages = RolePages(browser, world["url"], settings, language, viewport)
        opened.append(pages)
        return pages

    yield open_pages
    for pages in opened:
        pages.close()
