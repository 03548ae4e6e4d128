"""What the three NLI labels mean, in Mashov's words after FarsTail §1 (the three classes)
and §3.1 (how each hypothesis is made), for the annotate page's guide."""

from django.utils.translation import gettext_lazy as _

from annotation.guides import GuideEntry, GuideSection

NLI_LABEL_GUIDE = (
    GuideSection(
        "label",
        _("Labels"),
        _("FarsTail §1, §3.1"),
        (
            GuideEntry(
                "entailment",
                _("Entailment"),
                _(
                    "Someone who reads the premise would conclude that the hypothesis is true, using only the premise and what any speaker of the language knows (that USA means the United States, for example)."
                ),
            ),
            GuideEntry(
                "neutral",
                _("Neutral"),
                _(
                    "The premise neither makes the hypothesis true nor rules it out: from the premise alone its truth is unknown, even if it is about the same subject."
                ),
            ),
            GuideEntry(
                "contradiction",
                _("Contradiction"),
                _("If the premise is true, the hypothesis cannot be: the two cannot hold together."),
            ),
        ),
        _("Judge the pair from the premise alone, with common knowledge but not your own specialist knowledge."),
    ),
)
