"""Results endpoints of docs/api.md "Results": agreement (recompute / read) and the kind's report."""

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import access
from annotation.kinds.registry import kind_report_keys
from annotation.rest.idempotency import idempotent_write
from annotation.rest.schema import ERRORS
from annotation.selectors.reports import agreement_reports_for_project, report_for_viewer
from annotation.services.agreement import agreement_request


class AgreementReportSerializer(serializers.Serializer):
    scope = serializers.DictField(help_text='What was measured, e.g. {"round": 1} or {"round": "all"}.')
    level = serializers.ChoiceField(choices=["nominal", "ordinal", "interval"])
    alpha = serializers.FloatField(allow_null=True)
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)
    units = serializers.IntegerField(help_text="Pairable units (2 or more values).")
    coders = serializers.IntegerField()
    computed_at = serializers.DateTimeField()
    reason = serializers.CharField(required=False, help_text="Why alpha is undefined; present only then.")


JobStartedSerializer = inline_serializer("JobStarted", {"job": serializers.IntegerField()})

ReportSerializer = inline_serializer(
    "ProjectReport",
    {
        "project": serializers.CharField(),
        "kind": serializers.CharField(),
        "status_counts": serializers.DictField(child=serializers.IntegerField()),
        "outcomes_per_round": serializers.ListField(
            child=inline_serializer(
                "RoundOutcomes",
                {
                    "round": serializers.IntegerField(),
                    "accepted": serializers.IntegerField(),
                    "failed": serializers.IntegerField(),
                    "label_changed": serializers.IntegerField(),
                },
            ),
            required=False,
        ),
        "label_changed": serializers.IntegerField(required=False),
        "confusion": inline_serializer(
            "Confusion",
            {
                "labels": serializers.ListField(child=serializers.CharField()),
                "rows": serializers.CharField(),
                "columns": serializers.CharField(),
                "matrix": serializers.ListField(child=serializers.ListField(child=serializers.IntegerField())),
                "total": serializers.IntegerField(),
                "agree": serializers.IntegerField(),
                "without_intended": serializers.IntegerField(),
            },
            required=False,
        ),
        "agreement": AgreementReportSerializer(many=True, required=False),
        "per_annotator": serializers.ListField(
            child=inline_serializer(
                "AnnotatorAgreement",
                {
                    "annotator": serializers.CharField(),
                    "agree": serializers.IntegerField(),
                    "total": serializers.IntegerField(),
                    "rate": serializers.FloatField(allow_null=True),
                },
            ),
            required=False,
        ),
        # The kinds' own figures, as their report_sections return them (`Kind.report_keys`).
        **{
            key: serializers.JSONField(required=False, help_text=help_text)
            for key, help_text in kind_report_keys().items()
        },
    },
)


class AgreementView(APIView):
    @extend_schema(responses={200: AgreementReportSerializer(many=True), **ERRORS})
    def get(self, request, slug):
        project = access.access_project_for_staff(request.user, slug)
        return Response(AgreementReportSerializer(agreement_reports_for_project(project), many=True).data)

    @extend_schema(
        request=None,
        parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER)],
        responses={202: JobStartedSerializer, **ERRORS},
    )
    @idempotent_write
    def post(self, request, slug):
        job = agreement_request(user=request.user, slug=slug)
        return Response({"job": job.pk}, status=status.HTTP_202_ACCEPTED)


class ReportView(APIView):
    @extend_schema(responses={200: ReportSerializer, **ERRORS})
    def get(self, request, slug):
        project = access.access_project_for_staff(request.user, slug)
        return Response(report_for_viewer(project, request.user))
