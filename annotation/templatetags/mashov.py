"""People's words for the codes that pages show: project kinds (each kind names itself), item, member
and job statuses, agreement scopes, levels of measurement, criteria and labels, each in the
interface language. A code without a name here is shown as it is (a label a project defined,
a system name), never as a Python structure.

    {% load mashov %}
    {{ project.kind|kind_name }}  {{ report.scope|scope_name }}  {{ report.level|level_name }}
"""

from django import template
from django.utils.translation import get_language_info
from django.utils.translation import gettext_lazy as _

from annotation.kinds.registry import installed_kind, job_titles
from annotation.stored_text import translated_text
from annotation.wording import join_list

register = template.Library()

STATUSES = {
    # items
    "open": _("open"),
    "complete": _("complete"),
    "accepted": _("accepted"),
    "needs_revision": _("needs revision"),
    "removed": _("removed"),
    "failed": _("failed"),
    "deciding": _("deciding"),
    # members
    "active": _("active"),
    "trial": _("trial"),
    "disqualified": _("disqualified"),
    # jobs
    "queued": _("queued"),
    "running": _("running"),
    "done": _("done"),
    "total": _("total"),  # the row under the status counts
}
JOB_KINDS = {
    "import": _("import"),
    "agreement": _("agreement"),
    "sample": _("sample"),
}
LEVELS = {
    "nominal": _("nominal"),
    "ordinal": _("ordinal"),
    "interval": _("interval"),
    "ratio": _("ratio"),
}
# Criteria, labels and the other words agreement scopes and tables are made of.
WORDS = {
    "accuracy": _("accuracy"),
    "fluency": _("fluency"),
    "cultural_fit": _("cultural fit"),
    "label_valid": _("label still holds"),
    "coherence": _("coherence"),
    "completeness": _("completeness"),
    "entailment": _("entailment"),
    "neutral": _("neutral"),
    "contradiction": _("contradiction"),
    "EQUIVALENT": _("equivalent"),
    "FORWARD": _("forward entailment"),
    "BACKWARD": _("backward entailment"),
    "OPPOSITION": _("opposition"),
    "SIMILAR": _("similar"),
    "RELATED": _("related"),
    "UNRELATED": _("unrelated"),
    # strata of the translation sample
    "split": _("split"),
    "group": _("group"),
    "label": _("label"),
    "all": _("all"),
    # review grades
    "rejected": _("rejected"),
    "verified": _("verified"),
    "good": _("good"),
    "gold": _("gold"),
    # dataset splits: the papers name them train, dev and test, and so do the translations
    "train": _("train"),
    "dev": _("dev"),
    "test": _("test"),
}
# The fields of an item's payload, as the import files name them.
FIELDS = {
    "premise": _("premise"),
    "hypothesis": _("hypothesis"),
    "context": _("paragraph"),
    "title": _("title"),
    "question": _("question"),
    "questions": _("questions"),
    "answer": _("answer"),
    "source": _("source text"),
    "text": _("text"),
    "article": _("article"),
    "summary": _("summary"),
    "label": _("label"),
    "left": _("first phrase"),
    "right": _("second phrase"),
    "choices": _("choices"),
    "answer_index": _("correct choice"),
    "candidates": _("candidates"),
    "summaries": _("summaries"),
    "system": _("system"),
    "split": _("split"),
    "extra": _("other fields"),
    "answerable": _("answerable"),
    "start": _("start"),
    "ratings": _("ratings"),
    "display_order": _("display order"),
}
# The order of a scope's parts: who or what first, then the criterion.
SCOPE_ORDER = ("system", "source", "round", "criterion", "label")


def _name_in(table: dict):
    """A filter naming a code by `table` in the interface language; other values unchanged."""

    def name(code):
        return str(table[code]) if isinstance(code, str) and code in table else code

    return name


status_name = register.filter("status_name", _name_in(STATUSES))


@register.filter(name="join_list")
def join_list_filter(items) -> str:
    """A list joined with the active language's separator ("، " in Persian)."""
    return join_list(items)


@register.filter
def job_kind_name(code):
    """A job's kind in people's words: the core's jobs here, a kind's own jobs as the kind
    names them (`Kind.job_titles`); other codes unchanged."""
    title = JOB_KINDS.get(code) if isinstance(code, str) else None
    if title is None and isinstance(code, str):
        title = job_titles().get(code)
    return str(title) if title is not None else code


level_name = register.filter("level_name", _name_in(LEVELS))
word = register.filter("word", _name_in(WORDS))  # a criterion or label
field_name = register.filter("field_name", _name_in(FIELDS))  # a key of an item's payload


@register.filter
def path_name(path) -> str:
    """A dotted path into an item's payload in people's words: "questions.0.answer" reads
    "questions › 1 › answer" (positions counted from one)."""
    parts = []
    for part in str(path).split("."):
        parts.append(str(int(part) + 1) if part.isdigit() else str(field_name(word(part))))
    return " › ".join(parts)


# A stored value's JSON scalars and empty containers in people's words.
LEAF_VALUES = {"true": _("yes"), "false": _("no"), "null": "—", "[]": "—", "{}": "—"}


@register.filter
def leaf_value(text) -> str:
    """One leaf of a stored value (`value_leaves`) as a person reads it: yes/no for
    booleans, a dash for nothing, a label's name for its code; any other text unchanged."""
    if text in LEAF_VALUES:
        return str(LEAF_VALUES[text])
    return str(word(text))


@register.filter
def kind_name(code):
    """A project kind's name for people (`Kind.short_title`); a kind that is not installed
    is shown by its code."""
    kind = installed_kind(code) if isinstance(code, str) else None
    return str(kind.short_title) if kind is not None else code


@register.filter
def language_name(code) -> str:
    """A project language's name in the interface language ("Hebrew", "עברית", "عبری")."""
    try:
        return str(get_language_info(code)["name_translated"])
    except KeyError:
        return code


def scope_parts(scope) -> list[str]:
    """A stored agreement scope ({"system": "A", "criterion": "accuracy"}) as its parts in
    people's words, in SCOPE_ORDER: ["A", "accuracy"]. "all" of a part reads "all …".

    >>> from django.utils import translation
    >>> with translation.override("en"):
    ...     scope_parts({"criterion": "accuracy", "system": "system A"})
    ['system A', 'accuracy']
    """
    if not isinstance(scope, dict):
        return [str(scope)]
    keys = sorted(scope, key=lambda k: (SCOPE_ORDER.index(k) if k in SCOPE_ORDER else len(SCOPE_ORDER), k))
    parts = []
    for key in keys:
        value = scope[key]
        if key == "round":
            parts.append(str(_("All rounds")) if value == "all" else str(_("Round %(round)s") % {"round": value}))
        elif value == "all":
            parts.append(str(_("all criteria")) if key == "criterion" else str(_("all")))
        else:
            parts.append(str(word(str(value))))
    return parts


@register.filter
def scope_name(scope) -> str:
    """A scope as one line, its parts joined by " · "."""
    return " · ".join(scope_parts(scope))


@register.filter
def stored_text(text):
    """A sentence the worker stored in English (a failed release's reason), in the page's
    language (annotation.stored_text)."""
    return translated_text(text) if isinstance(text, str) else text
