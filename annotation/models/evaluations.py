from django.conf import settings
from django.db import models

from .jobs import Job
from .projects import Project


class Evaluation(models.Model):
    """One model's predictions scored against a project's gold, with FarsTail Table 5's easy
    and hard subsets for NLI (annotation/release/evaluation.py). Its state is its job's: queued, running, done
    (figures stored) or failed (the job's error says why)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="evaluations")
    name = models.CharField(max_length=200)
    # The split scored; "" for every split.
    split = models.CharField(max_length=32, blank=True, default="")
    job = models.ForeignKey(Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    # SHA-256 of the predictions file as uploaded.
    digest = models.CharField(max_length=64)
    items = models.PositiveIntegerField(default=0)
    # Nested figures, each {"value", "ci_low", "ci_high"}, plus figures without an
    # interval (confusion matrix, counts); null until the job is done.
    figures = models.JSONField(null=True, blank=True)
    # How the intervals were resampled: {"n_resamples", "confidence", "seed"}.
    bootstrap = models.JSONField(default=dict, blank=True)
    # The per-item arrays the figures come from (numpy .npz, with the items' keys), kept so
    # that two evaluations can be compared item by item (paired bootstrap).
    per_item = models.BinaryField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["project", "created_at"], name="evaluation_project_idx")]

    def __str__(self) -> str:
        return f"{self.project_id}:{self.name}"

    @property
    def status(self) -> str:
        return self.job.status if self.job_id else Job.Status.FAILED
