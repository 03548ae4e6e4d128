"""HeQ's review-and-feedback loop, question validation and the question export (docs/api.md
"Review and feedback"; HeQ §3.3-3.4). Thin: parse, call one service, render."""

from django.http import StreamingHttpResponse
from django.utils.http import content_disposition_header
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import access
from annotation.errors import InvalidInput
from annotation.rest.idempotency import idempotent, idempotent_write
from annotation.rest.negotiation import JsonErrorsNegotiation
from annotation.rest.pagination import PageNumberPagination, page_of
from annotation.rest.parsers import body_of
from annotation.rest.schema import ERRORS
from annotation.rest.serializers import AnnotatorItemSerializer, ErrorsSerializer
from annotation.selectors.names import names_visible, shown_name

from . import reviews as review_services
from . import validation as validation_services
from .formats import export_questions_stream
from .questions import GRADES, SPLITS

# --- shapes (OpenAPI) ---------------------------------------------------------------------------


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
        help_text="Index of the graded question; required for qa_authoring, absent otherwise.",
    )


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
        return {
            "id": item.pk,
            "external_id": item.external_id,
            "payload": {"context": item.payload.get("context", ""), "title": item.payload.get("title", "")}
            if "context" in item.payload
            else item.payload,
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
        if review is None or review.question is None:
            return None
        questions = review.annotation.value.get("questions") if isinstance(review.annotation.value, dict) else None
        if (
            isinstance(questions, list)
            and 0 <= review.question < len(questions)
            and isinstance(questions[review.question], dict)
        ):
            return questions[review.question].get("question")
        return None

    def get_item(self, feedback) -> str | None:
        return feedback.review.annotation.item.external_id if feedback.review else None

    def get_read(self, feedback) -> bool:
        return feedback.read_at is not None


class ValidationNextSerializer(serializers.Serializer):
    annotation = serializers.IntegerField(
        allow_null=True, help_text="The authored question's annotation; null for a question of the imported file."
    )
    question = serializers.IntegerField(
        help_text="Index of the question within the annotation (or within the imported paragraph)."
    )
    question_key = serializers.CharField(
        allow_null=True,
        help_text="The imported question's id (send it back with `item`); null for an authored question.",
    )
    question_text = serializers.CharField(trim_whitespace=False)
    item = AnnotatorItemSerializer(help_text="The paragraph (context, title) — never the existing answers.")
    remaining = serializers.IntegerField(help_text="Questions still open to the caller, this one included.")


class SpanSerializer(serializers.Serializer):
    start = serializers.IntegerField(
        help_text="Code points into the stored paragraph. Both edges fall between whole characters (extended "
        "grapheme clusters: a letter with its niqqud, an emoji sequence); a blank span is refused."
    )
    text = serializers.CharField(trim_whitespace=False, help_text="Must equal the paragraph's slice at start.")


class ValidationRequestSerializer(serializers.Serializer):
    annotation = serializers.IntegerField(
        required=False, help_text="An authored question: its annotation, with `question`."
    )
    question = serializers.IntegerField(required=False, help_text="Index of the authored question.")
    item = serializers.IntegerField(
        required=False, help_text="A question of the imported file: its paragraph, with `question_key`."
    )
    question_key = serializers.CharField(required=False, trim_whitespace=False, help_text="The imported question's id.")
    answerable = serializers.BooleanField()
    answer = SpanSerializer(allow_null=True, help_text="Null when the validator finds the question unanswerable.")


class ValidationSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    annotation = serializers.IntegerField(source="annotation_id", allow_null=True)
    item = serializers.IntegerField(source="item_id", allow_null=True)
    question = serializers.IntegerField()
    question_key = serializers.CharField(allow_null=True, trim_whitespace=False)
    answer = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()

    def to_representation(self, validation):
        data = super().to_representation(validation)
        if validation.item_id is None:
            data["question_key"] = None
        return data

    def get_answer(self, validation) -> dict | None:
        if validation.answer_start is None:
            return None
        return {"start": validation.answer_start, "text": validation.answer_text}


# --- views ------------------------------------------------------------------------------------


class PendingReviewsView(APIView):
    @extend_schema(
        summary="Annotations waiting for review (reviewers and supervisors)",
        parameters=[OpenApiParameter("page", int), OpenApiParameter("page_size", int)],
        responses={200: page_of("PendingReviewPage", PendingReviewSerializer), **ERRORS},
    )
    def get(self, request, slug):
        pending = review_services.annotations_pending_review(user=request.user, slug=slug)
        paginator = PageNumberPagination()
        page = paginator.paginate_queryset(pending, request, view=self)
        names = names_visible(request.user, access.access_project_for_staff(request.user, slug))
        return paginator.get_paginated_response(PendingReviewSerializer(page, many=True, context={"names": names}).data)


class ReviewView(APIView):
    @extend_schema(
        summary="Grade a question (or a whole annotation) with a comment",
        description=(
            "Reviewers and supervisors of the annotation's project. `question` is required for qa_authoring. "
            "Grading the same question again replaces the grade (200). The grade and comment reach the annotator "
            "in `GET /api/me/feedback/`."
        ),
        request=ReviewRequestSerializer,
        parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER)],
        responses={201: ReviewSerializer, 200: ReviewSerializer, **ERRORS},
    )
    def post(self, request, annotation_id):
        def produce():
            data = body_of(request)
            unknown = set(data) - {"grade", "comment", "question"}
            if unknown:
                raise InvalidInput(
                    "unknown field; expected grade, comment, question", field=sorted(map(str, unknown))[0]
                )
            review, created = review_services.review_create(
                user=request.user,
                annotation_id=annotation_id,
                grade=data.get("grade"),
                comment=data.get("comment", ""),
                question=data.get("question"),
            )
            return Response(
                ReviewSerializer(review).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
            )

        return idempotent(request, produce)


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
        messages = review_services.feedback_list_for_user(request.user)
        if request.query_params.get("unread") in ("1", "true"):
            messages = messages.filter(read_at__isnull=True)
        paginator = PageNumberPagination(unread=review_services.feedback_unread_count(request.user))
        page = paginator.paginate_queryset(messages, request, view=self)
        return paginator.get_paginated_response(FeedbackSerializer(page, many=True).data)


