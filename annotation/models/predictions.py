from django.conf import settings
from django.db import models

from .items import Item
from .jobs import Job
from .projects import Project


class PredictionSet(models.Model):
    """A named, versioned set of model predictions over a project's items: uploaded by a
    supervisor or stored by the built-in model's job (annotation/release/model_loop.py). The
    latest set of a project is the one its pages show and its uncertainty order reads."""

    class Source(models.TextChoices):
        UPLOAD = "upload"
        BUILT_IN = "built_in"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="prediction_sets")
    name = models.CharField(max_length=200)
    # 1 for the first set of this name in the project, then one more per set.
    version = models.PositiveIntegerField()
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.UPLOAD)
    job = models.ForeignKey(Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    # SHA-256 of the uploaded file ("" for the built-in model's sets).
    digest = models.CharField(max_length=64, blank=True, default="")
    items = models.PositiveIntegerField(default=0)
    # The built-in model: decided items it learned from, the id of the project's latest
    # decision when its training was asked for (`retrain_every` counts the decisions after
    # it), and its figures on the dev split.
    trained_on = models.PositiveIntegerField(null=True, blank=True)
    last_decision = models.PositiveBigIntegerField(default=0)
    figures = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name", "version"], name="prediction_set_unique_version")
        ]

    def __str__(self) -> str:
        return f"{self.project_id}:{self.name}@{self.version}"


class Prediction(models.Model):
    """One item's predicted label in a set, with the model's probability per label when
    given, and the margin between its two most probable labels (what uncertainty order
    reads; null without scores)."""

    prediction_set = models.ForeignKey(PredictionSet, on_delete=models.CASCADE, related_name="predictions")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    label = models.CharField(max_length=64)
    scores = models.JSONField(null=True, blank=True)
    margin = models.FloatField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["prediction_set", "item"], name="prediction_unique_set_item")]
        indexes = [models.Index(fields=["item", "prediction_set"], name="prediction_item_idx")]
