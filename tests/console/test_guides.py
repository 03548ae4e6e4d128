"""Guidelines markdown rendered safely, and the label guides the kinds give from their
papers, shown on every annotate page with a project's own wording in place."""

import re
from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.guides import ALLOWED_ATTRIBUTES, ALLOWED_TAGS, markdown_render
from tests.security.test_xss_pages import PAYLOADS


class Elements(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, dict(attrs)))


def elements(html: str) -> list[tuple[str, dict]]:
    parser = Elements()
    parser.feed(html)
    return parser.found


def assert_safe(html: str) -> None:
    for tag, attrs in elements(html):
        assert tag in ALLOWED_TAGS, tag
        assert set(attrs) <= ALLOWED_ATTRIBUTES.get(tag, set()) | ({"rel"} if tag == "a" else set()), (tag, attrs)
        if tag == "a":
            assert attrs["href"].split(":", 1)[0].lower() in ("http", "https", "mailto"), attrs
            assert attrs["rel"] == "noopener nofollow"


MARKDOWN_ATTACKS = [
    "[x](javascript:alert(1))",
    "[x](JaVaScRiPt:alert(1))",
    "[x](&#106;avascript:alert(1))",
    "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[x](vbscript:msgbox(1))",
    "![x](javascript:alert(1))",
    '![x](https://example.org/a.png "onerror=alert(1)")',
    "<javascript:alert(1)>",
    "[x]: javascript:alert(1)\n\n[x]",
    "<div onclick=alert(1)>x</div>",
    "```\n</code><script>alert(1)</script>\n```",
    "`<img src=x onerror=alert(1)>`",
    "| <script>alert(1)</script> | b |\n|---|---|\n| 1 | 2 |",
]


@pytest.mark.parametrize("text", PAYLOADS + MARKDOWN_ATTACKS)
def test_xss_corpus_renders_to_allowed_markup_only(text):
    html = str(markdown_render(text))
    assert_safe(html)
    assert "<script" not in html.lower() and "javascript:" not in "".join(str(a) for _t, a in elements(html)).lower()


def test_raw_html_is_shown_as_text_and_links_get_rel():
    html = str(markdown_render('<b>bold</b> [site](https://example.org "t") **strong**'))
    assert "&lt;b&gt;bold&lt;/b&gt;" in html
    assert '<a href="https://example.org" title="t" rel="noopener nofollow">site</a>' in html
    assert "<strong>strong</strong>" in html


def test_hebrew_markdown_keeps_its_text():
    text = "# הנחיות\n\n- קראו את **הטקסט** עד הסוף\n- תוויות: `entailment`"
    html = str(markdown_render(text))
    assert "<h1>הנחיות</h1>" in html and "<strong>הטקסט</strong>" in html and "<code>entailment</code>" in html


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("<>[]()!\"'`=:/&#;*_~|- \nabjsvcriptonerl0123456789אבג")), max_size=200))
def test_any_text_renders_to_allowed_markup_only(text):
    assert_safe(str(markdown_render(text)))


# --- the kinds' label guides -------------------------------------------------------------------


def _guide(kind_name, **kwargs):
    from annotation.kinds.registry import get_kind

    return {section.key: section for section in get_kind(kind_name).label_guide("en", **kwargs)}


def test_each_kind_names_what_its_annotators_choose_with_a_cited_source():
    from annotation.kinds.nli.labels import LABELS as NLI_LABELS
    from annotation.kinds.summary.ratings import DEFAULT_ERROR_TAGS
    from annotation.metrics.coherence import LABELS as PHRASE_LABELS

    assert [e.value for e in _guide("nli_relabel")["label"].entries] == list(NLI_LABELS)
    assert [e.value for e in _guide("label_test")["label"].entries] == list(NLI_LABELS)
    assert [e.value for e in _guide("phrase_pair")["label"].entries] == list(PHRASE_LABELS)
    translation = _guide("translation_rating")
    assert list(translation) == ["accuracy", "fluency", "cultural_fit", "label_valid"]
    assert all(
        [e.value for e in translation[c].entries] == ["1", "2", "3", "4", "5"]
        for c in ("accuracy", "fluency", "cultural_fit")
    )
    summary = _guide("summary_rating")
    assert [e.value for e in summary["errors"].entries] == DEFAULT_ERROR_TAGS
    assert [e.value for e in summary["coherence"].entries] == ["1", "2", "3", "4", "5"]
    # A project's own error tags are what its guide lists.
    assert [e.value for e in _guide("summary_rating", settings={"error_tags": ["typo"]})["errors"].entries] == ["typo"]
    for kind in ("nli_relabel", "phrase_pair", "translation_rating", "summary_rating", "qa_authoring", "nli_authoring"):
        for section in _guide(kind).values():
            assert section.source and all(
                e.meaning for e in section.entries if section.key != "errors" or e.value in DEFAULT_ERROR_TAGS
            ), (kind, section.key)


@pytest.mark.django_db
def test_annotate_page_shows_guidelines_and_label_meanings_with_the_projects_wording(
    nli_project, client_for, django_user_model
):
    from django.test import Client

    sup = client_for(django_user_model.objects.get(username="sup"))
    body = {
        "guidelines": "## כללים\n\n<script>alert(1)</script> [קישור](https://example.org)",
        "label_guide": {"label": {"neutral": "ניסוח של הפרויקט"}},
    }
    assert sup.patch("/api/projects/fa-nli/", body, format="json").status_code == 200
    client = Client()
    client.force_login(django_user_model.objects.get(username="ann1"))
    page = client.get("/p/fa-nli/annotate/").content.decode()
    assert 'id="guide"' in page and "<h2>כללים</h2>" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert 'rel="noopener nofollow"' in page
    assert "ניסוח של הפרויקט" in page  # the project's wording for neutral
    assert "If the premise is true, the hypothesis cannot be" in page  # the paper's for contradiction
    assert "FarsTail §1, §3.1" in page


@pytest.mark.parametrize("language", ["he", "fa"])
@pytest.mark.parametrize("kind_name", ["translation_rating", "summary_rating"])
def test_criterion_introductions_are_in_the_guides_language(kind_name, language):
    """An introduction made of two sentences is translated as two: joining translatable
    strings with + evaluates them at import, in English."""
    from django.utils import translation

    from annotation.kinds.registry import get_kind

    with translation.override("en"):  # the kind's modules are imported in English, as at start-up
        get_kind(kind_name).label_guide("en")
    with translation.override(language):
        intros = [str(section.intro) for section in get_kind(kind_name).label_guide(language) if section.intro]
    assert intros
    for intro in intros:
        assert not re.search(r"[A-Za-z]{4,} [a-z]{3,} [a-z]{3,}", intro), intro
