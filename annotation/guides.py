"""Guidance shown on every annotate page: the project's guidelines (markdown written by its
supervisors, rendered safely) and the meaning of each label and of each point of every
scale, which each kind gives from its paper (`Kind.label_guide`) and a project may reword
(`Project.label_guide`: section key → value → text)."""

from dataclasses import dataclass, replace

import nh3
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext
from markdown_it import MarkdownIt

from annotation.errors import FieldError, InvalidInput
from annotation.metrics.text import forbidden_character
from annotation.wording import fault_text, join_list

# What the rendered guidelines may hold after sanitising: text structure, no media, no forms.
ALLOWED_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "s", "del", "code", "pre",
    "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td", "bdi",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "th": {"align"}, "td": {"align"}}
URL_SCHEMES = {"http", "https", "mailto"}
MAX_GUIDE_TEXT = 2_000

# CommonMark with tables and strikethrough; `html: False` turns raw HTML in the source into
# text, so nothing the author types becomes markup but what markdown itself produces.
_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(
    ["table", "strikethrough"]
)


def markdown_render(text: str) -> SafeString:
    """`text` (markdown) as HTML safe to put in a page: raw HTML is shown as text, links keep
    only http(s)/mailto targets and get rel="noopener nofollow", and the result goes through
    nh3's allow-list whatever the renderer produced."""
    html = _MARKDOWN.render(text or "")
    cleaned = nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel="noopener nofollow",
        strip_comments=True,
    )
    return mark_safe(cleaned)  # noqa: S308 - sanitised by nh3 just above


@dataclass(frozen=True)
class GuideEntry:
    """One label, or one point of a scale: `value` as stored in annotations, `name` as the
    page shows it, `meaning` in words."""

    value: str
    name: str
    meaning: str


@dataclass(frozen=True)
class GuideSection:
    """The labels of a kind, or one criterion's scale. `source` cites the paper's section
    the meanings are taken from ("" when the wording is Mashov's own)."""

    key: str
    title: str
    source: str
    entries: tuple[GuideEntry, ...]
    intro: str = ""


def scale(key: str, title: str, source: str, intro: str, meanings: tuple[str, ...]) -> GuideSection:
    """A 1-5 scale's section: `meanings` of the points 1..5 in order."""
    return GuideSection(
        key, title, source, tuple(GuideEntry(str(i), str(i), m) for i, m in enumerate(meanings, 1)), intro
    )


def guide_with_overrides(sections, overrides: dict | None) -> list[GuideSection]:
    """The kind's `sections` with a project's rewordings (section key → value → text) in place
    of the paper's meanings."""
    overrides = overrides or {}
    out = []
    for section in sections:
        own = overrides.get(section.key) or {}
        entries = tuple(
            GuideEntry(str(e.value), str(e.name), str(own[e.value]) if own.get(e.value) else str(e.meaning))
            for e in section.entries
        )
        out.append(
            replace(
                section, title=str(section.title), source=str(section.source), intro=str(section.intro), entries=entries
            )
        )
    return out


def label_guide_clean(value, sections) -> dict:
    """A project's rewordings, validated against the kind's `sections`: an object of section
    keys to objects of values to text (at most MAX_GUIDE_TEXT characters); "" drops one."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput(gettext("must be an object of sections"), field="label_guide")
    known = {section.key: {entry.value for entry in section.entries} for section in sections}
    errors, cleaned = [], {}
    for key, texts in value.items():
        if key not in known:
            errors.append(
                FieldError(
                    f"label_guide.{key}",
                    gettext("is not a section of this kind; known: %(known)s") % {"known": join_list(known) or "—"},
                )
            )
            continue
        if not isinstance(texts, dict):
            errors.append(FieldError(f"label_guide.{key}", gettext("must be an object of labels or points to text")))
            continue
        for entry, text in texts.items():
            field = f"label_guide.{key}.{entry}"
            if entry not in known[key]:
                errors.append(FieldError(field, gettext("is not a label or point of %(section)s") % {"section": key}))
            elif not isinstance(text, str):
                errors.append(FieldError(field, gettext("must be a string")))
            elif reason := forbidden_character(text):
                errors.append(FieldError(field, fault_text(reason)))
            elif len(text) > MAX_GUIDE_TEXT:
                errors.append(FieldError(field, gettext("is longer than %(n)s characters") % {"n": MAX_GUIDE_TEXT}))
            elif text:
                cleaned.setdefault(key, {})[entry] = text
    if errors:
        raise InvalidInput(gettext("invalid label guide"), errors=errors)
    return cleaned
