"""The release stage's curation records (FarsTail §3.2): near-duplicate candidate pairs with
the supervisor's decision, and every run of the near-duplicate search, the split assignment
and the leak check with its parameters and figures."""

from django.conf import settings
from django.db import models

from .items import Item
from .jobs import Job
from .projects import Project


class DuplicatePair(models.Model):
    """Two items of different groups whose premises and hypotheses are both more similar
    than the run's threshold. `item_a` comes first in the project's order (position, id):
    "remove" takes out `item_b`, the later one."""

    class Decision(models.TextChoices):
        KEEP = "keep"
        REMOVE = "remove"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="duplicate_pairs")
    item_a = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    item_b = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    premise_similarity = models.FloatField()
    hypothesis_similarity = models.FloatField()
    representation = models.CharField(max_length=16)
    threshold = models.FloatField()
    decision = models.CharField(max_length=8, choices=Decision.choices, blank=True, default="")
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    found_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "item_a", "item_b"], name="duplicate_pair_unique"),
            models.CheckConstraint(condition=~models.Q(item_a=models.F("item_b")), name="duplicate_pair_two_items"),
        ]
        ordering = ["project_id", "pk"]


class CurationRun(models.Model):
    """One finished run of a curation job: its parameters (thresholds, representation, shares,
    seed) and its figures, so that a release says how its splits and removals were made."""

    class Kind(models.TextChoices):
        DUPLICATES = "duplicates"
        SPLITS = "splits"
        LEAKS = "leaks"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="curation_runs")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    params = models.JSONField(default=dict)
    result = models.JSONField(default=dict)
    job = models.ForeignKey(Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-pk"]
        indexes = [models.Index(fields=["project", "kind", "-created_at"], name="curation_run_latest_idx")]
