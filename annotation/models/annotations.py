from django.conf import settings
from django.db import models
from django.db.models import Q

from .items import Item
from .projects import Project


class Assignment(models.Model):
    """A claim of one item by one annotator in one round. A claim expires at `expires_at`;
    an expired claim no longer holds a slot and may be claimed again. A skipped claim holds
    no slot either (the item goes back to others) but still counts as the annotator's own in
    its round, so the engine does not serve them the same item again in that round."""

    class Status(models.TextChoices):
        CLAIMED = "claimed"
        SUBMITTED = "submitted"
        EXPIRED = "expired"
        SKIPPED = "skipped"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="assignments")
    # No single-column indexes on item and annotator: the indexes below lead with them, and
    # every claim and submit would otherwise pay for two more index updates.
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="assignments", db_index=False)
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments", db_index=False
    )
    round = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.CLAIMED)
    claimed_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)
    # The annotator's unsubmitted work on an open claim (GET|PUT /api/assignments/{id}/draft/),
    # cleared by the same statements that submit, skip or expire the claim.
    draft = models.JSONField(null=True, blank=True)

    class Meta:
        constraints = [
            # Never the same item twice to one annotator in a round (expired claims aside; a
            # skipped claim stays, so that a skip is not followed by the same item).
            models.UniqueConstraint(
                fields=["item", "annotator", "round"],
                condition=~Q(status="expired"),
                name="assignment_unique_live_claim",
            ),
        ]
        indexes = [
            # The engine reads a caller's latest claim on every `next`: newest first, so the
            # read stays one index probe however many items the annotator has done.
            models.Index(fields=["annotator", "project", "-claimed_at", "-id"], name="assignment_latest_idx"),
            models.Index(fields=["item", "round", "status"], name="assignment_item_round_idx"),
        ]


class Annotation(models.Model):
    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="annotation")
    # Indexed through the unique (item, annotator, round) key, which leads with the item.
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="annotations", db_index=False)
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="annotations")
    round = models.PositiveSmallIntegerField()
    value = models.JSONField()
    # Work of trial and new members is always reviewed; a trusted member's is sampled.
    review_required = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    # When its annotator last changed the value (PATCH /api/annotations/{id}/), null if never.
    edited_at = models.DateTimeField(null=True, blank=True)
    # The model's label the page showed as a suggestion (the project's `suggestions`
    # setting; null: none was shown) and whether the submitted label was that one.
    suggested_label = models.CharField(max_length=64, null=True, blank=True)
    suggestion_taken = models.BooleanField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["item", "annotator", "round"], name="annotation_unique_item_annotator_round"
            ),
        ]
        indexes = [
            # The review queue (oldest first) reads the few annotations that need review;
            # without it, counting the queue reads every annotation of every project.
            models.Index(
                fields=["created_at", "id"], condition=Q(review_required=True), name="annotation_review_queue_idx"
            ),
            # The annotators' agreement with the model's suggestions reads only the votes that
            # were shown one; a project without suggestions reads nothing.
            models.Index(fields=["item"], condition=Q(suggested_label__isnull=False), name="annotation_suggested_idx"),
        ]
        ordering = ["id"]


class IdempotencyRecord(models.Model):
    """The first response to a write sent with an `Idempotency-Key`, replayed for retries;
    stored in the write's own transaction."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=200)
    scope = models.CharField(max_length=200)
    # SHA-256 of the request's method, path and parsed body: the same key with another
    # request is refused (409). Empty for records older than the fingerprint.
    fingerprint = models.CharField(max_length=64, default="")
    status_code = models.PositiveSmallIntegerField()
    body = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "key", "scope"], name="idempotency_unique_key")]
