"""An item's text history over REST: a supervisor's edit of an accepted item's text and
the list of its revisions (docs/api.md "Revisions")."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import access
from annotation.rest.idempotency import idempotent_write
from annotation.rest.parsers import body_of
from annotation.rest.schema import ERRORS, IDEMPOTENCY_KEY
from annotation.selectors.names import shown_name
from annotation.services.revisions import item_revisions, item_text_edit


class ItemRevisionSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    action = serializers.CharField(
        help_text="revised or withdrawn (an author after a failed round), edited (a supervisor's text edit), "
        "answer_corrected (a corrected answer span)"
    )
    round = serializers.IntegerField(source="failed_round", help_text="the item's round when the change was made")
    reason = serializers.CharField()
    details = serializers.JSONField(help_text="edited: fields, before, after; answer_corrected: the question, old, new")
    by = serializers.SerializerMethodField(help_text="a username to supervisors, the export's pseudonym to reviewers")
    created_at = serializers.DateTimeField()

    def get_by(self, revision) -> str | None:
        if revision.created_by_id is None:
            return None
        project, names = self.context["project"], self.context["names"]
        return shown_name(project.pk, revision.created_by_id, revision.created_by.username, names=names)


class TextEditRequestSerializer(serializers.Serializer):
    changes = serializers.DictField(
        child=serializers.CharField(), help_text="field name → new text, among the kind's editable fields"
    )
    reason = serializers.CharField(help_text="why the text is edited (kept in the revision and the audit log)")


class ItemRevisionsView(APIView):
    @extend_schema(
        summary="An item's text history (its project's staff)",
        description="Every revision of the item, oldest first: authors' revisions, supervisors' text edits, "
        "corrected answer spans.",
        responses={200: ItemRevisionSerializer(many=True), **ERRORS},
    )
    def get(self, request, item_id):
        item = access.access_item_for_staff(request.user, item_id)
        context = {"project": item.project, "names": access.supervises(request.user, item.project)}
        return Response(
            ItemRevisionSerializer(item_revisions(user=request.user, item_id=item_id), many=True, context=context).data
        )


class ItemTextEditView(APIView):
    @extend_schema(
        summary="Edit an accepted item's text; its label stands (supervisors)",
        description="The new text is stored in the payload (near-duplicate and leak checks and exports read it); "
        "what stood before is a revision with the reason. 409 when the item is not accepted or nothing changes.",
        request=TextEditRequestSerializer,
        parameters=IDEMPOTENCY_KEY,
        responses={201: ItemRevisionSerializer, 409: ERRORS[400], **ERRORS},
    )
    @idempotent_write
    def post(self, request, item_id):
        revision = item_text_edit(user=request.user, item_id=item_id, body=body_of(request))
        context = {"project": revision.item.project, "names": True}
        return Response(ItemRevisionSerializer(revision, context=context).data, status=status.HTTP_201_CREATED)
