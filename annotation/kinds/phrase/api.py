"""`phrase_pair` endpoints beyond the generic ones: PhrasIS's own TSV layout.

The generic export (`/api/projects/{slug}/export/?format=`) always writes a header row, and
PhrasIS files have none, so the PhrasIS layout has its own path here."""

from django.http import StreamingHttpResponse
from django.utils.http import content_disposition_header
from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.renderers import JSONRenderer
from rest_framework.views import APIView

from annotation import access
from annotation.errors import InvalidInput
from annotation.kinds.registry import kind_title
from annotation.rest.negotiation import JsonErrorsNegotiation
from annotation.rest.schema import ERRORS
from annotation.services.exports import EXPORT_STATUSES

from .formats import phrasis_export_prepare, phrasis_export_stream


class PhrasisExportView(APIView):
    renderer_classes = [JSONRenderer]
    content_negotiation_class = JsonErrorsNegotiation

    @extend_schema(
        summary="Export a phrase_pair project in PhrasIS's TSV layout (streamed)",
        description=(
            "Supervisors and reviewers. Seven tab-separated columns, no header, LF line ends, in source order: "
            "similarity score, label, phrase 1, phrase 2, token positions 1, token positions 2, sentence-pair "
            "number, each exactly as imported. The label cell is the annotators' majority label (PhrasIS code) "
            "when they decided one other than the imported label, else the imported cell as stored. Reversed "
            "probe copies are never exported. `file` keeps the pairs imported from one PhrasIS file, so an "
            "unlabeled file comes back byte for byte."
        ),
        parameters=[
            OpenApiParameter(
                "file", str, description="Name of an imported PhrasIS file, e.g. PhrasIS.train.images.positives.txt"
            ),
            OpenApiParameter(
                "status", str, enum=list(EXPORT_STATUSES), default="all", description="Item status, or `all`."
            ),
            OpenApiParameter("split", str, description="Only items of this split."),
        ],
        responses={
            (200, "text/tab-separated-values"): OpenApiResponse(OpenApiTypes.BINARY, description="PhrasIS TSV"),
            **ERRORS,
        },
    )
    def get(self, request, slug):
        project = access.access_project_for_staff(request.user, slug)
        if project.kind != "phrase_pair":
            raise InvalidInput(
                _("the PhrasIS layout is for projects of the kind “%(kind)s”") % {"kind": kind_title("phrase_pair")},
                field="format",
            )
        params = request.query_params
        items = phrasis_export_prepare(
            project, file=params.get("file"), status=params.get("status"), split=params.get("split")
        )
        response = StreamingHttpResponse(
            phrasis_export_stream(items), content_type="text/tab-separated-values; charset=utf-8"
        )
        name = params.get("file") or f"{project.slug}.phrasis.txt"
        response["Content-Disposition"] = content_disposition_header(as_attachment=True, filename=name)
        response["Cache-Control"] = "no-store"
        return response
