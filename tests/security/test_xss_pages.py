"""Stored XSS: a payload corpus planted in every stored free-text field that a page shows,
then every page opened in Debian chromium as the user who sees it (docs/security.md "Pages").

Every payload, if it ran, would set `window.__xss` and open a dialog. For each page:
- no dialog fired and `window.__xss` is undefined;
- no element carries an event-handler attribute or a `javascript:` link (the app has none,
  so any would come from a payload);
- every planted text the page shows is shown whole and literally: each text ends with a tag
  ⟦slug:field⟧, and wherever a tag appears in the page's text, the whole planted string
  stands before it, neither escaped twice nor cut (bidi controls may be shown as visible
  "U+202E" marks, as the review page does on purpose);
- the response carries the strict Content-Security-Policy of the settings.

Project names and QA titles are identifiers (bidi controls refused): they get payloads
without U+202E. Usernames cannot hold any of these characters (Django's validator).
Project guidelines are markdown: rendered, they need not read as typed (entities decode,
`*` emphasises), so for them only the tag must show; nothing of them may run or become an
element outside the sanitiser's allow-list."""

import itertools

import pytest

from tests.browser.helpers import login
from tests.security.world import IDENTIFIER_FIELDS, KIND_SLUGS, OTHER_SLUG, USERNAMES, build_world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RLO = "\u202e"
RUN = "window.__xss=1;alert(1)"
PAYLOADS = [
    f"<script>{RUN}</script>",
    f'<img src=x onerror="{RUN}">',
    f'<svg onload="{RUN}"></svg>',
    f'"><script>{RUN}</script>',
    f"'><img src=x onerror={RUN}>",
    f"javascript:{RUN}",
    "{{7*7}} ${7*7} {% now 'Y' %}",
    "{{constructor.constructor('window.__xss=1;alert(1)')()}}",
    f'" onmouseover="{RUN}" autofocus onfocus="{RUN}" x="',
    f"' onfocus='{RUN}' autofocus='",
    f"[x](javascript:{RUN})",
    f'<a href="javascript:{RUN}">link</a>',
    '<iframe srcdoc="<script>parent.__xss=1</script>"></iframe>',
    f"</textarea></title></style><script>{RUN}</script>",
    f"</script><script>{RUN}</script><!--",
    f'<details open ontoggle="{RUN}">x</details>',
    f"<math><mtext><table><mglyph><style><img src=x onerror={RUN}>",
    f"&lt;script&gt;{RUN}&lt;/script&gt; &amp; &#60;b&#62;",
    f"{RLO}<script>{RUN}</script>gnp.exe",
    f"שלום {RLO}txt.exe<img src=x onerror={RUN}> עולם",
    f'<input value="x" autofocus onfocus="{RUN}">',
]
BIDI_FREE = [p for p in PAYLOADS if RLO not in p]


class Corpus:
    """Hands out the payloads in turn, each with its tag; remembers what it planted."""

    def __init__(self):
        self.planted: dict[str, str] = {}  # tag → the full stored text
        self._all, self._plain = itertools.cycle(PAYLOADS), itertools.cycle(BIDI_FREE)

    def __call__(self, slug: str, name: str) -> str:
        payload = next(self._plain if name.rstrip("0123456789-") in IDENTIFIER_FIELDS else self._all)
        tag = f"⟦{slug}:{name}⟧"
        text = f"{payload} {tag}"
        self.planted[tag] = text
        return text


STRICT_CSP = (
    "default-src 'self'",
    "script-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
)

# Who opens which pages. Every page that renders stored text is here; the matrix test checks
# that each route exists.
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
PAGES = {
    "annotator": [
        "/",
        *(f"/p/{slug}/annotate/" for slug in KIND_SLUGS.values()),
        "/feedback/",
        f"/p/{NLI}/revisions/",
        f"/p/{QA}/validate/",
    ],
    "reviewer": [
        "/",
        f"/console/p/{NLI}/items/",
        f"/console/p/{QA}/preview/",
        f"/p/{QA}/review/",
        f"/p/{QA}/validate/",
        f"/p/{QA}/quality/",
        f"/p/{NLI}/dashboard/",
        f"/p/{LABEL}/lchaim/",
        f"/p/{SUM}/summaries/",
    ],
    "supervisor": [
        "/",
        *(f"/p/{slug}/" for slug in KIND_SLUGS.values()),
        *(f"/console/p/{slug}/{page}/" for slug in KIND_SLUGS.values() for page in ("settings", "items", "preview")),
        "/console/projects/new/",
        "/console/users/",
        f"/p/{NLI}/dashboard/",
        f"/p/{LABEL}/dashboard/",
        f"/p/{MT}/lchaim/",
        f"/p/{LABEL}/lchaim/",
        f"/p/{PHRASE}/coherence/",
        f"/p/{SUM}/summaries/",
        f"/p/{QA}/quality/",
        f"/p/{NLI}/bias/",  # PMI words drawn by script from the planted hypotheses
        f"/p/{NLI}/audit/",
    ],
    "other_supervisor": ["/", f"/p/{OTHER_SLUG}/", "/login/"],
}
# Pages whose job is to show stored text: at least one planted text must be on them.
SHOWS_TEXT = {
    "/annotate/",
    "/feedback/",
    "/revisions/",
    "/review/",
    "/validate/",
    "/p/",
    "/items/",
    "/preview/",
    "/settings/",
}
MARKDOWN_FIELDS = ("guidelines",)

