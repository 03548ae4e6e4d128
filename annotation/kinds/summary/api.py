"""summary_rating endpoints beside the common ones of docs/api.md: queue the intrinsic measures of a
project's summaries (HeSum §3.3) and read them back per item."""

from django.utils.translation import gettext
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import generics, serializers, status
from rest_framework.response import Response

from annotation import access
from annotation.errors import InvalidInput
from annotation.kinds.registry import kind_title
from annotation.kinds.summary.measures import KIND, summary_measures_request
from annotation.models import Item
from annotation.rest.idempotency import idempotent_write
from annotation.rest.parsers import body_of
from annotation.rest.schema import ERRORS

IntrinsicRequestSerializer = inline_serializer(
    "IntrinsicRequest",
    {"all": serializers.BooleanField(required=False, help_text="Re-measure every item, not only the unmeasured ones.")},
)
JobStartedSerializer = inline_serializer("IntrinsicJobStarted", {"job": serializers.IntegerField()})


class SummaryMeasuresSerializer(serializers.Serializer):
    novel_ngrams = serializers.DictField(
        child=serializers.FloatField(allow_null=True), help_text='{"1": .., "4": ..}, fractions'
    )
    compression_ratio = serializers.FloatField(allow_null=True)
    redundancy = serializers.DictField(child=serializers.FloatField(allow_null=True), help_text='{"1": .., "2": ..}')
    words = serializers.IntegerField()


class IntrinsicSummarySerializer(serializers.Serializer):
    index = serializers.IntegerField(help_text="Position in the imported `summaries` list.")
    system = serializers.CharField(trim_whitespace=False)
    measures = SummaryMeasuresSerializer(allow_null=True)


class IntrinsicItemSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    external_id = serializers.CharField(trim_whitespace=False)
    article_words = serializers.IntegerField(allow_null=True)
    summaries = IntrinsicSummarySerializer(many=True)

    def to_representation(self, item):
        intrinsic = (item.computed or {}).get("intrinsic") or {}
        measured = intrinsic.get("summaries") or []
        return {
            "id": item.pk,
            "external_id": item.external_id,
            "article_words": intrinsic.get("article_words"),
            "summaries": [
                {
                    "index": index,
                    "system": summary["system"],
                    "measures": measured[index] if index < len(measured) else None,
                }
                for index, summary in enumerate(item.payload["summaries"])
            ],
        }


class IntrinsicView(generics.ListAPIView):
    """GET: every item's measures (null until measured), supervisors and reviewers.
    POST: queue the measuring job (supervisors) → 202 {"job"}."""

    serializer_class = IntrinsicItemSerializer

    def get_queryset(self):
        project = access.access_project_for_staff(self.request.user, self.kwargs["slug"])
        if project.kind != KIND:
            raise InvalidInput(
                gettext("intrinsic measures exist for %(kind)s projects, not %(other)s")
                % {"kind": kind_title(KIND), "other": kind_title(project.kind)},
                field="kind",
            )
        return (
            Item.objects.filter(project=project)
            .only("pk", "external_id", "payload", "computed")
            .order_by("position", "id")
        )

    @extend_schema(responses={200: IntrinsicItemSerializer(many=True), **ERRORS})
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        request=IntrinsicRequestSerializer,
        parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER)],
        responses={202: JobStartedSerializer, **ERRORS},
    )
    @idempotent_write
    def post(self, request, slug):
        data = body_of(request)
        remeasure = data.get("all", False)
        if not isinstance(remeasure, bool):
            raise InvalidInput(gettext("must be true or false"), field="all")
        job = summary_measures_request(user=request.user, slug=slug, remeasure=remeasure)
        return Response({"job": job.pk}, status=status.HTTP_202_ACCEPTED)
