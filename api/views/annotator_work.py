"""docs/api.md "Annotator comfort and the supervisor console": an annotator's drafts, skips and changes to their own answers.
Thin: parse, call one service (annotation/services/annotator_work.py), render."""

from django.utils.translation import gettext
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import access
from annotation.errors import InvalidInput
from annotation.kinds.registry import get_kind
from annotation.rest.pagination import PageNumberPagination
from annotation.rest.parsers import body_of
from annotation.rest.schema import ERRORS
from annotation.rest.serializers import AnnotatorItemSerializer, ErrorsSerializer
from annotation.selectors.annotations import annotations_of_annotator
from annotation.services import annotator_work as annotator_work_services
from api import serializers as s

CONFLICT = {409: ErrorsSerializer}

DraftSerializer = inline_serializer(
    "Draft",
    {"value": serializers.JSONField(allow_null=True, help_text="A JSON object of unsubmitted work, or null for none.")},
)
HeartbeatSerializer = inline_serializer(
    "Heartbeat", {"expires_at": serializers.DateTimeField(help_text="When the claim lapses if nothing more is heard.")}
)
EditRequestSerializer = inline_serializer(
    "AnnotationEditRequest", {"value": serializers.DictField(help_text="The new value, in the kind's submit shape.")}
)


class MineEntrySerializer(serializers.Serializer):
    annotation = serializers.IntegerField(source="pk")
    assignment = serializers.IntegerField(source="assignment_id")
    item = AnnotatorItemSerializer(help_text="The item as the annotator saw it.")
    round = serializers.IntegerField()
    value = serializers.DictField(help_text="The value as the annotator sent it (the latest, after edits).")
    created_at = serializers.DateTimeField()
    edited_at = serializers.DateTimeField(allow_null=True)
    editable = serializers.BooleanField(
        help_text="Its round is still open: PATCH /api/annotations/{id}/ may change it."
    )

    def to_representation(self, annotation):
        item = annotation.item
        kind = get_kind(self.context["project"].kind)
        item.project = self.context["project"]
        return {
            "annotation": annotation.pk,
            "assignment": annotation.assignment_id,
            "item": {
                "id": item.pk,
                # A coherence probe shows its original's id, as /next/ did.
                "external_id": item.probe_of.external_id if item.probe_of_id else item.external_id,
                "payload": kind.annotator_payload(item),
            },
            "round": annotation.round,
            "value": kind.annotator_value(annotation.value, item),
            "created_at": serializers.DateTimeField().to_representation(annotation.created_at),
            "edited_at": serializers.DateTimeField().to_representation(annotation.edited_at)
            if annotation.edited_at
            else None,
            "editable": annotator_work_services.annotation_editable(
                annotation, item, reviewed=annotation.reviewed, round_has_decision=annotation.round_has_decision
            ),
        }


def value_of(request):
    data = body_of(request)
    unknown = set(data) - {"value"}
    if unknown:
        raise InvalidInput(
            gettext("unknown field(s); expected %(fields)s") % {"fields": "value"}, field=sorted(map(str, unknown))[0]
        )
    if "value" not in data:
        raise InvalidInput(gettext("is required"), field="value")
    return data["value"]


class MineView(APIView):
    @extend_schema(
        summary="The caller's annotations in this project, newest first",
        parameters=[OpenApiParameter("page", int), OpenApiParameter("page_size", int)],
        responses={200: inline_serializer("MinePage", {
            "count": serializers.IntegerField(),
            "next": serializers.URLField(allow_null=True),
            "previous": serializers.URLField(allow_null=True),
            "results": MineEntrySerializer(many=True),
        }), **ERRORS},
    )  # fmt: skip
    def get(self, request, slug):
        project = access.access_project_for_user(request.user, slug)
        paginator = PageNumberPagination()
        page = paginator.paginate_queryset(annotations_of_annotator(project, request.user), request, view=self)
        return paginator.get_paginated_response(MineEntrySerializer(page, many=True, context={"project": project}).data)


class AnnotationEditView(APIView):
    @extend_schema(
        summary="Change the value of one's own annotation while its round is open",
        description="Its annotator only (anyone else: 404). Validated as a submit is. A decided round, a graded "
        "annotation or a kind whose answers cannot change is a 409 that says so. Consensus reads the latest value.",
        request=EditRequestSerializer,
        responses={200: s.AnnotationSerializer, **CONFLICT, **ERRORS},
    )
    def patch(self, request, annotation_id):
        annotation = annotator_work_services.annotation_edit(
            user=request.user, annotation_id=annotation_id, value=value_of(request)
        )
        answer = s.annotation_data(annotation)
        answer["value"] = get_kind(annotation.item.project.kind).annotator_value(annotation.value, annotation.item)
        answer["edited_at"] = serializers.DateTimeField().to_representation(annotation.edited_at)
        return Response(answer)


class SkipView(APIView):
    @extend_schema(
        summary="Release one's claim without an answer",
        description="The item goes back to others at once; the same annotator is not served it again in this round. "
        "Skipping again changes nothing; a submitted claim is a 409.",
        request=None,
        responses={204: OpenApiResponse(description="skipped"), **CONFLICT, **ERRORS},
    )
    def post(self, request, assignment_id):
        annotator_work_services.assignment_skip(user=request.user, assignment_id=assignment_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class HeartbeatView(APIView):
    @extend_schema(
        summary="Keep one's open claim while working on it",
        description="The annotate page sends one on input. The claim holds its slot for another "
        "`idle_release_seconds`, never past `claim_ttl` from the claim; one that lapsed while the page sat idle "
        "comes back while the item has a free slot. A claim that cannot hold is a 409.",
        request=None,
        responses={200: HeartbeatSerializer, **CONFLICT, **ERRORS},
    )
    def post(self, request, assignment_id):
        assignment = annotator_work_services.assignment_heartbeat(user=request.user, assignment_id=assignment_id)
        return Response({"expires_at": assignment.expires_at})


class DraftView(APIView):
    @extend_schema(
        summary="The draft of one's open claim",
        description="Kept on the server until the claim is submitted, skipped or expires. A closed claim is a 409.",
        responses={200: DraftSerializer, **CONFLICT, **ERRORS},
    )
    def get(self, request, assignment_id):
        return Response(
            {"value": annotator_work_services.assignment_draft_get(user=request.user, assignment_id=assignment_id)}
        )

    @extend_schema(
        summary="Save the draft of one's open claim",
        description=f"A JSON object (or null to clear) of at most {annotator_work_services.DRAFT_MAX_BYTES} bytes; replaces the previous draft.",
        request=DraftSerializer,
        responses={200: DraftSerializer, 413: ErrorsSerializer, **CONFLICT, **ERRORS},
    )
    def put(self, request, assignment_id):
        value = annotator_work_services.assignment_draft_save(
            user=request.user, assignment_id=assignment_id, value=value_of(request)
        )
        return Response({"value": value})
