from django.conf import settings
from django.db import models
from django.utils import timezone

from .projects import Project


class Job(models.Model):
    """A background run that pages and `GET /api/jobs/{id}/` poll."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    kind = models.CharField(max_length=32)
    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.CASCADE, related_name="jobs")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    progress = models.FloatField(default=0.0)
    params = models.JSONField(default=dict)
    # Uploaded input kept in the database so that a worker on another host can read it.
    input_data = models.BinaryField(null=True, blank=True, editable=False)
    result = models.JSONField(null=True, blank=True)
    error = models.JSONField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    # The job's last sign of life: when it was queued or sent again, or, while running, when
    # its worker last reported. The sweep acts on jobs whose heartbeat is too old.
    heartbeat_at = models.DateTimeField(default=timezone.now)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["status", "created_at"], name="job_status_idx")]
