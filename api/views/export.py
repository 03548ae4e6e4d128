"""`GET /api/projects/{slug}/export/`: a streamed file of the project's items and outcomes."""

from django.http import StreamingHttpResponse
from django.utils.http import content_disposition_header
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.renderers import JSONRenderer
from rest_framework.views import APIView

from annotation import access
from annotation.rest.negotiation import JsonErrorsNegotiation
from annotation.rest.schema import ERRORS
from annotation.services import exports as export_services


class ExportView(APIView):
    renderer_classes = [JSONRenderer]
    content_negotiation_class = JsonErrorsNegotiation

    @extend_schema(
        summary="Export items with their outcomes (streamed)",
        description=(
            "Supervisors and reviewers. One record per item in source order: external id, premise, hypothesis, "
            "gold label, author's label, votes per label, n, round, group, split, status, label_changed, agreement, "
            "pseudonymous author and annotator ids. `csv` starts with a UTF-8 BOM and puts a `'` before cells beginning "
            "with = + - @ (or fullwidth ＝ ＋ － ＠, also after spaces, NBSP, LRM, RLM or ZWNJ), TAB or CR; the CSV import "
            "takes it off again. `farstail` writes FarsTail's own TSV (gold label for accepted items, the reference label "
            "otherwise), quoting cells that hold a TAB, CR, LF or a quote. Text is exported byte for byte as stored, "
            "and every export imports back to the same texts. Kinds with labels add `decided_by`: the method of the "
            "item's effective decision (k_of_n, majority, dawid_skene, mace, adjudication, import, the kind's rule)."
        ),
        parameters=[
            OpenApiParameter(
                "format",
                str,
                required=True,
                enum=["jsonl", "csv", "farstail"],
                description="Export format; `farstail` for the NLI kinds only. Others → 400.",
            ),
            OpenApiParameter(
                "status",
                str,
                enum=list(export_services.EXPORT_STATUSES),
                description="Item status to export, or `all`; default: the kind's finished items (accepted for nli_relabel, complete for rated kinds).",
            ),
            OpenApiParameter("split", str, description="Only items of this split (empty: every split)."),
            OpenApiParameter(
                "history",
                str,
                enum=["0", "1"],
                description="`1` (jsonl only): each record carries `decisions`, the item's whole decision history, oldest first.",
            ),
        ],  # fmt: skip
        responses={
            (200, "application/x-ndjson"): OpenApiResponse(OpenApiTypes.BINARY, description="one JSON record a line"),
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.BINARY, description="UTF-8 with BOM"),
            (200, "text/tab-separated-values"): OpenApiResponse(OpenApiTypes.BINARY, description="FarsTail TSV"),
            **ERRORS,
        },
    )
    def get(self, request, slug):
        project = access.access_project_for_staff(request.user, slug)
        params = request.query_params
        spec = export_services.export_prepare(
            project=project,
            fmt=params.get("format"),
            status=params.get("status"),
            split=params.get("split"),
            history=params.get("history"),
        )
        response = StreamingHttpResponse(export_services.export_stream(spec), content_type=spec.content_type)
        response["Content-Disposition"] = content_disposition_header(as_attachment=True, filename=spec.filename)
        response["Cache-Control"] = "no-store"
        return response
