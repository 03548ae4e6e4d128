"""Model evaluation (docs/api.md "Dataset release"): upload predictions, list, detail, compare.
Each view parses, calls annotation.release.evaluation (writes) or
annotation.selectors.evaluations (reads), renders."""

from django.utils.translation import gettext
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import access
from annotation.errors import InvalidInput
from annotation.release import evaluation as evaluations
from annotation.release.predictions import FORMATS
from annotation.rest.idempotency import idempotent_write
from annotation.rest.parsers import StrictFormParser, StrictMultiPartParser
from annotation.rest.schema import ERRORS, IDEMPOTENCY_KEY
from annotation.rest.serializers import ErrorsSerializer
from annotation.selectors import evaluations as evaluation_selectors

FIGURES_HELP = (
    "NLI kinds: accuracy, macro_f1, weighted_f1, per_class {label: {precision, recall, f1, support}}, confusion, "
    'subsets {"hard(overlap)"|"hard(hypothesis)": {easy, hard}}; qa_authoring: exact_match, f1, tlnls, each also '
    "under answerable and unanswerable; phrase_pair: accuracy, macro_f1, weighted_f1, per_class, confusion (with "
    "`normalized`: each gold row's shares), soft_coherence, hard_coherence, and the coherence paper's six scenarios "
    "tracks {positives|all: {images|headlines|all: {accuracy, macro_f1, weighted_f1}}}."
)


# The form fields that carry a kind's choices (`EvaluationScorer.options`); a kind that
# takes none refuses them with a 400 naming the field.
OPTION_FIELDS = ("hard_flags",)


class EvaluationRequestSerializer(serializers.Serializer):
    file = serializers.FileField(
        help_text='JSONL {"id", "prediction"} (phrase_pair: also "reversed"), CSV id,prediction, or for qa_authoring SQuAD\'s predictions dict {question id: text}'
    )
    name = serializers.CharField(help_text="the model's name")
    split = serializers.CharField(required=False, help_text='the split scored (default "test"); "all" for every split')
    format = serializers.ChoiceField(choices=FORMATS, required=False, help_text="found from the file when left out")
    hard_flags = serializers.ChoiceField(
        choices=["file", "computed"],
        required=False,
        help_text="NLI kinds: the hard/easy flags the subsets read: `file` (default) the imported file's hard(...) "
        "column where the item has one, else the bias analysis's computed flag; `computed` only the computed flags",
    )


class EvaluationStartedSerializer(serializers.Serializer):
    job = serializers.IntegerField()
    id = serializers.IntegerField()


class EvaluationSummarySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    split = serializers.CharField()
    created_at = serializers.DateTimeField()
    status = serializers.ChoiceField(choices=["queued", "running", "done", "failed"])
    job = serializers.IntegerField(allow_null=True)
    items = serializers.IntegerField()
    figures = serializers.JSONField(allow_null=True, help_text="the figures without intervals. " + FIGURES_HELP)


class EvaluationDetailSerializer(EvaluationSummarySerializer):
    figures = serializers.JSONField(
        allow_null=True,
        help_text='every figure as {"value", "ci_low", "ci_high"} (95 % bootstrap over items). ' + FIGURES_HELP,
    )
    bootstrap = serializers.JSONField(help_text="n_resamples, confidence, seed")
    primary = serializers.CharField(help_text="the figure the compare view's verdict reads")
    options = serializers.JSONField(help_text="the kind's choices it was scored with (NLI kinds: hard_flags)")
    slice = serializers.CharField(required=False, help_text="the attribute asked for with ?slice=")
    slices = serializers.JSONField(
        required=False,
        help_text='with ?slice=: {"<value>": {"items", <the kind\'s top-level figures>, "ci": {figure: [low, high]}}}, '
        '95 % seeded percentile bootstrap over the slice\'s items; "" holds the items without the attribute',
    )
    error = serializers.JSONField(allow_null=True)


class EvaluationCompareSerializer(serializers.Serializer):
    a = EvaluationSummarySerializer()
    b = EvaluationSummarySerializer()
    split = serializers.CharField()
    items = serializers.IntegerField(help_text="items both were scored on")
    primary = serializers.CharField()
    verdict = serializers.ChoiceField(choices=["a_better", "b_better", "no_clear_difference", "undecided"])
    figures = serializers.JSONField(
        help_text='every figure as {"difference", "ci_low", "ci_high", "share_a_better"}: A − B, paired bootstrap'
    )
    bootstrap = serializers.JSONField()


class EvaluationListView(APIView):
    parser_classes = [StrictMultiPartParser, StrictFormParser]

    @extend_schema(responses={200: EvaluationSummarySerializer(many=True), **ERRORS})
    def get(self, request, slug):
        return Response(
            EvaluationSummarySerializer(
                evaluation_selectors.evaluations_for_project(user=request.user, slug=slug), many=True
            ).data
        )

    @extend_schema(
        request={"multipart/form-data": EvaluationRequestSerializer},
        parameters=IDEMPOTENCY_KEY,
        responses={202: EvaluationStartedSerializer, 409: ErrorsSerializer, **ERRORS},
    )
    @idempotent_write
    def post(self, request, slug):
        upload = request.FILES.get("file")
        if upload is None:
            # Who may evaluate is checked before what was sent.
            access.access_project_for_supervisor(request.user, slug)
            raise InvalidInput(gettext("a predictions file is required"), field="file")
        evaluation = evaluations.evaluation_request(
            user=request.user,
            slug=slug,
            data=upload.read(),
            filename=upload.name or "",
            name=request.data.get("name"),
            split=request.data.get("split"),
            fmt=request.data.get("format") or "",
            options={key: request.data.get(key) for key in OPTION_FIELDS if key in request.data},
        )
        return Response({"job": evaluation.job_id, "id": evaluation.pk}, status=status.HTTP_202_ACCEPTED)


class EvaluationDetailView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter(
                "slice",
                str,
                required=False,
                description="an item attribute (split, source, or a field of the items' extra such as "
                "hard(overlap)): adds the figures of each slice of the items, with intervals",
            )
        ],
        responses={200: EvaluationDetailSerializer, 409: ErrorsSerializer, **ERRORS},
    )
    def get(self, request, slug, evaluation_id):
        return Response(
            EvaluationDetailSerializer(
                evaluation_selectors.evaluation_detail(
                    user=request.user,
                    slug=slug,
                    evaluation_id=evaluation_id,
                    slice_by=request.query_params.get("slice"),
                )
            ).data
        )


class EvaluationCompareView(APIView):
    @extend_schema(
        parameters=[OpenApiParameter("a", int, required=True), OpenApiParameter("b", int, required=True)],
        responses={200: EvaluationCompareSerializer, 409: ErrorsSerializer, **ERRORS},
    )
    def get(self, request, slug):
        compared = evaluation_selectors.evaluation_compare(
            user=request.user, slug=slug, a=request.query_params.get("a"), b=request.query_params.get("b")
        )
        return Response(EvaluationCompareSerializer(compared).data)