class FeedbackReadView(APIView):
    @extend_schema(
        summary="Mark one of the caller's messages read", request=None, responses={200: FeedbackSerializer, **ERRORS}
    )
    def post(self, request, feedback_id):
        review_services.feedback_mark_read(user=request.user, feedback_id=feedback_id)
        feedback = review_services.feedback_list_for_user(request.user).get(pk=feedback_id)
        return Response(FeedbackSerializer(feedback).data)


class ValidationNextView(APIView):
    @extend_schema(
        summary="A dev/test question for the caller to answer blind",
        description=(
            "Validators are reviewers, supervisors and active annotators of the project; never the question's author. "
            "Questions authored in Mashov (`annotation` + `question`) and questions of the imported file (`item.id` + "
            "`question_key`, `annotation` null) in the splits of settings.validate_splits, each until it has "
            "settings.validators_per_question answers. The response carries the paragraph and the question only — "
            "not the existing answers nor whether the question is answerable. 204 when nothing is left."
        ),
        responses={
            200: ValidationNextSerializer,
            204: OpenApiResponse(description="nothing left to validate"),
            **ERRORS,
        },
    )
    def get(self, request, slug):
        found = validation_services.validation_next_for_user(user=request.user, slug=slug)
        if found is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(found)


class ValidationSubmitView(APIView):
    @extend_schema(
        summary="Store the caller's own answer to a question (extra gold span)",
        description=(
            "`answer.start` counts code points of the stored paragraph and `answer.text` must equal that slice; "
            "`answer` is null when `answerable` is false. Name an authored question with `annotation` + `question` "
            "or an imported one with `item` + `question_key` (not both). A 409 for a question the queue would not serve: "
            "outside settings.validate_splits, rejected, already answered by the caller, or already answered by "
            "settings.validators_per_question validators."
        ),
        request=ValidationRequestSerializer,
        parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER)],
        responses={201: ValidationSerializer, 409: ErrorsSerializer, **ERRORS},
    )
    @idempotent_write
    def post(self, request):
        data = body_of(request)
        unknown = set(data) - {"annotation", "question", "item", "question_key", "answerable", "answer"}
        if unknown:
            raise InvalidInput(
                "unknown field; expected annotation, question, item, question_key, answerable, answer",
                field=sorted(map(str, unknown))[0],
            )
        validation = validation_services.validation_submit(
            user=request.user,
            annotation_id=data.get("annotation"),
            question=data.get("question"),
            item_id=data.get("item"),
            question_key=data.get("question_key"),
            answerable=data.get("answerable"),
            answer=data.get("answer"),
        )
        return Response(ValidationSerializer(validation).data, status=status.HTTP_201_CREATED)


class QuestionExportView(APIView):
    renderer_classes = [JSONRenderer]
    content_negotiation_class = JsonErrorsNegotiation

    @extend_schema(
        summary="Export authored and imported questions (SQuAD v2 in HeQ's v1.1 shape, or JSONL)",
        description=(
            "Supervisors and reviewers of a qa_authoring project. `squad`: articles by title, paragraphs, qas with "
            "id, question, answers (text, answer_start in code points; the author's span then validators' extra "
            "spans), is_impossible, WH Question, question quality (the reviewer's grade, `unreviewed` when none) and "
            "wrong_answers. `jsonl`: one question a line. Splits hold 90/5/5 of the questions "
            "(settings.dev_share, test_share), each article (title) whole in one split: a shuffle seeded by "
            "settings.split_seed, computed from the questions present, so final once collection ends; a split given "
            "at import wins. Rejected questions are left out unless "
            "include_rejected=true."
        ),
        parameters=[
            OpenApiParameter("format", str, required=True, enum=["squad", "jsonl"]),
            OpenApiParameter("split", str, enum=list(SPLITS), description="Only this split (empty: all)."),
            OpenApiParameter("include_rejected", bool, default=False),
        ],
        responses={
            (200, "application/json"): OpenApiResponse(OpenApiTypes.BINARY, description="SQuAD v2 JSON"),
            (200, "application/x-ndjson"): OpenApiResponse(OpenApiTypes.BINARY, description="one question a line"),
            **ERRORS,
        },
    )
    def get(self, request, slug):
        project = access.access_project_for_staff(request.user, slug)
        if project.kind != "qa_authoring":
            raise InvalidInput("only qa_authoring projects have questions to export", field="slug")
        params = request.query_params
        fmt = params.get("format")
        flag = params.get("include_rejected", "false")
        if flag not in ("true", "false", "1", "0"):
            raise InvalidInput("must be true or false", field="include_rejected")
        stream = export_questions_stream(
            project, fmt=fmt, split=params.get("split") or None, include_rejected=flag in ("true", "1")
        )
        content_type = "application/json; charset=utf-8" if fmt == "squad" else "application/x-ndjson; charset=utf-8"
        name = f"{project.slug}-{params.get('split') or 'all'}.{'json' if fmt == 'squad' else 'jsonl'}"
        response = StreamingHttpResponse(stream, content_type=content_type)
        response["Content-Disposition"] = content_disposition_header(as_attachment=True, filename=name)
        response["Cache-Control"] = "no-store"
        return response
