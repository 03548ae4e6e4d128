"""Reads of an annotator's own annotations (the "previous" key of the annotate pages)."""

from django.db.models import Exists, OuterRef, QuerySet

from annotation.models import Annotation, Decision, Project, Review
from annotation.services.decisions import CURATION_METHODS, RANK_ROUND_RULE, RESTORE


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
                # A curation removal and its restore decide no votes (a removed item is
                # decided by its status).
                Decision.objects.filter(
                    item_id=OuterRef("item_id"), round=OuterRef("item__round"), rank__gte=RANK_ROUND_RULE
                ).exclude(method__in=(*CURATION_METHODS, RESTORE))
            ),
        )
        .order_by("-created_at", "-id")
    )
