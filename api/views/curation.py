"""Dataset release, curation (docs/api.md "Dataset release"): near-duplicates, leak-free splits,
the leak check. Thin: parse, call annotation.release, answer."""

from django.utils.translation import gettext
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field, inline_serializer
from rest_framework import generics, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.errors import InvalidInput
from annotation.release import duplicates, splits
from annotation.release.curation_jobs import item_brief
from annotation.rest.idempotency import idempotent_write
from annotation.rest.parsers import StrictJSONParser, body_of
from annotation.rest.schema import ERRORS, IDEMPOTENCY_KEY
from annotation.rest.serializers import ErrorsSerializer
from annotation.wording import join_list

JobStarted = inline_serializer("CurationJobStarted", {"job": serializers.IntegerField()})
CONFLICT = {409: ErrorsSerializer}

ItemBrief = inline_serializer(
    "CurationItem",
    {
        "id": serializers.IntegerField(),
        "external_id": serializers.CharField(),
        "payload": serializers.JSONField(),
        "status": serializers.CharField(),
        "split": serializers.CharField(),
        "group": serializers.CharField(),
    },
)


class DuplicatePairSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    a = serializers.SerializerMethodField()
    b = serializers.SerializerMethodField()
    premise_similarity = serializers.FloatField()
    hypothesis_similarity = serializers.FloatField()
    decision = serializers.SerializerMethodField()
    representation = serializers.CharField()
    threshold = serializers.FloatField()

    @extend_schema_field(ItemBrief)
    def get_a(self, pair) -> dict:
        return item_brief(pair.item_a)

    @extend_schema_field(ItemBrief)
    def get_b(self, pair) -> dict:
        return item_brief(pair.item_b)

    def get_decision(self, pair) -> str | None:
        return pair.decision or None


def _job_started(job) -> Response:
    return Response({"job": job.pk}, status=status.HTTP_202_ACCEPTED)


