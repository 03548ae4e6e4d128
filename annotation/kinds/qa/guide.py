"""How HeQ's authored questions are graded (§3.3), in Mashov's words: the four grades a
reviewer gives, shown to authors so they know what a good question is."""

from django.utils.translation import gettext_lazy as _

from annotation.guides import GuideEntry, GuideSection

QA_GUIDE = (
    GuideSection(
        "grade",
        _("How questions are graded"),
        _("HeQ §3.1, §3.3"),
        (
            GuideEntry(
                "rejected",
                _("rejected"),
                _(
                    "Below the bar: a grammar or meaning error, an unclear question, or one marked unanswerable that the paragraph does answer in part."
                ),
            ),
            GuideEntry(
                "verified", _("verified"), _("Acceptable but simple: worded much like the sentence that answers it.")
            ),
            GuideEntry(
                "good", _("good"), _("Worded differently from the answering sentence, in its words or its structure.")
            ),
            GuideEntry("gold", _("gold"), _("Needs some inference from the paragraph to answer.")),
        ),
        _("Write 3-5 varied questions per paragraph; mark the answer's exact span, or mark the question unanswerable."),
    ),
)
