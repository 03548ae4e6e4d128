"""The decision ledger over REST: an item's history and a supervisor's reopen
(docs/api.md "Aggregation, annotator quality, adjudication")."""

from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import access
from annotation.errors import PermissionDenied
from annotation.rest.idempotency import idempotent_write
from annotation.rest.parsers import body_of
from annotation.rest.schema import ERRORS, IDEMPOTENCY_KEY
from annotation.selectors.names import shown_name
from annotation.services.decisions import decision_history, item_reopen_by_supervisor


class DecisionSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    round = serializers.IntegerField()
    method = serializers.CharField(
        help_text=(
            "k_of_n, majority, dawid_skene, mace, adjudication, import, reopen, revision, the kind's own rule, "
            "a curation removal (near_duplicate, back_translation_filter, withdrawn) or the restore that cancels one"
        )
    )
    rank = serializers.IntegerField(
        help_text=(
            "precedence: 3 adjudication or a curation removal and its restore, 2 the chosen method on the worker, "
            "1 the round's rule or an import, 0 reopen or revision"
        )
    )
    value = serializers.JSONField(allow_null=True, help_text="the decided gold (a label), null for none")
    status = serializers.CharField(help_text="the item status the decision moved it to")
    confidence = serializers.FloatField(allow_null=True)
    by = serializers.SerializerMethodField(
        help_text="who decided: a username to supervisors, the export's pseudonym to reviewers; null for a rule or a job"
    )
    job = serializers.IntegerField(source="job_id", allow_null=True)
    override = serializers.BooleanField()
    comment = serializers.CharField()
    supersedes = serializers.IntegerField(source="supersedes_id", allow_null=True)
    created_at = serializers.DateTimeField()

    def get_by(self, decision) -> str | None:
        if decision.decided_by_id is None:
            return None
        project, names = self.context["project"], self.context["names"]
        return shown_name(project.pk, decision.decided_by_id, decision.decided_by.username, names=names)


class ItemDecisionsView(APIView):
    @extend_schema(
        summary="An item's decision history (supervisors; reviewers see pseudonyms)",
        description="Every decision of the item, oldest first; the effective one is the last of the highest rank in the item's current round.",
        responses={200: DecisionSerializer(many=True), **ERRORS},
    )
    def get(self, request, item_id):
        item = access.access_item_for_staff(request.user, item_id)
        context = {"project": item.project, "names": access.supervises(request.user, item.project)}
        return Response(DecisionSerializer(decision_history(item), many=True, context=context).data)


class ReopenRequestSerializer(serializers.Serializer):
    reason = serializers.CharField(help_text="why the decided item is reopened (kept in the history and the audit log)")


class ItemReopenView(APIView):
    @extend_schema(
        summary="Reopen a decided item: a new round with no gold (supervisors)",
        description="The reopen is a decision of the new round; earlier decisions and votes stay in the history. 409 when the item's round is not decided.",
        request=ReopenRequestSerializer,
        parameters=IDEMPOTENCY_KEY,
        responses={201: DecisionSerializer, 409: ERRORS[400], **ERRORS},
    )
    @idempotent_write
    def post(self, request, item_id):
        item = access.access_item_for_staff(request.user, item_id)
        if not access.supervises(request.user, item.project):
            raise PermissionDenied(_("Only supervisors reopen decided items."))
        decision = item_reopen_by_supervisor(user=request.user, item=item, reason=body_of(request).get("reason"))
        context = {"project": item.project, "names": True}
        return Response(DecisionSerializer(decision, context=context).data, status=status.HTTP_201_CREATED)
