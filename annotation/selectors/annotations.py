"""Reads of an annotator's own annotations (the "previous" key of the annotate pages)."""

from django.db.models import Exists, OuterRef, QuerySet

from annotation.models import Annotation, Decision, Project, Review
from annotation.services.decisions import RANK_ROUND_RULE


def annotations_of_annotator(project: Project, user) -> QuerySet[Annotation]:
    """The caller's annotations in `project`, newest first, each with its item (and a probe's
    original, whose id the annotator saw), `reviewed` (a reviewer graded it) and
    `round_has_decision` (the item's current round is decided in the ledger): one query
    per page."""
    return (
        Annotation.objects.filter(item__project=project, annotator_id=user.pk)
        .select_related("item", "item__probe_of")
        .annotate(
            reviewed=Exists(Review.objects.filter(annotation=OuterRef("pk"))),
            round_has_decision=Exists(
                Decision.objects.filter(
                    item_id=OuterRef("item_id"), round=OuterRef("item__round"), rank__gte=RANK_ROUND_RULE
                )
            ),
        )
        .order_by("-created_at", "-id")
    )
