"""The stratified sample of LCHAIM's two kinds (LCHAIM §2.2, §3.2): which items go to the
raters or testers. Thin: parse, call one service, render."""

from django.utils.translation import gettext
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import access
from annotation.errors import InvalidInput
from annotation.kinds.translation.sampling import STRATUM_FIELDS, items_sample
from annotation.rest.parsers import StrictJSONParser, body_of
from annotation.rest.schema import ERRORS
from annotation.wording import join_list

SampleRequest = inline_serializer(
    "SampleRequest",
    {
        "n": serializers.IntegerField(
            min_value=1,
            required=False,
            help_text="How many items to draw. Omitted: the project's `sample_size` setting (LCHAIM: 200), or every item when there are fewer.",
        ),
        "stratum": serializers.ChoiceField(choices=list(STRATUM_FIELDS), required=False, help_text="Default split."),
        "seed": serializers.IntegerField(
            required=False, help_text="Same seed, same sample; omitted: a fresh one, returned."
        ),
    },
)
SampleResponse = inline_serializer(
    "SampleResult",
    {
        "n": serializers.IntegerField(),
        "population": serializers.IntegerField(),
        "stratum": serializers.CharField(),
        "seed": serializers.IntegerField(),
        "strata": serializers.DictField(child=serializers.DictField(child=serializers.IntegerField())),
        "job": serializers.IntegerField(help_text="A finished job recording the draw."),
    },
)


class SampleView(APIView):
    parser_classes = [StrictJSONParser]

    @extend_schema(
        summary="Draw a stratified random sample of the items to rate",
        description="Supervisors. Only sampled items go to raters. Refused (409) once any item has an annotation.",
        request=SampleRequest,
        responses={200: SampleResponse, 409: OpenApiResponse(description="rating has started"), **ERRORS},
    )
    def post(self, request, slug):
        project = access.access_project_for_supervisor(request.user, slug)
        data = body_of(request)
        unknown = set(data) - {"n", "stratum", "seed"}
        if unknown:
            raise InvalidInput(
                gettext("unknown field(s): %(fields)s") % {"fields": join_list(sorted(unknown))}, field="body"
            )
        result = items_sample(
            project=project, user=request.user, n=data.get("n"), stratum=data.get("stratum"), seed=data.get("seed")
        )
        return Response(result.as_dict())