class DuplicatesView(generics.ListAPIView):
    serializer_class = DuplicatePairSerializer
    parser_classes = [StrictJSONParser]

    @extend_schema(
        summary="Near-duplicate candidate pairs (FarsTail §3.2)",
        description="Supervisors and reviewers. `a` comes first in the project's order; removing a pair removes `b`.",
        parameters=[OpenApiParameter("decision", str, enum=["keep", "remove", "none"])],
        responses={200: DuplicatePairSerializer(many=True), **ERRORS},
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        return duplicates.duplicate_pairs_for_project(
            user=self.request.user, slug=self.kwargs["slug"], decision=self.request.query_params.get("decision")
        )

    @extend_schema(
        summary="Search near-duplicates (on the worker)",
        description=(
            "Supervisors of NLI projects. Pairs of items of different groups whose premises AND hypotheses both have "
            "cosine similarity above `threshold` (0.8). `representation`: bow (counts, default), tfidf, or embedding "
            "(needs requirements-embeddings.txt; without it a 400 saying what to install). A second search while one "
            "is queued or running is a 409."
        ),
        request=inline_serializer(
            "DuplicatesRequest",
            {
                "threshold": serializers.FloatField(required=False, default=0.8),
                "representation": serializers.ChoiceField(choices=["bow", "tfidf", "embedding"], required=False),
            },
        ),
        parameters=IDEMPOTENCY_KEY,
        responses={202: JobStarted, **CONFLICT, **ERRORS},
    )
    @idempotent_write
    def post(self, request, slug):
        return _job_started(duplicates.duplicates_request(user=request.user, slug=slug, body=body_of(request)))


class DuplicateDecisionView(APIView):
    parser_classes = [StrictJSONParser]

    @extend_schema(
        summary="Keep or remove a near-duplicate pair",
        operation_id="projects_duplicates_decide",
        description=(
            "Supervisors. `remove` removes the pair's later item `b` (it leaves the queue and the default exports, with "
            "the reason recorded); `keep` leaves both, restoring `b` if this pair had removed it."
        ),
        request=inline_serializer(
            "DuplicateDecision", {"decision": serializers.ChoiceField(choices=["keep", "remove"])}
        ),
        responses={200: DuplicatePairSerializer, **ERRORS},
    )
    def post(self, request, slug, pair_id):
        data = body_of(request)
        unknown = set(data) - {"decision"}
        if unknown:
            raise InvalidInput(
                gettext("unknown field(s): %(fields)s") % {"fields": join_list(sorted(unknown))}, field="body"
            )
        pair = duplicates.duplicate_decide(user=request.user, slug=slug, pair_id=pair_id, decision=data.get("decision"))
        return Response(DuplicatePairSerializer(pair).data)


class DuplicatesRemoveAllView(APIView):
    @extend_schema(
        summary="Remove the later item of every undecided pair",
        request=None,
        responses={
            200: inline_serializer(
                "DuplicatesRemoved", {"pairs": serializers.IntegerField(), "removed": serializers.IntegerField()}
            ),
            **ERRORS,
        },
    )
    def post(self, request, slug):
        return Response(duplicates.duplicates_remove_all(user=request.user, slug=slug))


class DuplicatesRestoreView(APIView):
    parser_classes = [StrictJSONParser]

    @extend_schema(
        summary="Restore items removed as near-duplicates",
        description="Supervisors. Each item goes back to the status it had; its pair is marked keep. All or nothing.",
        request=inline_serializer(
            "DuplicatesRestoreRequest", {"items": serializers.ListField(child=serializers.IntegerField())}
        ),
        responses={200: inline_serializer("DuplicatesRestored", {"restored": serializers.IntegerField()}), **ERRORS},
    )
    def post(self, request, slug):
        data = body_of(request)
        unknown = set(data) - {"items"}
        if unknown:
            raise InvalidInput(
                gettext("unknown field(s): %(fields)s") % {"fields": join_list(sorted(unknown))}, field="body"
            )
        return Response(duplicates.duplicates_restore(user=request.user, slug=slug, item_ids=data.get("items")))


SplitReport = inline_serializer(
    "SplitReport",
    {
        "shares": serializers.DictField(child=serializers.FloatField(), help_text="Realised share of items per split."),
        "counts": serializers.DictField(child=serializers.IntegerField()),
        "components": serializers.IntegerField(allow_null=True, help_text="Components of groups after merging."),
        "merged_components": serializers.IntegerField(
            required=False, help_text="Components holding more than one group."
        ),
        "largest_component": serializers.IntegerField(allow_null=True, help_text="Items in the largest component."),
        "seed": serializers.IntegerField(allow_null=True),
        "leak_threshold": serializers.FloatField(allow_null=True),
        "items": serializers.IntegerField(),
        "computed_at": serializers.DateTimeField(allow_null=True),
        "job": serializers.IntegerField(allow_null=True),
    },
)


class SplitsView(APIView):
    parser_classes = [StrictJSONParser]

    @extend_schema(summary="The latest split assignment's report", responses={200: SplitReport, **ERRORS})
    def get(self, request, slug):
        return Response(splits.split_report_for_project(user=request.user, slug=slug))

    @extend_schema(
        summary="Assign leak-free grouped splits (on the worker)",
        description=(
            "Supervisors. Groups stay together; for NLI kinds groups joined by a premise OR hypothesis cosine above "
            "`leak_threshold` (0.9) are merged; then a seeded split by realised share (NLI 70/15/15, qa_authoring "
            "90/5/5 by article). Written to the items' split. Same inputs, same result. 409 while one runs."
        ),
        request=inline_serializer(
            "SplitsRequest",
            {
                "shares": serializers.DictField(child=serializers.FloatField(), required=False),
                "seed": serializers.IntegerField(required=False),
                "leak_threshold": serializers.FloatField(required=False),
            },
        ),
        parameters=IDEMPOTENCY_KEY,
        responses={202: JobStarted, **CONFLICT, **ERRORS},
    )
    @idempotent_write
    def post(self, request, slug):
        return _job_started(splits.splits_request(user=request.user, slug=slug, body=body_of(request)))


LeakReport = inline_serializer(
    "LeakReport",
    {
        "threshold": serializers.FloatField(allow_null=True, help_text="null before any check"),
        "count": serializers.IntegerField(
            allow_null=True, help_text="Item pairs in different splits above the threshold."
        ),
        "by_splits": serializers.DictField(child=serializers.IntegerField()),
        "examples": serializers.ListField(
            child=inline_serializer(
                "LeakExample", {"a": ItemBrief, "b": ItemBrief, "similarity": serializers.FloatField()}
            )
        ),
        "items": serializers.IntegerField(allow_null=True),
        "groups_across_splits": serializers.IntegerField(allow_null=True),
        "computed_at": serializers.DateTimeField(allow_null=True),
        "job": serializers.IntegerField(allow_null=True),
    },
)


class LeaksView(APIView):
    parser_classes = [StrictJSONParser]

    @extend_schema(summary="The latest leak check", responses={200: LeakReport, **ERRORS})
    def get(self, request, slug):
        return Response(splits.leak_report_for_project(user=request.user, slug=slug))

    @extend_schema(
        summary="Check the current splits for leaks (on the worker)",
        description="Supervisors. Counts item pairs in different splits whose premise OR hypothesis cosine is above `threshold` (0.9).",
        request=inline_serializer("LeaksRequest", {"threshold": serializers.FloatField(required=False, default=0.9)}),
        parameters=IDEMPOTENCY_KEY,
        responses={202: JobStarted, **CONFLICT, **ERRORS},
    )
    @idempotent_write
    def post(self, request, slug):
        return _job_started(splits.leaks_request(user=request.user, slug=slug, body=body_of(request)))
