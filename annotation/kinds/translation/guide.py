"""LCHAIM's three rating criteria and its label-validity question (§2.2), in Mashov's words.
The paper anchors only the ends of each 1-5 scale (5 the best, 1 the worst); the middle
points are Mashov's wording, stated as such in the guide's introduction."""

from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from annotation.guides import GuideEntry, GuideSection, scale

_SOURCE = _("LCHAIM §2.2")
_MIDDLE = _("LCHAIM defines 5 as the highest quality and 1 as the lowest; the points between are Mashov's wording.")

TRANSLATION_GUIDE = (
    scale(
        "accuracy",
        _("Accuracy (1-5)"),
        _SOURCE,
        format_lazy("{} {}", _("How precisely the translation carries the English source's meaning."), _MIDDLE),
        (
            _("The meaning is lost or wrong."),
            _("Major parts are mistranslated."),
            _("The main meaning survives; several details are wrong or missing."),
            _("Faithful except for small slips."),
            _("Exactly the source's meaning."),
        ),
    ),
    scale(
        "fluency",
        _("Fluency (1-5)"),
        _SOURCE,
        format_lazy("{} {}", _("How natural and coherent the translated premise and hypothesis read."), _MIDDLE),
        (
            _("Not readable as the target language."),
            _("Hard to read; broken grammar."),
            _("Understandable, but clearly translated."),
            _("Natural with a few awkward spots."),
            _("Reads as if written in the target language."),
        ),
    ),
    scale(
        "cultural_fit",
        _("Cultural fit (1-5)"),
        _SOURCE,
        format_lazy(
            "{} {}", _("How well the translation keeps the source's cultural nuances and suits its readers."), _MIDDLE
        ),
        (
            _("Inappropriate or misleading for its readers."),
            _("Several references would confuse its readers."),
            _("Acceptable, with foreign references left unexplained."),
            _("Appropriate with minor lapses."),
            _("Fully appropriate for its readers."),
        ),
    ),
    GuideSection(
        "label_valid",
        _("Label still valid"),
        _SOURCE,
        (
            GuideEntry(
                "yes",
                _("Yes"),
                _(
                    "The original label (entailment, neutral, contradiction) still holds between the translated premise and hypothesis."
                ),
            ),
            GuideEntry(
                "no", _("No"), _("The translation changed the relation, so the original label no longer holds.")
            ),
        ),
    ),
)
