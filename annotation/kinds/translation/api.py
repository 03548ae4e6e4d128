"""The LCHAIM endpoints: the seeds' own import, stratified sampling, the
back-translation job and the ratings export. Thin: parse, check access, call one service."""

from django.conf import settings
from django.http import StreamingHttpResponse
from django.utils.http import content_disposition_header
from django.utils.translation import gettext
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import access
from annotation.errors import InvalidInput, PayloadTooLarge
from annotation.kinds.translation.back_translation import back_translation_request, back_translation_restore
from annotation.kinds.translation.formats import ratings_export_stream, translation_import_lchaim
from annotation.rest.idempotency import idempotent_write
from annotation.rest.negotiation import JsonErrorsNegotiation
from annotation.rest.parsers import StrictFormParser, StrictJSONParser, StrictMultiPartParser, body_of
from annotation.rest.schema import ERRORS
from annotation.services import exports as export_services
from annotation.wording import join_list

LchaimImportRequest = inline_serializer(
    "LchaimImportRequest",
    {
        "split": serializers.CharField(help_text="The split the files come from (ConTRoL uids restart per split)."),
        "source": serializers.FileField(required=False, help_text="ConTRoL JSONL: uid, premise, hypothesis, label."),
        "system": serializers.ListField(
            child=serializers.CharField(), help_text="System names, one per translation file, same order."
        ),
        "translation": serializers.ListField(child=serializers.FileField(), help_text="LCHAIM-style JSON arrays."),
        "back_translation": serializers.ListField(
            child=serializers.FileField(),
            required=False,
            help_text="English back-translations, one per system (same shape) or none.",
        ),
    },
)
LchaimImportResponse = inline_serializer(
    "LchaimImportResult",
    {
        "created": serializers.IntegerField(),
        "skipped": serializers.IntegerField(),
        "updated": serializers.IntegerField(),
    },
)


def _read(upload, field: str) -> bytes:
    if upload.size > settings.MASHOV_MAX_IMPORT_BYTES:
        raise PayloadTooLarge(
            gettext("the file is larger than %(bytes)s bytes") % {"bytes": settings.MASHOV_MAX_IMPORT_BYTES},
            field=field,
        )
    return upload.read()


class LchaimImportView(APIView):
    parser_classes = [StrictMultiPartParser, StrictFormParser]

    @extend_schema(
        summary="Import ConTRoL sources and LCHAIM-style translations joined by uid",
        description=(
            "Supervisors. Multipart: `split`; `source` (optional when the items exist); `system` and `translation` "
            "repeated in the same order; optional `back_translation` files aligned with the systems. With a source, "
            "items `<split>:<uid>` are created with one candidate per system; without one, the systems' candidates "
            "are added to existing items that have no ratings yet. All or nothing."
        ),
        request={"multipart/form-data": LchaimImportRequest},
        responses={
            201: LchaimImportResponse,
            409: OpenApiResponse(description="items already rated"),
            413: OpenApiResponse(description="file too large"),
            **ERRORS,
        },
    )
    def post(self, request, slug):
        project = access.access_project_for_supervisor(request.user, slug)
        source = request.FILES.get("source")
        translations = request.FILES.getlist("translation")
        backs = request.FILES.getlist("back_translation")
        result = translation_import_lchaim(
            project=project,
            split=request.data.get("split") or "",
            source=_read(source, "source") if source is not None else None,
            systems=request.data.getlist("system") if hasattr(request.data, "getlist") else [],
            translations=[_read(f, f"translation[{i}]") for i, f in enumerate(translations)],
            back_translations=[_read(f, f"back_translation[{i}]") for i, f in enumerate(backs)],
        )
        return Response(result, status=status.HTTP_201_CREATED)


