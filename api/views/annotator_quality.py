"""Annotator quality and adjudication (docs/api.md "Aggregation, annotator quality, adjudication")."""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import access
from annotation.rest.idempotency import idempotent_write
from annotation.rest.pagination import PageNumberPagination, page_of
from annotation.rest.parsers import body_of
from annotation.rest.schema import ERRORS, IDEMPOTENCY_KEY
from annotation.selectors.annotator_quality import (
    REASONS,
    adjudication_queue_for_project,
    agreement_with_and_without_adjudicated,
    annotator_quality_for_project,
)
from annotation.services.adjudication import item_adjudicate

_SHARE = {"allow_null": True, "min_value": 0.0, "max_value": 1.0}


class CompetenceSerializer(serializers.Serializer):
    dawid_skene = serializers.FloatField(
        allow_null=True, help_text="Dawid-Skene expected accuracy, null when not computed"
    )
    mace = serializers.FloatField(allow_null=True, help_text="MACE probability of not spamming, null when not computed")


class CoherenceSerializer(serializers.Serializer):
    probes = serializers.IntegerField()
    soft = serializers.FloatField(allow_null=True)
    hard = serializers.FloatField(allow_null=True)


class GradesSerializer(serializers.Serializer):
    reviewed = serializers.IntegerField()
    mean = serializers.FloatField(help_text="0 rejected, 1 verified, 2 good, 3 gold")
    counts = serializers.DictField(child=serializers.IntegerField())


class SuggestionUseSerializer(serializers.Serializer):
    shown = serializers.IntegerField(help_text="annotations shown a model's suggestion")
    taken = serializers.IntegerField(help_text="of those, submitted with the suggested label")
    acceptance_rate = serializers.FloatField(**_SHARE)
    suggestion_wrong = serializers.IntegerField(help_text="of those, items whose decided gold is another label")
    agreement_when_wrong = serializers.FloatField(
        **_SHARE, help_text="share of suggestion_wrong where they gave the gold (anchoring when low)"
    )


class AnnotatorQualitySerializer(serializers.Serializer):
    annotator = serializers.CharField(help_text="username (supervisors only see this list)")
    items = serializers.IntegerField(help_text="items annotated (coherence probes left out)")
    seconds_median = serializers.FloatField(allow_null=True, help_text="median seconds from claim to submit")
    agreement_with_consensus = serializers.FloatField(**_SHARE)
    consensus_items = serializers.IntegerField()
    agreement_without_adjudicated = serializers.FloatField(**_SHARE, help_text="over the items nobody adjudicated")
    agreement_with_gold = serializers.FloatField(**_SHARE, help_text="null where no item has a gold")
    gold_items = serializers.IntegerField()
    kappa = serializers.FloatField(allow_null=True, help_text="Cohen's kappa against the consensus (scikit-learn)")
    competence = CompetenceSerializer()
    coherence = CoherenceSerializer(allow_null=True, help_text="phrase pairs: soft and hard coherence over the probes")
    review_grades = GradesSerializer(allow_null=True)
    suggestions = SuggestionUseSerializer(allow_null=True, help_text="null where no suggestion was shown")
    flagged = serializers.BooleanField(help_text="kappa below the project's quality_flag_below")
    status = serializers.CharField(allow_null=True)
    trusted = serializers.BooleanField(allow_null=True)
    adjudicator = serializers.BooleanField(allow_null=True)


class AnnotatorsView(APIView):
    @extend_schema(
        summary="Per-annotator quality figures (supervisors)",
        responses={200: AnnotatorQualitySerializer(many=True), **ERRORS},
    )
    def get(self, request, slug):
        project = access.access_project_for_supervisor(request.user, slug)
        return Response(annotator_quality_for_project(project))


class VoteSerializer(serializers.Serializer):
    annotator = serializers.CharField(
        help_text="username for supervisors, the export's pseudonym for other adjudicators"
    )
    label = serializers.CharField(allow_null=True)
    competence = CompetenceSerializer()


