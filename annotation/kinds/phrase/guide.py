"""The seven phrase-pair labels, in Mashov's words after fine-grained-nli-coherence appendix
A.1 (the PhrasIS inference labels) and §3 (what reversing a pair does to its label)."""

from django.utils.translation import gettext_lazy as _

from annotation.guides import GuideEntry, GuideSection

PHRASE_LABEL_GUIDE = (
    GuideSection(
        "label",
        _("Labels"),
        _("fine-grained-nli-coherence appendix A.1"),
        (
            GuideEntry("EQUIVALENT", "EQUIVALENT", _("The two phrases say the same thing.")),
            GuideEntry(
                "FORWARD",
                "FORWARD",
                _(
                    'The left phrase entails the right one: its meaning includes the right one\'s ("women" entails "woman"; "everyone" entails "someone").'
                ),
            ),
            GuideEntry(
                "BACKWARD", "BACKWARD", _("The right phrase entails the left one: FORWARD with the sides swapped.")
            ),
            GuideEntry(
                "OPPOSITION", "OPPOSITION", _("The phrases cannot both hold: an inherent either-or, such as antonyms.")
            ),
            GuideEntry(
                "SIMILAR",
                "SIMILAR",
                _("Both belong to the same semantic class without being equivalent, entailed or opposed."),
            ),
            GuideEntry(
                "RELATED", "RELATED", _("A weaker meaningful link that is not strong enough to call them similar.")
            ),
            GuideEntry("UNRELATED", "UNRELATED", _("No semantic relation between the phrases.")),
        ),
        _(
            "Quantifiers run against intuition: the more general phrase is the one entailed. Order matters for FORWARD and BACKWARD only."
        ),
    ),
)
