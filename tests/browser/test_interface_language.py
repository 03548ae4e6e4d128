"""Every page of the screenshot matrix, opened in the Hebrew and the Persian interface, shows
no interface text left in English, no code of the program and no JSON.

On each page the browser collects every visible text run (text nodes, the options of visible
selects, placeholders, and the values of visible text boxes), with folded sections opened,
and the test refuses a run that is:

- an interface string in English: equal to a msgid of the language's catalog whose
  translation differs (placeholders match any text), so a string rendered without gettext
  or sent by a script in English is caught; or holding a long such msgid (a sentence
  glued to another before translation, which evaluates it in English);
- a snake_case code (`claim_ttl`, `k_of_n`, `per_class.entailment.precision`);
- JSON: an object or a list, or the words null / true / false, or a "(JSON)" link;
- in the Persian interface, a number in Latin digits (counts, figures, dates, page numbers),
  figures isolated in <bdi dir="ltr"> included.

Allowed: item texts and other user text (inside an element that carries the project's
`lang`, or in <bdi>), and the label codes the papers define, shown only in <code
class="label-code">. The world and the pages are the screenshot matrix's
(tests/browser/page_matrix.py), at the desktop and the phone width (1366 and 390 px): a
phone layout shows other texts (menus folded, short labels), so both are walked."""

import re

import pytest

from tests.browser.page_matrix import PAGES, VIEWPORTS, role_pages, world
from tests.security.world import KIND_SLUGS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# The visible text of the page, run by run, with where each run is.
_COLLECT = r"""() => {
  document.querySelectorAll('details').forEach((d) => { d.open = true; });
  const runs = [];
  const describe = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (typeof el.className === 'string' && el.className ? '.' + el.className.trim().split(/\s+/).join('.') : '');
  const path = (el) => { const out = []; for (let n = el; n && n !== document.body && out.length < 4; n = n.parentElement) out.unshift(describe(n)); return out.join(' > '); };
  const allowed = (el) => {
    const holder = el.closest('[lang]');
    if (holder && holder !== document.documentElement) return true;  // item text, language names
    if (el.closest('bdi, code.label-code, [data-user-text]')) return true;
    return false;
  };
  const figure = (el) => {
    const holder = el.closest('[lang]');
    return el.closest('bdi[dir="ltr"]') && !(holder && holder !== document.documentElement) && !el.closest('code, [data-user-text]');
  };
  const visible = (el) => el.checkVisibility({visibilityProperty: true, opacityProperty: false});
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (!el || ['SCRIPT', 'STYLE', 'TEMPLATE', 'NOSCRIPT', 'OPTION', 'TEXTAREA'].includes(el.tagName)) continue;
    const value = node.data.replace(/\s+/g, ' ').trim();
    if (!value || !visible(el)) continue;
    if (allowed(el)) {
      // A figure isolated for direction is interface, for its digits only.
      if (figure(el)) runs.push({text: value, where: path(el), figure: true});
      continue;
    }
    runs.push({text: value, where: path(el)});
  }
  for (const el of document.querySelectorAll('select')) {
    if (!visible(el) || allowed(el)) continue;
    for (const option of el.options) runs.push({text: option.text.replace(/\s+/g, ' ').trim(), where: path(el) + ' option'});
  }
  for (const el of document.querySelectorAll('input, textarea')) {
    if (!visible(el) || allowed(el) || el.dir === 'auto' && el.lang) continue;
    if (el.placeholder) runs.push({text: el.placeholder.trim(), where: path(el) + '[placeholder]'});
    const type = (el.type || '').toLowerCase();
    if (el.tagName === 'TEXTAREA' || type === 'text' || type === 'number') {
      if (el.value.trim()) runs.push({text: el.value.trim(), where: path(el) + '[value]', value: true});
    }
  }
  for (const el of document.querySelectorAll('[title]')) {
    if (visible(el) && !allowed(el) && el.title.trim()) runs.push({text: el.title.trim(), where: path(el) + '[title]'});
  }
  return runs;
}"""

SNAKE = re.compile(r"(?<![\w-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w-])")
JSON_WORD = re.compile(r"(?<![\w-])(?:null|true|false)(?![\w-])")
JSON_LINK = re.compile(r"\(JSON\)")
JSON_SHAPE = re.compile(r"^\s*(?:\{.*\}|\[.*\])\s*$", re.S)
# Interfaces whose numbers are written in their own digits (Persian ۰-۹).
LATIN_DIGITS_REFUSED = {"fa"}
PLACEHOLDER = re.compile(r"%(?:\([^)]*\))?[sdif]|\{[a-z_]*\}")


# Catalog entries a language keeps as they are in English on purpose: the names of methods,
# measures, papers and formats, and the dataset's split names (also its files' names).
KEPT_AS_IN_ENGLISH = {
    "BERTScore", "Dawid-Skene", "FarsTail §1, §3.1", "FarsTail §3.1", "HeQ §3.1, §3.3", "Kappa",
    "Krippendorff's alpha", "LCHAIM §2.2", "MACE", "Macro F1", "PhrasIS (TSV)", "TLNLS", "dev", "test", "train",
}  # fmt: skip


