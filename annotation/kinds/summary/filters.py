"""HeSum §3.1's import filters: the dataset left out articles that were not in Hebrew and
articles whose summary (the extended subheading) had 10 or fewer tokens. A summary project
applies both at import to the project's own language and reference system; each filter has
a setting that turns it off. Held-out rows are reported with their reason, never stored."""

from django.utils.translation import get_language_info
from django.utils.translation import gettext as _

from annotation.metrics.text import script_share

# HeSum kept summaries of more than 10 whitespace tokens.
MIN_REFERENCE_WORDS = 11
MIN_REFERENCE_WORDS_RANGE = (0, 1000)
# An article is in the project's language when at least half its letters are in its script.
LANGUAGE_SHARE = 0.5


def language_name(code: str) -> str:
    """The language's name in the interface language (Django's own translations)."""
    try:
        return str(get_language_info(code)["name_translated"])
    except KeyError:  # a language Django does not know: its English name
        from annotation.models import LANGUAGES

        return LANGUAGES.get(code, code)


def reference_words(payload: dict, reference_system: str) -> int | None:
    """Words (whitespace-separated tokens) of the reference system's summary, or None."""
    if not reference_system:
        return None
    for summary in payload.get("summaries") or []:
        if summary.get("system") == reference_system:
            return len(summary["text"].split())
    return None


def summary_hold_out(payload: dict, settings: dict, language: str) -> str | None:
    """Why an imported article is held out of a project in `language` with `settings`, or
    None to store it."""
    if settings["hold_out_other_language"]:
        share = script_share(payload["article"], language)
        if share is not None and share < LANGUAGE_SHARE:
            return _("the article is not in %(language)s") % {"language": language_name(language)}
    minimum = settings["min_reference_words"]
    words = reference_words(payload, settings["reference_system"]) if minimum else None
    if words is not None and words < minimum:
        return _("the reference summary has %(words)s words, fewer than %(minimum)s") % {
            "words": words,
            "minimum": minimum,
        }
    return None
