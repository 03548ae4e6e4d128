"""The bias analysis of docs/api.md "Dataset release": start one (a job) and read the latest."""

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.release.bias import bias_latest, bias_request
from annotation.rest.idempotency import idempotent_write
from annotation.rest.schema import ERRORS
from annotation.rest.serializers import ErrorsSerializer

BiasRequestSerializer = inline_serializer(
    "BiasRequest",
    {
        "split": serializers.ChoiceField(
            choices=["train", "dev", "test"],
            required=False,
            default="train",
            help_text="The split analysed and the biased models are fitted on.",
        ),
        "smoothing": serializers.FloatField(
            required=False, default=100.0, help_text="Add-k smoothing of the PMI counts (FarsTail: 100)."
        ),
        "evaluation": serializers.IntegerField(
            required=False,
            allow_null=True,
            help_text="The id of a scored evaluation of this project: the test items' hard(hypothesis) flags come "
            "from its predictions (hard = wrong) instead of Mashov's hypothesis-only model.",
        ),
    },
)

ConfusionSerializer = inline_serializer(
    "BiasConfusion",
    {
        "labels": serializers.ListField(child=serializers.CharField()),
        "rows": serializers.CharField(),
        "columns": serializers.CharField(),
        "matrix": serializers.ListField(child=serializers.ListField(child=serializers.IntegerField())),
    },
)


class BiasBaselineSplitSerializer(serializers.Serializer):
    """A biased model's figures on one split (absent for the split it was fitted on)."""

    accuracy = serializers.FloatField(allow_null=True)
    confusion = ConfusionSerializer


BaselineSerializer = inline_serializer(
    "BiasBaseline",
    {
        "train_split": serializers.CharField(),
        "dev": BiasBaselineSplitSerializer(required=False),
        "test": BiasBaselineSplitSerializer(required=False),
    },
)
FlagSerializer = inline_serializer(
    "BiasFlags",
    {
        "hard": serializers.IntegerField(),
        "items": serializers.IntegerField(),
        "agreement_with_imported": serializers.FloatField(allow_null=True),
        "evaluation": inline_serializer(
            "BiasFlagsEvaluation",
            {"id": serializers.IntegerField(), "name": serializers.CharField()},
            required=False,
            help_text="the evaluation whose predictions gave these flags, when the request named one",
        ),
    },
)


class BiasClassSerializer(serializers.Serializer):
    """Table 2's row of one class (or "total")."""

    items = serializers.IntegerField()
    premise_tokens = serializers.FloatField()
    hypothesis_tokens = serializers.FloatField()
    premise_processed_tokens = serializers.FloatField()
    hypothesis_processed_tokens = serializers.FloatField()
    overlap = serializers.FloatField(allow_null=True)
    processed_overlap = serializers.FloatField(allow_null=True)


BiasResultSerializer = inline_serializer(
    "BiasAnalysis",
    {
        "split": serializers.CharField(),
        "smoothing": serializers.FloatField(),
        "classes": serializers.DictField(child=BiasClassSerializer(), help_text="FarsTail Table 2 per gold label."),
        "splits": serializers.DictField(
            child=serializers.DictField(child=BiasClassSerializer()),
            help_text='FarsTail Table 2 whole: every split\'s rows per gold label and its "total" row.',
        ),
        "corpus": inline_serializer(
            "BiasCorpus",
            {"tokens": serializers.IntegerField(), "stopwords_or_one_character": serializers.IntegerField()},
            help_text="Table 2's corpus line: the distinct tokens of every text, and how many are stopwords or one "
            "character long.",
        ),
        "tokenizer": serializers.CharField(
            help_text='What cut the tokens and gave the stoplist: "hazm <version>" (Persian projects where '
            'requirements-persian.txt is installed) or "mashov".'
        ),
        "pmi": serializers.ListField(
            child=inline_serializer(
                "BiasPmi",
                {
                    "word": serializers.CharField(),
                    "label": serializers.CharField(),
                    "pmi": serializers.FloatField(),
                    "count": serializers.IntegerField(),
                    "total": serializers.IntegerField(),
                },
            ),
            help_text="FarsTail Table 4: the top words of each class by PMI, highest first.",
        ),
        "baselines": inline_serializer(
            "BiasBaselines", {"hypothesis_only": BaselineSerializer, "overlap": BaselineSerializer}
        ),
        "flags": serializers.DictField(
            child=FlagSerializer, help_text='"hard(hypothesis)" and "hard(overlap)" over the test items.'
        ),
    },
)


class BiasView(APIView):
    @extend_schema(
        summary="The latest bias analysis (FarsTail §4.3)",
        description="Project staff. 404 until an analysis has finished.",
        responses={200: BiasResultSerializer, **ERRORS},
    )
    def get(self, request, slug):
        return Response(bias_latest(user=request.user, slug=slug))

    @extend_schema(
        summary="Start a bias analysis (on the worker)",
        description=(
            "Supervisors of NLI projects. Table 2, Table 4's PMI words, the hypothesis-only and overlap-based "
            "biased models (fitted on `split`, applied to dev and test) and the test items' hard(...) flags. "
            "409 while one is queued or running."
        ),
        request=BiasRequestSerializer,
        parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER)],
        responses={
            202: inline_serializer("BiasJob", {"job": serializers.IntegerField()}),
            409: ErrorsSerializer,
            **ERRORS,
        },
    )
    @idempotent_write
    def post(self, request, slug):
        job = bias_request(user=request.user, slug=slug, data=request.data)
        return Response({"job": job.pk}, status=status.HTTP_202_ACCEPTED)
