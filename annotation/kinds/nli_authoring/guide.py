"""What each text an NLI author writes must be, in Mashov's words after FarsTail §3.1 (the
steps of turning a multiple-choice question into three premise-hypothesis pairs)."""

from django.utils.translation import gettext_lazy as _

from annotation.guides import GuideEntry, GuideSection

AUTHORING_GUIDE = (
    GuideSection(
        "texts",
        _("What to write"),
        _("FarsTail §3.1"),
        (
            GuideEntry(
                "entailment",
                _("Entailment hypothesis"),
                _("The question turned into a statement with the correct answer in it."),
            ),
            GuideEntry(
                "premise",
                _("Premise"),
                _("A passage found on the web from which the entailment hypothesis can be concluded."),
            ),
            GuideEntry(
                "contradiction",
                _("Contradiction hypothesis"),
                _(
                    "The question made into a statement with a wrong answer; about as long as the entailment hypothesis, but built with other words and another structure."
                ),
            ),
            GuideEntry(
                "neutral",
                _("Neutral hypothesis"),
                _("A sentence from the web close to the question's subject whose truth the premise does not settle."),
            ),
        ),
    ),
)