class BackTranslationView(APIView):
    @extend_schema(
        summary="Compute back-translation similarities (on the worker)",
        description=(
            "Supervisors of translation_rating projects. Needs the optional embeddings package "
            "(requirements-embeddings.txt); without it the answer is a 400 saying so."
        ),
        request=None,
        parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER)],
        responses={202: inline_serializer("BackTranslationJob", {"job": serializers.IntegerField()}), **ERRORS},
    )
    @idempotent_write
    def post(self, request, slug):
        job = back_translation_request(user=request.user, slug=slug)
        return Response({"job": job.pk}, status=status.HTTP_202_ACCEPTED)


class BackTranslationRestoreView(APIView):
    parser_classes = [StrictJSONParser]

    @extend_schema(
        summary="Restore items the back-translation filter removed",
        description=(
            "Supervisors. The items go back to the status they had (open ones to the rating queue, and to the "
            "default exports); the restore is recorded on the item and a recompute keeps it. All or nothing: an id "
            "that is not an item of the project removed by the filter is a 400 naming `items[i]`."
        ),
        request=inline_serializer(
            "BackTranslationRestoreRequest",
            {"items": serializers.ListField(child=serializers.IntegerField(), help_text="Item ids.")},
        ),
        responses={
            200: inline_serializer("BackTranslationRestoreResult", {"restored": serializers.IntegerField()}),
            **ERRORS,
        },
    )
    def post(self, request, slug):
        data = body_of(request)
        unknown = set(data) - {"items"}
        if unknown:
            raise InvalidInput(
                gettext("unknown field(s): %(unknown)s") % {"unknown": join_list(sorted(unknown))}, field="body"
            )
        return Response(
            {"restored": back_translation_restore(user=request.user, slug=slug, item_ids=data.get("items"))}
        )


class RatingsExportView(APIView):
    renderer_classes = [JSONRenderer]
    content_negotiation_class = JsonErrorsNegotiation

    @extend_schema(
        summary="Export ratings: one record per item and candidate (streamed)",
        description=(
            "Supervisors and reviewers of translation_rating projects. Each record: item id, split, group, status, "
            "flags, candidate index (import order), system, texts, each rater's scores under a pseudonymous rater id, "
            "and the means. Without `status`, items removed (by the back-translation filter or otherwise) are left "
            "out; `status=removed` or `status=all` includes them. `exclude_flagged=1` also leaves out items where any "
            "system's back-translation scored below the threshold."
        ),
        parameters=[
            OpenApiParameter("format", str, required=True, enum=["jsonl", "csv"]),
            OpenApiParameter(
                "status",
                str,
                enum=list(export_services.EXPORT_STATUSES),
                description="Omitted: every status but removed.",
            ),
            OpenApiParameter("split", str),
            OpenApiParameter("exclude_flagged", str, enum=["0", "1"], default="0"),
        ],
        responses={
            (200, "application/x-ndjson"): OpenApiResponse(OpenApiTypes.BINARY),
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.BINARY),
            **ERRORS,
        },
    )
    def get(self, request, slug):
        project = access.access_project_for_staff(request.user, slug)
        if project.kind != "translation_rating":
            raise InvalidInput(gettext("ratings are exported for translation_rating projects"), field="kind")
        params = request.query_params
        fmt = params.get("format")
        if fmt not in ("jsonl", "csv"):
            raise InvalidInput(gettext("must be jsonl or csv"), field="format")
        flag = params.get("exclude_flagged", "0")
        if flag not in ("0", "1", "true", "false"):
            raise InvalidInput(gettext("must be 0 or 1"), field="exclude_flagged")
        status_param = params.get("status")
        spec = export_services.export_prepare(
            project=project, fmt=fmt, status=status_param or "all", split=params.get("split")
        )
        stream = ratings_export_stream(spec, exclude_flagged=flag in ("1", "true"), exclude_removed=not status_param)
        response = StreamingHttpResponse(stream, content_type=spec.content_type)
        response["Content-Disposition"] = content_disposition_header(
            as_attachment=True, filename=f"{project.slug}-ratings.{fmt}"
        )
        response["Cache-Control"] = "no-store"
        return response
