"""What the two rating kinds (translation rating, LCHAIM; summary rating, HeSum) share:
`raters_per_item` raters per item, and adaptive overlap that asks for one more rater while
two ratings of one candidate differ by more than `spread` points."""

from annotation.errors import InvalidInput

from .base import Kind
from .settings import between, check_overlap_settings


class RatingKind(Kind):
    """A kind whose annotators rate an item's candidates on a scale; `default_settings`
    holds `raters_per_item` and RATING_OVERLAP_SETTINGS."""

    def check_settings(self, settings: dict) -> None:
        if not 1 <= settings["raters_per_item"] <= 50:
            raise InvalidInput(between(1, 50), field="settings.raters_per_item")
        check_overlap_settings(settings)

    def votes_for(self, settings: dict, *, with_reference: bool) -> int:
        return settings["raters_per_item"]

    def wants_another_vote(self, item, settings: dict, submitted: int) -> bool:
        from annotation.services.aggregation import ratings_want_another_vote

        return ratings_want_another_vote(item, settings, submitted)
