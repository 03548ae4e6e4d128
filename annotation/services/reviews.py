"""Review and feedback (HeQ §3.3-3.4; docs/api.md "Review and feedback"), for every kind.

- A reviewer or supervisor grades an annotation — for a kind that is reviewed by question
  (`Kind.reviewed_by_question`: authored questions) each question on its own — rejected /
  verified / good / gold with an optional comment. The grade and comment land in the
  annotator's feedback inbox as one Feedback row per graded question. Grading the question
  again, or commenting after the grade, replaces the grade and comment and updates that one
  message (unread again, at the top of the inbox) instead of sending another.
- Pending reviews are the annotations marked `review_required` (the kind's `after_submit`
  decides, e.g. every one of trial and untrusted members and a sample of trusted ones)
  that still have an ungraded question."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction
from django.db.models import Count, F, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy as _l

from annotation import access
from annotation.errors import FieldError, InvalidInput, NotFound, PermissionDenied
from annotation.kinds.registry import get_kind
from annotation.models import Annotation, Feedback, Review
from annotation.rows import clean_comment
from annotation.services.aggregation import aggregation_request_on_commit
from annotation.wording import join_list

# The grades a reviewer gives, worst first (HeQ §3.3), and their names for people.
GRADES = tuple(Review.Grade.values)
GRADE_LABELS = {"rejected": _l("rejected"), "verified": _l("verified"), "good": _l("good"), "gold": _l("gold")}


def access_annotation_for_reviewer(user, annotation_id: int) -> Annotation:
    """The annotation if `user` reviews or supervises its project (NotFound for anyone who
    may not see it; PermissionDenied for the project's annotators)."""
    annotation = (
        Annotation.objects.select_related("item__project", "annotator").filter(pk=annotation_id).first()
        if isinstance(annotation_id, int)
        else None
    )
    if annotation is None:
        raise NotFound()
    access.access_project_for_staff(user, annotation.item.project.slug)
    return annotation


def review_create(*, user, annotation_id: int, grade, comment="", question=None) -> tuple[Review, bool]:
    """Grade one question (or a whole annotation for kinds without questions) and put the
    grade and comment in the annotator's inbox. Returns (review, created). The comment is kept
    exactly as typed. One transaction: the review and its feedback are stored together."""
    annotation = access_annotation_for_reviewer(user, annotation_id)
    if annotation.annotator_id == user.pk:
        raise PermissionDenied(_("You cannot review your own work."))
    errors = []
    if grade not in GRADES:
        errors.append(FieldError("grade", _("must be one of %(choices)s") % {"choices": join_list(GRADES)}))
    comment = clean_comment(comment, errors)
    project = annotation.item.project
    kind = get_kind(project.kind)
    if kind.reviewed_by_question:
        count = len(kind.review_questions(annotation.value))
        if question is None:
            errors.append(FieldError("question", _("is required: the index of the question being graded")))
        elif not isinstance(question, int) or isinstance(question, bool) or not 0 <= question < count:
            errors.append(FieldError("question", _("must be an index between 0 and %(last)s") % {"last": count - 1}))
    elif question is not None:
        errors.append(FieldError("question", _("is not used for this kind of project (grade the whole annotation)")))
    if errors:
        raise InvalidInput(_("invalid review"), errors=errors)
    with transaction.atomic():
        # Lock the annotation so two reviewers grading the same question queue up here.
        Annotation.objects.select_for_update().filter(pk=annotation.pk).first()
        existing = Review.objects.filter(annotation=annotation, question=question).first()
        created = existing is None
        if existing is None:
            changed = True
            review = Review.objects.create(
                annotation=annotation, question=question, grade=grade, comment=comment, reviewer=user
            )
        else:
            review = existing
            changed = review.grade != grade or review.comment != comment
            review.grade, review.comment, review.reviewer = grade, comment, user
            review.save(update_fields=["grade", "comment", "reviewer", "updated_at"])
        # One message per graded question: a regrade or a comment typed after the grade
        # updates it, and a change brings it back to the top of the inbox as unread.
        message = Feedback.objects.filter(review=review).order_by("-id").first()
        if message is None:
            Feedback.objects.create(
                recipient_id=annotation.annotator_id, project=project, review=review, message=comment
            )
        elif changed:
            Feedback.objects.filter(pk=message.pk).update(message=comment, read_at=None, created_at=timezone.now())
        if changed and kind.report_counted and not kind.labels:
            # The grade is in the kind's report: the worker keeps it by the graded item.
            aggregation_request_on_commit(project.pk, [annotation.item_id])
    return review, created


class PendingReviews(Sequence):
    """The annotations waiting for review, read a page at a time: len() is one count in
    the database, a slice one page of rows and their grades so far. Django's and DRF's
    paginators take it."""

    def __init__(self, queryset):
        self.queryset, self._count = queryset, None

    def __len__(self) -> int:
        if self._count is None:
            self._count = self.queryset.count()
        return self._count

    def __getitem__(self, index):
        if not isinstance(index, slice):
            return self[index : index + 1][0]
        page = list(self.queryset[index])
        graded: dict[int, dict] = {annotation.pk: {} for annotation in page}
        for annotation_id, question, grade, comment in Review.objects.filter(annotation_id__in=graded).values_list(
            "annotation_id", "question", "grade", "comment"
        ):
            graded[annotation_id][question] = {"grade": grade, "comment": comment}
        for annotation in page:
            annotation.graded = graded[annotation.pk]
        return page


def annotations_pending_review(*, user, slug: str) -> PendingReviews:
    """Annotations of the project waiting for review (oldest first): fewer reviews than the
    kind asks (one per question where `reviewed_by_question`, else one), each with `graded`
    = {question index: grade} of what is graded so far. Reviewers and supervisors. Chosen
    in the database and read a page at a time (PendingReviews): a fixed number of queries,
    however many annotations the project holds."""
    project = access.access_project_for_staff(user, slug)
    kind = get_kind(project.kind)
    reviewed = (
        Review.objects.filter(annotation=OuterRef("pk"))
        .order_by()
        .values("annotation")
        .annotate(n=Count("pk"))
        .values("n")
    )
    needed = kind.review_questions_count() if kind.reviewed_by_question else Value(1)
    pending = (
        Annotation.objects.filter(item__project=project, review_required=True)
        .annotate(n_reviews=Coalesce(Subquery(reviewed), 0), needed=needed)
        .filter(n_reviews__lt=F("needed"))
        .select_related("item", "annotator")
        .order_by("created_at", "id")
    )
    return PendingReviews(pending)


def feedback_list_for_user(user) -> QuerySet[Feedback]:
    """The caller's inbox, newest first, with what each message is about."""
    return (
        Feedback.objects.filter(recipient=user)
        .select_related("project", "review", "review__annotation", "review__annotation__item")
        .order_by("-created_at", "-id")
    )


def feedback_unread_count(user) -> int:
    return Feedback.objects.filter(recipient=user, read_at__isnull=True).count()


def feedback_mark_read(*, user, feedback_id: int) -> Feedback:
    """Mark one of the caller's messages read (idempotent: the first read time stays).
    Someone else's message is NotFound."""
    feedback = Feedback.objects.filter(pk=feedback_id, recipient=user).first()
    if feedback is None:
        raise NotFound()
    if feedback.read_at is None:
        feedback.read_at = timezone.now()
        feedback.save(update_fields=["read_at"])
    return feedback
