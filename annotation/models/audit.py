from django.conf import settings as django_settings
from django.db import models

from .projects import Project


class AuditEntry(models.Model):
    """One supervisor action on a project (or on an account, with no project): who, when,
    what, and the state before and after. Written only by `services.audit.audit_record`, in
    the transaction of the action it records, so an action that rolls back leaves no entry.
    Never updated or deleted by the product: the log is append-only."""

    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.CASCADE, related_name="audit_entries")
    actor = models.ForeignKey(django_settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    # What was done, from `services.audit.ACTIONS` ("settings_change", "adjudication", …).
    action = models.CharField(max_length=32)
    # What it was done to, readable without a join: "item:<id>", "member:<username>", "user:<username>".
    target = models.CharField(max_length=200, blank=True, default="")
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    comment = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["project", "action", "-created_at"], name="audit_project_action_idx")]
