"""Reads of an annotator's own annotations (the "previous" key of the annotate pages)."""

from django.db.models import Exists, OuterRef, QuerySet

from annotation.models import Annotation, Project, Review


def annotations_of_annotator(project: Project, user) -> QuerySet[Annotation]:
    """The caller's annotations in `project`, newest first, each with its item (and a probe's
    original, whose id the annotator saw) and `reviewed` (a reviewer graded it): one query
    per page."""
    return (
        Annotation.objects.filter(item__project=project, annotator_id=user.pk)
        .select_related("item", "item__probe_of")
        .annotate(reviewed=Exists(Review.objects.filter(annotation=OuterRef("pk"))))
        .order_by("-created_at", "-id")
    )
