"""HeSum's two rating criteria (§4, human evaluation; appendix "Human Evaluation Details")
and its error categories (Table 4), in Mashov's words. The paper gives the criteria, not
the meaning of each point of its 1-5 Likert scale: the points are Mashov's wording."""

from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from annotation.guides import GuideEntry, GuideSection, scale

from .ratings import ERROR_TAG_HINTS, ERROR_TAG_NAMES

_SOURCE = _("HeSum §4 and its human evaluation appendix")
_POINTS = _("The paper names the criterion and a 1-5 Likert scale; the meaning of each point is Mashov's wording.")

SUMMARY_SCALES = (
    scale(
        "coherence",
        _("Coherence (1-5)"),
        _SOURCE,
        format_lazy(
            "{} {}",
            _(
                "Grammar and readability: the summary holds together (cohesion), does not contradict itself (consistency) and stays on its point (relevance)."
            ),
            _POINTS,
        ),
        (
            _("Ungrammatical or impossible to follow."),
            _("Hard to read; sentences do not connect."),
            _("Readable with noticeable breaks or slips."),
            _("Clear, with minor flaws."),
            _("Fluent and well organised throughout."),
        ),
    ),
    scale(
        "completeness",
        _("Completeness (1-5)"),
        _SOURCE,
        format_lazy("{} {}", _("How much of the article's main ideas the summary captures."), _POINTS),
        (
            _("Misses the article's point."),
            _("Captures a minor part only."),
            _("Captures some of the main ideas."),
            _("Captures most of the main ideas."),
            _("Captures all the essential information."),
        ),
    ),
)


def summary_guide(error_tags) -> tuple:
    """The scales and the error tags of a project (Table 4's, or its own tag ids)."""
    tags = GuideSection(
        "errors",
        _("Error tags"),
        _("HeSum Table 4"),
        tuple(GuideEntry(tag, ERROR_TAG_NAMES.get(tag, tag), ERROR_TAG_HINTS.get(tag, "")) for tag in error_tags),
        _("Tick every kind of error the summary shows, or none."),
    )
    return (*SUMMARY_SCALES, tags)
