"""Dataset releases and webhooks.

A `Release` is a frozen, versioned snapshot of a project's decided items: files written once
to the release storage (docs/operations.md "Releases"), their checksums, the dataset card and
a per-item manifest from which two releases are compared without reading the live project.

A `Webhook` is an HTTPS endpoint a supervisor registered for some of the project's events;
each event sent to it is a `WebhookDelivery`, kept as the delivery log."""

from django.conf import settings
from django.db import models

from .jobs import Job
from .projects import Project


class Release(models.Model):
    """One version of a project's dataset. Written once by the release job; never changed
    after it is `ready` (later votes, decisions or edits do not reach it)."""

    class Status(models.TextChoices):
        BUILDING = "building"
        READY = "ready"
        FAILED = "failed"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="releases")
    version = models.CharField(max_length=64)
    license = models.CharField(max_length=64)
    description = models.TextField(blank=True, default="")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.BUILDING)
    job = models.ForeignKey(Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # The dataset card (README.md), as written into the release.
    card = models.TextField(blank=True, default="")
    # [{"name", "bytes", "sha256"}] of every file of the release, in name order.
    files = models.JSONField(default=list)
    # {external id: {"split", "label", "digest", "decision": {"id", "method", "round"} | null}}
    manifest = models.JSONField(default=dict)
    # Counts the card and the list show: items per split and label.
    counts = models.JSONField(default=dict)
    error = models.TextField(blank=True, default="")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "version"], name="release_unique_version")]
        ordering = ["project_id", "-created_at", "-id"]


class Webhook(models.Model):
    """An endpoint that receives signed JSON deliveries of the project's events."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=500)
    events = models.JSONField(default=list)
    # The HMAC-SHA256 key of the signatures: shown once, when the webhook is made.
    secret = models.CharField(max_length=64)
    active = models.BooleanField(default=True)
    # Why the endpoint was disabled (failing for a day), for the supervisor.
    disabled_reason = models.CharField(max_length=300, blank=True, default="")
    # The start of the current run of failed attempts (None while deliveries succeed).
    failing_since = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project_id", "id"]


class WebhookDelivery(models.Model):
    """One event sent (or to be sent) to one webhook: the exact body, and how it went."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=32)
    # The JSON body exactly as signed and sent, so that a re-send sends the same bytes.
    body = models.TextField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    response_status = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="delivery_due_idx")]
