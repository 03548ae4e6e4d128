"""What one rating of one summary is (HeSum §4, Table 4): the criteria and their scale, the
error tags with their display names, and the stored ratings read back in the file's order.
Shared by the kind's rules, its results and its pages."""

from typing import Any

from django.utils.translation import gettext_lazy as _

CRITERIA = ("coherence", "completeness")
MIN_SCORE, MAX_SCORE = 1, 5

# HeSum Table 4's phenomena, in the table's order. Ids are stable (they are stored in
# annotations); names are what the page and the results table show.
ERROR_TAG_NAMES = {
    "repetition": _("Repetition"),
    "copy_from_article": _("Copy from article"),
    "non_alphabetic_omission": _("Non-alphabetic omission"),
    "incorrect_disambiguation": _("Incorrect disambiguation"),
    "hallucination": _("Hallucination"),
    "culture_transfer": _("Culture transfer"),
    "incorrect_gender": _("Incorrect gender"),
    "incorrect_definite_construct": _("Incorrect definite (construct state)"),
}
# Table 4's "Explanation" column, shortened: a hint beside each checkbox.
ERROR_TAG_HINTS = {
    "repetition": _("The summary repeats itself, possibly with subtle changes."),
    "copy_from_article": _("The summary copies a section of the article."),
    "non_alphabetic_omission": _("A non-alphabetic mark is missing, such as the geresh in צ'חצ'חים."),
    "incorrect_disambiguation": _("A word of the article was read as a different word."),
    "hallucination": _("The summary states something the article does not, such as a person it never mentions."),
    "culture_transfer": _(
        "An assumption from English replaces the article's facts, such as a gender guessed from a name."
    ),
    "incorrect_gender": _("Gender inflection does not agree."),
    "incorrect_definite_construct": _("Definiteness is marked wrongly, e.g. on both words of a construct state."),
}
DEFAULT_ERROR_TAGS = list(ERROR_TAG_NAMES)


def tag_name(tag: str) -> str:
    """Display name of an error tag: Table 4's name for the defaults, the id otherwise."""
    name = ERROR_TAG_NAMES.get(tag)
    return str(name) if name is not None else tag


def stored_ratings(value: Any, order: list[int]):
    """(stored summary index, rating) pairs of an annotation value, mapping the display
    indices it is keyed by through the item's `order`. Malformed entries are skipped."""
    ratings = value.get("ratings") if isinstance(value, dict) else None
    if not isinstance(ratings, dict):
        return
    for key, rating in ratings.items():
        if not (isinstance(key, str) and key.isdigit() and key.isascii()) or not isinstance(rating, dict):
            continue
        display = int(key)
        if display < len(order):
            yield order[display], rating