def _english_strings(language: str):
    """The catalog's msgids whose translation differs, as exact strings and as patterns
    (for those with placeholders), and those "translated" as themselves (a word left in
    English in the catalog) unless kept so on purpose (KEPT_AS_IN_ENGLISH)."""
    from django.utils.translation import trans_real

    catalog = trans_real.translation(language)._catalog
    exact, patterns, long = set(), [], set()
    for key, translated in catalog.items():
        msgid = key if isinstance(key, str) else key[0]
        if not msgid or not re.search(r"[A-Za-z]{2}", msgid):
            continue
        if msgid == translated and (msgid in KEPT_AS_IN_ENGLISH or re.search(r"[\u0590-\u06ff]", msgid)):
            continue
        msgid = " ".join(msgid.split())
        if PLACEHOLDER.search(msgid):
            parts = PLACEHOLDER.split(msgid)
            if sum(len(p.strip()) for p in parts) >= 4:
                patterns.append(re.compile("^" + ".+?".join(re.escape(p) for p in parts) + "$"))
        else:
            exact.add(msgid)
            if len(msgid) >= 40:
                long.add(msgid)
    return exact, patterns, long


def _faults(run: dict, exact: set, patterns: list, long: set, language: str) -> list[str]:
    value = run["text"]
    faults = []
    # A form's value is what the person typed or the browser shows in its own digits.
    if language in LATIN_DIGITS_REFUSED and not run.get("value") and re.search(r"[0-9]", value):
        faults.append("Latin digits")
    if run.get("figure"):
        return faults
    if value in exact or value.rstrip(":.") in exact or any(p.match(value) for p in patterns):
        faults.append("English")
    elif len(value) >= 40 and any(msgid in value for msgid in long):
        faults.append("English inside")  # a sentence glued to another before it was translated
    if SNAKE.search(value):
        faults.append("code")
    if JSON_SHAPE.match(value) or JSON_WORD.search(value):
        faults.append("JSON")
    if JSON_LINK.search(value):
        faults.append("JSON link")  # the page shows the data; the API is documented apart
    return faults


# The width changes only what the style sheet shows, and that depends on the template,
# not on the kind's data: at the phone width the supervisor's pages every kind shares a
# template for (settings, items, item, audit log) are walked for one kind only, and each
# kind's project page (which kinds add sections to) for all. The full walk at 390 px took
# as long again as the desktop one (70-80 s a language); this subset 55 s.
PHONE_SHARED_PAGES_KIND = "nli_relabel"


def _every_page(viewport: str = "wide") -> list[tuple]:
    """The screenshot matrix's pages, and the supervisor's pages of every kind beside them:
    the project page, its settings, its items, the page of its most worked item and its
    audit log (at the phone width, the last four of one kind only); at the desktop width,
    also every page of its kind the project page links (tests/console/test_project_links.py)
    that the matrix does not walk for that kind already (the matrix holds one kind's); those
    are routes of the kind with the slug alone, some of them buttons that take a POST only,
    so their expected status is None: walked when they answer a GET, passed over when not."""
    from django.db.models import Count

    from annotation.models import Item, Project
    from tests.console.test_project_links import kind_pages

    pages = list(PAGES)
    for kind, slug in KIND_SLUGS.items():
        item = Item.objects.filter(project__slug=slug).annotate(n=Count("annotations")).order_by("-n", "pk").first()
        pages.append((f"project-{kind}", "supervisor", f"/p/{slug}/", 200))
        if viewport == "phone" and kind != PHONE_SHARED_PAGES_KIND:
            continue
        pages += [
            (f"settings-{kind}", "supervisor", f"/console/p/{slug}/settings/", 200),
            (f"items-{kind}", "supervisor", f"/console/p/{slug}/items/", 200),
            (f"item-{kind}", "supervisor", f"/console/p/{slug}/items/{item.pk}/", 200),
            (f"audit-{kind}", "supervisor", f"/p/{slug}/audit/", 200),
        ]
        if viewport == "wide":
            walked = {url for _, _, url, _ in pages}
            for url in kind_pages(Project.objects.get(slug=slug)):
                if url not in walked:
                    pages.append((f"{url.strip('/').split('/')[-1]}-{kind}", "supervisor", url, None))
    return pages


@pytest.mark.parametrize("viewport", ["wide", "phone"])
@pytest.mark.parametrize("language", ["he", "fa"])
def test_no_english_no_codes_no_json_on_any_page(world, role_pages, artifacts_dir, language, viewport):
    base = world["url"]
    exact, patterns, long = _english_strings(language)
    found = []
    pages = role_pages(language, VIEWPORTS[viewport])
    for name, role, url, status in _every_page(viewport):
        page = pages[role]
        if status is None and page.request.get(base + url, max_redirects=0).status == 405:
            continue  # a button's address (POST only)
        response = page.goto(base + url, wait_until="networkidle", timeout=60_000)
        assert response.status == (status or 200), f"{name}: status {response.status}"
        for run in page.evaluate(_COLLECT):
            for fault in _faults(run, exact, patterns, long, language):
                found.append(f"{language} {viewport} {name}: {fault}: {run['text'][:120]!r} at {run['where']}")
    pages.close()
    (artifacts_dir / f"interface-language-{language}-{viewport}.txt").write_text(
        "\n".join(found) + "\n", encoding="utf-8"
    )
    assert found == []