_PAGE_STATE = """() => {
  const handlers = [];
  for (const el of document.querySelectorAll('*')) {
    for (const a of el.attributes) {
      if (a.name.startsWith('on')) handlers.push(el.tagName + '[' + a.name + ']');
      if (['href', 'src', 'action', 'formaction', 'xlink:href'].includes(a.name) && /^\\s*javascript:/i.test(a.value))
        handlers.push(el.tagName + '[' + a.name + '=javascript:]');
    }
  }
  const inserted = document.querySelectorAll('img[src=x], iframe[srcdoc], details[ontoggle], mglyph, input[onfocus]').length;
  return {xss: window.__xss, handlers, inserted, text: document.body.innerText};
}"""


@pytest.fixture
def corpus(transactional_db, live_server):
    corpus = Corpus()
    world = build_world(corpus)
    _bias_analysis_of_the_planted_pairs()
    return {"url": live_server.url, "corpus": corpus, "world": world}


def _bias_analysis_of_the_planted_pairs():
    """Gold labels of two classes on the NLI items, then the bias job, so that the bias
    page draws words of the planted hypotheses."""
    from annotation.models import Item, Job
    from annotation.tasks import run_job

    items = list(Item.objects.filter(project__slug=NLI, probe_of__isnull=True).order_by("pk"))
    for index, item in enumerate(items):
        Item.objects.filter(pk=item.pk).update(split="train", gold_label=("entailment", "neutral")[index % 2])
    job = Job.objects.create(kind="bias", project=items[0].project, params={"split": "train", "smoothing": 100.0})
    run_job(job.pk)
    assert Job.objects.get(pk=job.pk).status == "done"


def test_stored_payloads_never_run_and_show_literally(corpus, browser, settings):
    base, planted = corpus["url"], corpus["corpus"].planted
    assert len(planted) > 100 and {p for t in planted.values() for p in PAYLOADS if t.startswith(p)} == set(PAYLOADS)
    assert settings.CONTENT_SECURITY_POLICY and "unsafe" not in settings.CONTENT_SECURITY_POLICY
    failures = []
    from annotation.models import Annotation

    # The console's item pages of an NLI item and of a QA paragraph with its reviewed questions.
    item_pages = [f"/console/p/{slug}/items/{Annotation.objects.get(pk=corpus['world'].annotations[slug]['annotator']).item_id}/"
                  for slug in (NLI, QA)]  # fmt: skip
    pages = {**PAGES, "supervisor": PAGES["supervisor"] + item_pages, "reviewer": PAGES["reviewer"] + item_pages}
    for role, urls in pages.items():
        context = browser.new_context(locale="en-US", viewport={"width": 1280, "height": 900})
        context.set_default_timeout(15_000)
        page = context.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        login(page, base, USERNAMES[role])
        for url in urls:
            response = page.goto(base + url, wait_until="networkidle")
            where = f"{role} {url}"
            if response.status != 200:
                failures.append(f"{where}: status {response.status}")
                continue
            csp = response.headers.get("content-security-policy", "")
            if not all(part in csp for part in STRICT_CSP) or "unsafe" in csp:
                failures.append(f"{where}: weak or missing CSP {csp!r}")
            page.mouse.move(640, 450)  # hover handlers, had any been planted
            state = page.evaluate(_PAGE_STATE)
            if state["xss"] is not None or dialogs:
                failures.append(f"{where}: a payload ran (window.__xss={state['xss']!r}, dialogs={dialogs})")
            if state["handlers"] or state["inserted"]:
                failures.append(f"{where}: payload markup became elements: {state['handlers']} / {state['inserted']}")
            shown = [tag for tag in planted if tag in state["text"]]
            for tag in shown:
                if tag.endswith(tuple(f":{name}⟧" for name in MARKDOWN_FIELDS)) and "/settings/" not in url:
                    continue  # rendered markdown (the settings page's textarea holds it as typed)
                # The review page shows bidi controls as visible "U+202E" marks, on purpose.
                if planted[tag] not in state["text"] and planted[tag].replace(RLO, "U+202E") not in state["text"]:
                    at = state["text"].index(tag)
                    failures.append(f"{where}: {tag} not shown literally: {state['text'][max(0, at - 120) : at]!r}")
            if any(marker in url for marker in SHOWS_TEXT) and url != "/login/" and not shown:
                failures.append(f"{where}: shows none of the planted texts")
            dialogs.clear()
        context.close()
    assert failures == []