class AggregateSerializer(serializers.Serializer):
    label = serializers.CharField(allow_null=True)
    confidence = serializers.FloatField()


class IncoherentSerializer(serializers.Serializer):
    annotator = serializers.CharField()
    label = serializers.CharField(help_text="their label on the pair (A, B)")
    reversed_label = serializers.CharField(help_text="their label on the reversed pair (B, A)")


class QueueItemSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    external_id = serializers.CharField()
    payload = serializers.DictField()
    status = serializers.CharField()
    round = serializers.IntegerField()
    reference_label = serializers.CharField(allow_null=True)
    gold = serializers.CharField(allow_null=True)
    reasons = serializers.ListField(child=serializers.ChoiceField(choices=REASONS))
    votes = VoteSerializer(many=True)
    aggregates = serializers.DictField(child=AggregateSerializer())
    incoherent = IncoherentSerializer(many=True)


class AgreementPartSerializer(serializers.Serializer):
    items = serializers.IntegerField()
    alpha = serializers.FloatField(allow_null=True)
    agreement_with_consensus = serializers.FloatField(**_SHARE)


class AdjudicationAgreementSerializer(serializers.Serializer):
    adjudicated = serializers.IntegerField()
    with_adjudicated = AgreementPartSerializer(allow_null=True)
    without_adjudicated = AgreementPartSerializer(allow_null=True)


class AdjudicationQueueView(APIView):
    @extend_schema(
        summary="Items waiting for an adjudicator (supervisors and adjudicators)",
        description=(
            "Items whose round failed, items where the aggregation methods disagree, and originals of reversed-pair "
            "probes one annotator answered incoherently; each with every vote of its current round, the voter's "
            "competence and why it is here. `agreement` reports agreement with and without the adjudicated items."
        ),
        parameters=[OpenApiParameter("page", int), OpenApiParameter("page_size", int)],
        responses={
            200: page_of("AdjudicationPage", QueueItemSerializer, agreement=AdjudicationAgreementSerializer()),
            **ERRORS,
        },
    )
    def get(self, request, slug):
        project = access.access_project_for_adjudicator(request.user, slug)
        queue = adjudication_queue_for_project(project, request.user, names=access.supervises(request.user, project))
        paginator = PageNumberPagination(agreement=agreement_with_and_without_adjudicated(project))
        page = paginator.paginate_queryset(queue, request, view=self)
        return paginator.get_paginated_response(page)


class AdjudicateRequestSerializer(serializers.Serializer):
    label = serializers.CharField(help_text="one of the kind's labels")
    comment = serializers.CharField(required=False, trim_whitespace=False)
    override = serializers.BooleanField(
        required=False,
        help_text="supervisors only: decide an item outside the queue (a comment saying why is required)",
    )


class AdjudicationSerializer(serializers.Serializer):
    item = serializers.IntegerField(source="item_id")
    round = serializers.IntegerField()
    label = serializers.CharField()
    comment = serializers.CharField()
    reasons = serializers.ListField(child=serializers.CharField())
    adjudicator = serializers.CharField(source="adjudicator.username", default=None)
    adjudicated = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()

    def get_adjudicated(self, _adjudication) -> bool:
        return True


class AdjudicateView(APIView):
    @extend_schema(
        summary="Decide an item as adjudicated gold (supervisors and adjudicators)",
        description=(
            "Only items in the queue; a supervisor decides another item with `override: true` and a comment (409 "
            "without). The decision outranks every method: no aggregation run changes it; a supervisor's reopen starts "
            "a new round. A second decision in the same round is a 409: the first stands."
        ),
        request=AdjudicateRequestSerializer,
        parameters=IDEMPOTENCY_KEY,
        responses={201: AdjudicationSerializer, 409: ERRORS[400], **ERRORS},
    )
    @idempotent_write
    def post(self, request, item_id):
        adjudication = item_adjudicate(user=request.user, item_id=item_id, data=body_of(request))
        return Response(AdjudicationSerializer(adjudication).data, status=status.HTTP_201_CREATED)
