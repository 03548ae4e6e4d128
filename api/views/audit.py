"""The project's audit log (README "Audit log"): every supervisor action, newest first."""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers

from annotation import access
from annotation.models import AuditEntry
from annotation.rest.schema import ERRORS
from annotation.selectors.audit import audit_log_for_project
from annotation.services.audit import ACTIONS


class AuditEntrySerializer(serializers.ModelSerializer):
    actor = serializers.CharField(
        source="actor.username", default=None, allow_null=True, help_text="who acted; null once the account is deleted"
    )
    before = serializers.JSONField(allow_null=True, help_text="the changed fields before the action")
    after = serializers.JSONField(allow_null=True, help_text="the changed fields after the action")

    class Meta:
        model = AuditEntry
        fields = ["id", "action", "actor", "target", "before", "after", "comment", "created_at"]


class AuditLogView(generics.ListAPIView):
    serializer_class = AuditEntrySerializer

    @extend_schema(
        summary="The project's audit log (supervisors and admins)",
        description="Every supervisor action on the project, newest first: who, when, what, the state before and after.",
        parameters=[
            OpenApiParameter("action", str, enum=list(ACTIONS), description="only entries of this action"),
            OpenApiParameter("actor", str, description="only entries by this username"),
        ],
        responses={200: AuditEntrySerializer(many=True), **ERRORS},
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        project = access.access_project_for_supervisor(self.request.user, self.kwargs["slug"])
        params = self.request.query_params
        return audit_log_for_project(project, action=params.get("action"), actor=params.get("actor"))
