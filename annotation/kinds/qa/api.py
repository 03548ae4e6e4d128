"""HeQ's question validation and the question export (docs/api.md "Review and feedback";
HeQ §3.3-3.4; the review and feedback loop is the core's, api/views/reviews.py). Thin: parse,
call one service, render."""

from django.http import StreamingHttpResponse
from django.utils.http import content_disposition_header
from django.utils.translation import gettext
from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import access
from annotation.errors import InvalidInput
from annotation.rest.idempotency import idempotent_write
from annotation.rest.negotiation import JsonErrorsNegotiation
from annotation.rest.parsers import body_of
from annotation.rest.schema import ERRORS
from annotation.rest.serializers import AnnotatorItemSerializer, ErrorsSerializer

from . import audit as audit_services
from . import corrections
from . import validation as validation_services
from .formats import export_questions_stream
from .questions import SPLITS

# --- shapes (OpenAPI) ---------------------------------------------------------------------------


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
                gettext("unknown field(s); expected %(fields)s")
                % {"fields": "annotation, question, item, question_key, answerable, answer"},
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
            raise InvalidInput(_("projects of this kind have no questions to export"), field="slug")
        params = request.query_params
        fmt = params.get("format")
        flag = params.get("include_rejected", "false")
        if flag not in ("true", "false", "1", "0"):
            raise InvalidInput(_("must be true or false"), field="include_rejected")
        stream = export_questions_stream(
            project, fmt=fmt, split=params.get("split") or None, include_rejected=flag in ("true", "1")
        )
        content_type = "application/json; charset=utf-8" if fmt == "squad" else "application/x-ndjson; charset=utf-8"
        name = f"{project.slug}-{params.get('split') or 'all'}.{'json' if fmt == 'squad' else 'jsonl'}"
        response = StreamingHttpResponse(stream, content_type=content_type)
        response["Content-Disposition"] = content_disposition_header(as_attachment=True, filename=name)
        response["Cache-Control"] = "no-store"
        return response


# --- the final audit (HeQ §3.4) ---------------------------------------------------------------


class AuditDrawSerializer(serializers.Serializer):
    per_source = serializers.IntegerField(help_text="Questions drawn from each source (HeQ: 100).")
    seed = serializers.IntegerField(help_text="The draw's seed: the same seed draws the same sample.")


class AuditMarkSerializer(serializers.Serializer):
    question_correct = serializers.BooleanField()
    span_correct = serializers.BooleanField(allow_null=True, help_text="Null where there is no span to judge.")


class QuestionAuditView(APIView):
    @extend_schema(
        summary="The final audit sample of a question project, with its figures",
        description=(
            "Supervisors. `results`: each sampled question with its paragraph, its answer (the author's span or the "
            "file's first answer; null when unanswerable) and the verdict so far; `figures`: the report's "
            "`final_audit` (shares of correct questions and spans with Wilson intervals, per source and overall)."
        ),
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
    )
    def get(self, request, slug):
        return Response(audit_services.audit_sample_for_supervisor(user=request.user, slug=slug))

    @extend_schema(
        summary="Draw the final audit sample (HeQ §3.4)",
        description=(
            "`per_source` questions of each paragraph source (all of a smaller source), chosen by `seed` among the "
            "questions a release would carry (not removed, not rejected). Replaces an earlier draw until one of its "
            "questions is marked; a 409 after that."
        ),
        request=AuditDrawSerializer,
        responses={201: OpenApiTypes.OBJECT, 409: ErrorsSerializer, **ERRORS},
    )
    @idempotent_write
    def post(self, request, slug):
        data = body_of(request)
        unknown = set(data) - {"per_source", "seed"}
        if unknown:
            raise InvalidInput(
                _("unknown field(s); expected %(fields)s") % {"fields": "per_source, seed"},
                field=sorted(map(str, unknown))[0],
            )
        drawn = audit_services.audit_sample_draw(
            user=request.user, slug=slug, per_source=data.get("per_source"), seed=data.get("seed")
        )
        return Response(drawn, status=status.HTTP_201_CREATED)


class QuestionAuditMarkView(APIView):
    @extend_schema(
        operation_id="projects_question_audit_mark",
        summary="Mark one sampled question: is the question correct, is its answer span correct",
        request=AuditMarkSerializer,
        responses={200: AuditMarkSerializer, **ERRORS},
    )
    @idempotent_write
    def post(self, request, slug, audit_id):
        data = body_of(request)
        unknown = set(data) - {"question_correct", "span_correct"}
        if unknown:
            raise InvalidInput(
                _("unknown field(s); expected %(fields)s") % {"fields": "question_correct, span_correct"},
                field=sorted(map(str, unknown))[0],
            )
        entry = audit_services.audit_mark(
            user=request.user,
            slug=slug,
            audit_id=audit_id,
            question_correct=data.get("question_correct"),
            span_correct=data.get("span_correct"),
        )
        return Response({"question_correct": entry.question_correct, "span_correct": entry.span_correct})


class AnswerCorrectionRequestSerializer(serializers.Serializer):
    annotation = serializers.IntegerField(required=False, help_text="an authored question's annotation")
    question = serializers.IntegerField(required=False, help_text="its index in the annotation")
    question_key = serializers.CharField(required=False, help_text="or the id of a question of the imported file")
    answer_index = serializers.IntegerField(required=False, help_text="which of the file's answers (default 0)")
    answer = SpanSerializer(help_text="the right span: start in code points, text equal to that slice")
    reason = serializers.CharField(required=False)


class AnswerCorrectionView(APIView):
    @extend_schema(
        summary="Correct an existing answer span (validators and supervisors)",
        description=(
            "Replaces the author's span of an authored question, or one of the `answers` of a question of the "
            "imported file, under the authoring rules; the old span is kept in the item's revisions "
            "(`GET /api/items/{id}/revisions/`). 409 when the question has no span or nothing changes."
        ),
        request=AnswerCorrectionRequestSerializer,
        parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER)],
        responses={201: OpenApiTypes.OBJECT, 409: ErrorsSerializer, **ERRORS},
    )
    @idempotent_write
    def post(self, request, item_id):
        revision = corrections.answer_correct(user=request.user, item_id=item_id, body=body_of(request))
        return Response(
            {"id": revision.pk, "action": revision.action, "details": revision.details, "reason": revision.reason},
            status=status.HTTP_201_CREATED,
        )
