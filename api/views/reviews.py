"""Review and feedback (docs/api.md "Review and feedback"; HeQ §3.3-3.4): pending reviews,
grading, and each user's feedback inbox. Thin: parse, call one service, render."""

from django.utils.translation import gettext
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import access
from annotation.errors import InvalidInput
from annotation.kinds.registry import installed_kind, installed_kinds
from annotation.rest.idempotency import idempotent_write
from annotation.rest.pagination import PageNumberPagination, page_of
from annotation.rest.parsers import body_of
from annotation.rest.schema import ERRORS
from annotation.selectors.names import names_visible, shown_name
from annotation.services import reviews
from annotation.services.reviews import GRADES


def _kinds_by_question() -> str:
    """The installed kinds whose annotations are graded question by question."""
    return ", ".join(kind.name for kind in installed_kinds() if kind.reviewed_by_question)


class ReviewRequestSerializer(serializers.Serializer):
    grade = serializers.ChoiceField(choices=GRADES)
    comment = serializers.CharField(
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        help_text="Free text, kept exactly as typed; reaches the annotator's inbox.",
    )
    question = serializers.IntegerField(
        required=False,
        min_value=0,
        help_text="",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields[
            "question"
        ].help_text = f"Index of the graded question; required for {_kinds_by_question()}, absent otherwise."


class ReviewSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    annotation = serializers.IntegerField(source="annotation_id")
    question = serializers.IntegerField(allow_null=True)
    grade = serializers.CharField()
    comment = serializers.CharField(trim_whitespace=False)
    reviewer = serializers.CharField(source="reviewer.username", default=None)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class PendingReviewSerializer(serializers.Serializer):
    annotation = serializers.IntegerField(source="pk")
    annotator = serializers.SerializerMethodField(
        help_text="the username to supervisors, the export's pseudonym to reviewers"
    )
    item = serializers.SerializerMethodField()
    value = serializers.DictField()
    created_at = serializers.DateTimeField()
    graded = serializers.SerializerMethodField(help_text="Question index → {grade, comment} graded so far.")

    def get_annotator(self, annotation) -> str:
        names = self.context.get("names", False)
        return shown_name(
            annotation.item.project_id, annotation.annotator_id, annotation.annotator.username, names=names
        )

    def get_item(self, annotation) -> dict:
        item = annotation.item
        kind = self.context.get("kind")
        return {
            "id": item.pk,
            "external_id": item.external_id,
            "payload": kind.review_payload(item.payload) if kind is not None else item.payload,
        }

    def get_graded(self, annotation) -> dict:
        return {str(index): entry for index, entry in annotation.graded.items()}


class FeedbackSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    project = serializers.CharField(source="project.slug")
    project_name = serializers.CharField(source="project.name")
    language = serializers.CharField(source="project.language")
    direction = serializers.CharField(source="project.direction")
    grade = serializers.SerializerMethodField()
    question = serializers.SerializerMethodField(help_text="Index of the graded question, if any.")
    question_text = serializers.SerializerMethodField(help_text="The graded question as the annotator wrote it.")
    item = serializers.SerializerMethodField(help_text="External id of the paragraph or item.")
    message = serializers.CharField(trim_whitespace=False, help_text="The reviewer's comment, exactly as typed.")
    read = serializers.SerializerMethodField()
    read_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()

    def get_grade(self, feedback) -> str | None:
        return feedback.review.grade if feedback.review else None

    def get_question(self, feedback) -> int | None:
        return feedback.review.question if feedback.review else None

    def get_question_text(self, feedback) -> str | None:
        review = feedback.review
        kind = installed_kind(feedback.project.kind)
        if review is None or review.question is None or kind is None or not kind.reviewed_by_question:
            return None
        questions = kind.review_questions(review.annotation.value)
        return questions[review.question].get("question") if 0 <= review.question < len(questions) else None

    def get_item(self, feedback) -> str | None:
        return feedback.review.annotation.item.external_id if feedback.review else None

    def get_read(self, feedback) -> bool:
        return feedback.read_at is not None


class PendingReviewsView(APIView):
    @extend_schema(
        summary="Annotations waiting for review (reviewers and supervisors)",
        parameters=[OpenApiParameter("page", int), OpenApiParameter("page_size", int)],
        responses={200: page_of("PendingReviewPage", PendingReviewSerializer), **ERRORS},
    )
    def get(self, request, slug):
        pending = reviews.annotations_pending_review(user=request.user, slug=slug)
        paginator = PageNumberPagination()
        page = paginator.paginate_queryset(pending, request, view=self)
        project = access.access_project_for_staff(request.user, slug)
        context = {"names": names_visible(request.user, project), "kind": installed_kind(project.kind)}
        return paginator.get_paginated_response(PendingReviewSerializer(page, many=True, context=context).data)


class ReviewView(APIView):
    @extend_schema(
        summary="Grade a question (or a whole annotation) with a comment",
        description=(
            f"Reviewers and supervisors of the annotation's project. `question` is required for {_kinds_by_question()}. "
            "Grading the same question again replaces the grade (200). The grade and comment reach the annotator "
            "in `GET /api/me/feedback/`."
        ),
        request=ReviewRequestSerializer,
        parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER)],
        responses={201: ReviewSerializer, 200: ReviewSerializer, **ERRORS},
    )
    @idempotent_write
    def post(self, request, annotation_id):
        data = body_of(request)
        unknown = set(data) - {"grade", "comment", "question"}
        if unknown:
            raise InvalidInput(
                gettext("unknown field(s); expected %(fields)s") % {"fields": "grade, comment, question"},
                field=sorted(map(str, unknown))[0],
            )
        review, created = reviews.review_create(
            user=request.user,
            annotation_id=annotation_id,
            grade=data.get("grade"),
            comment=data.get("comment", ""),
            question=data.get("question"),
        )
        return Response(
            ReviewSerializer(review).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )


class FeedbackListView(APIView):
    @extend_schema(
        summary="The caller's feedback inbox, newest first, with the unread count",
        parameters=[
            OpenApiParameter("page", int),
            OpenApiParameter("page_size", int),
            OpenApiParameter("unread", bool, description="Only unread messages."),
        ],
        responses={
            200: page_of(
                "FeedbackPage",
                FeedbackSerializer,
                unread=serializers.IntegerField(help_text="Unread messages in the whole inbox."),
            ),
            **ERRORS,
        },
    )
    def get(self, request):
        messages = reviews.feedback_list_for_user(request.user)
        if request.query_params.get("unread") in ("1", "true"):
            messages = messages.filter(read_at__isnull=True)
        paginator = PageNumberPagination(unread=reviews.feedback_unread_count(request.user))
        page = paginator.paginate_queryset(messages, request, view=self)
        return paginator.get_paginated_response(FeedbackSerializer(page, many=True).data)


class FeedbackReadView(APIView):
    @extend_schema(
        summary="Mark one of the caller's messages read", request=None, responses={200: FeedbackSerializer, **ERRORS}
    )
    def post(self, request, feedback_id):
        reviews.feedback_mark_read(user=request.user, feedback_id=feedback_id)
        feedback = reviews.feedback_list_for_user(request.user).get(pk=feedback_id)
        return Response(FeedbackSerializer(feedback).data)
