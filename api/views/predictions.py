"""Model predictions as a project resource (docs/api.md "Model in the loop"): upload a set,
list the sets, ask the built-in model to train. Each view parses, calls
annotation.release.prediction_sets or annotation.release.baseline_model (writes) or
annotation.selectors.predictions (reads), renders."""

from django.utils.translation import gettext
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import access
from annotation.errors import InvalidInput
from annotation.release import baseline_model, prediction_sets
from annotation.rest.idempotency import idempotent_write
from annotation.rest.parsers import StrictFormParser, StrictMultiPartParser
from annotation.rest.schema import ERRORS, IDEMPOTENCY_KEY
from annotation.rest.serializers import ErrorsSerializer
from annotation.selectors import predictions as prediction_selectors
from api.views.results import JobStartedSerializer


class PredictionUploadSerializer(serializers.Serializer):
    file = serializers.FileField(
        help_text='JSONL {"id", "label", "scores": {label: probability}} ("scores" optional), or CSV id,label'
        " with optional scores.<label> columns"
    )
    name = serializers.CharField(help_text="the model's name; a new set of a name is its next version")


class PredictionSetSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    version = serializers.IntegerField()
    source = serializers.ChoiceField(choices=["upload", "built_in"])
    created_at = serializers.DateTimeField()
    items = serializers.IntegerField(help_text="items predicted")
    job = serializers.IntegerField(allow_null=True)
    trained_on = serializers.IntegerField(allow_null=True, help_text="built-in model: decided items it learned from")
    figures = serializers.JSONField(allow_null=True, help_text="built-in model: accuracy and macro_f1 on the dev split")


class PredictionSetListView(APIView):
    parser_classes = [StrictMultiPartParser, StrictFormParser]

    @extend_schema(responses={200: PredictionSetSerializer(many=True), **ERRORS})
    def get(self, request, slug):
        return Response(
            PredictionSetSerializer(
                prediction_selectors.prediction_sets_for_project(user=request.user, slug=slug), many=True
            ).data
        )

    @extend_schema(
        request={"multipart/form-data": PredictionUploadSerializer},
        parameters=IDEMPOTENCY_KEY,
        responses={201: PredictionSetSerializer, **ERRORS},
    )
    @idempotent_write
    def post(self, request, slug):
        upload = request.FILES.get("file")
        if upload is None:
            # Who may upload is checked before what was sent.
            access.access_project_for_supervisor(request.user, slug)
            raise InvalidInput(gettext("a predictions file is required"), field="file")
        stored = prediction_sets.prediction_set_upload(
            user=request.user, slug=slug, data=upload.read(), filename=upload.name or "", name=request.data.get("name")
        )
        return Response(
            PredictionSetSerializer(prediction_selectors.prediction_set_summary(stored)).data,
            status=status.HTTP_201_CREATED,
        )


class ModelTrainView(APIView):
    @extend_schema(request=None, responses={202: JobStartedSerializer, 409: ErrorsSerializer, **ERRORS})
    def post(self, request, slug):
        job = baseline_model.model_train_request(user=request.user, slug=slug)
        return Response({"job": job.pk}, status=status.HTTP_202_ACCEPTED)
