"""Releases (docs/api.md "Releases"): frozen, versioned dataset snapshots, their zip and the diff
between two. Supervisors only. Thin: parse, call annotation.release.publish, answer."""

from django.http import FileResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.release import publish
from annotation.rest.idempotency import idempotent_write
from annotation.rest.parsers import body_of
from annotation.rest.schema import ERRORS, IDEMPOTENCY_KEY

ReleaseFile = inline_serializer(
    "ReleaseFile",
    {"name": serializers.CharField(), "bytes": serializers.IntegerField(), "sha256": serializers.CharField()},
)


class ReleaseSerializer(serializers.Serializer):
    version = serializers.CharField()
    status = serializers.ChoiceField(choices=["building", "ready", "failed"])
    license = serializers.CharField()
    description = serializers.CharField()
    created_at = serializers.DateTimeField()
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    job = serializers.IntegerField(source="job_id", allow_null=True)
    files = serializers.ListField(child=ReleaseFile)
    counts = serializers.DictField(child=serializers.DictField(child=serializers.IntegerField()))
    card = serializers.CharField()
    error = serializers.CharField()


ReleaseStarted = inline_serializer(
    "ReleaseStarted", {"job": serializers.IntegerField(), "version": serializers.CharField()}
)


class ReleaseListView(APIView):
    @extend_schema(
        summary="The project's releases, newest first (supervisors)",
        description="Each release's version, status, license, created_at, files (name, bytes, sha256) and card.",
        responses={200: ReleaseSerializer(many=True), **ERRORS},
    )
    def get(self, request, slug):
        _project, releases = publish.releases_for_project(user=request.user, slug=slug)
        return Response(ReleaseSerializer(releases.select_related("created_by"), many=True).data)

    @extend_schema(
        summary="Make a release (on the worker)",
        description=(
            "Supervisors. Freezes the project's decided items as they are when the job runs: per split a JSONL "
            "file, a Parquet file and the kind's own format, a README.md dataset card and SHA256SUMS. A version is "
            "used once (400 naming `version`); a project with no decided items is a 400 naming `project`. "
            "Answers 202 with the job; the job's result is the release."
        ),
        request=inline_serializer(
            "ReleaseRequest",
            {
                "version": serializers.CharField(),
                "license": serializers.CharField(required=False, default=publish.DEFAULT_LICENSE),
                "description": serializers.CharField(required=False),
            },
        ),
        parameters=IDEMPOTENCY_KEY,
        responses={202: ReleaseStarted, **ERRORS},
    )
    @idempotent_write
    def post(self, request, slug):
        release = publish.release_request(user=request.user, slug=slug, body=body_of(request))
        return Response({"job": release.job_id, "version": release.version}, status=status.HTTP_202_ACCEPTED)


class ReleaseDetailView(APIView):
    @extend_schema(
        summary="One release: its card and files (supervisors)", responses={200: ReleaseSerializer, **ERRORS}
    )
    def get(self, request, slug, version):
        release = publish.release_for_project(user=request.user, slug=slug, version=version)
        return Response(ReleaseSerializer(release).data)


class ReleaseDownloadView(APIView):
    @extend_schema(
        summary="A release as one zip (supervisors)",
        description="Every file of the release in one folder; 404 while the release is not ready.",
        responses={(200, "application/zip"): OpenApiResponse(OpenApiTypes.BINARY), **ERRORS},
    )
    def get(self, request, slug, version):
        release = publish.release_for_project(user=request.user, slug=slug, version=version)
        response = FileResponse(publish.release_zip(release), as_attachment=True, filename=publish.zip_name(release))
        response["Content-Type"] = "application/zip"
        return response


Change = inline_serializer("ReleaseChange", {"external_id": serializers.CharField()})


class ReleaseDiffView(APIView):
    @extend_schema(
        summary="What changed between two releases (supervisors)",
        description=(
            "Per split: items added, removed, moved between splits, relabelled (with the effective decision of the "
            "item in each release) and edited (same label, other content). Read from the releases' manifests."
        ),
        responses={
            200: inline_serializer(
                "ReleaseDiff",
                {
                    "a": serializers.CharField(),
                    "b": serializers.CharField(),
                    "totals": serializers.DictField(child=serializers.IntegerField()),
                    "splits": serializers.DictField(
                        child=serializers.DictField(child=serializers.ListField(child=Change))
                    ),
                },
            ),
            **ERRORS,
        },
    )
    def get(self, request, slug, version, other):
        return Response(publish.release_diff(user=request.user, slug=slug, a=version, b=other))
