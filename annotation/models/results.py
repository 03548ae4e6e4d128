from django.conf import settings as django_settings
from django.db import models

from .items import Item
from .jobs import Job
from .projects import Project


class ConsensusOutcome(models.Model):
    """The k-of-n decision for one item in one round (FarsTail §3). Written once per
    (item, round) by the consensus job; the unique key makes a redelivery harmless."""

    class Outcome(models.TextChoices):
        ACCEPTED = "accepted"
        FAILED = "failed"

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="outcomes")
    round = models.PositiveSmallIntegerField()
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    gold = models.CharField(max_length=64, blank=True, default="")
    # label → count, the author's or original label included as one vote.
    votes = models.JSONField()
    n_votes = models.PositiveSmallIntegerField()
    agreement = models.FloatField()
    label_changed = models.BooleanField(default=False)
    computed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["item", "round"], name="outcome_unique_item_round")]
        ordering = ["item_id", "round"]


class ItemRevision(models.Model):
    """A change to an item's text after it was written: what an author changed after a
    failed round (or that they withdrew the item), a supervisor's edit of an accepted
    item's text (its label stands), or a corrected answer span of a question. Each row keeps
    what stood before, so the rows of an item are its text's history."""

    class Action(models.TextChoices):
        REVISED = "revised"
        WITHDRAWN = "withdrawn"
        # A supervisor's edit of a text field of the payload (FarsTail §3.2's spelling
        # cleanup): `details` = {"fields": [...], "before": {...}, "after": {...}}.
        EDITED = "edited"
        # A corrected answer span (HeQ §3.4): `details` names the question and holds the
        # old and the new span.
        ANSWER_CORRECTED = "answer_corrected"

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="revisions")
    # The item's round when the change was made (for an author's revision: the round that failed).
    failed_round = models.PositiveSmallIntegerField()
    action = models.CharField(max_length=16, choices=Action.choices)
    previous_payload = models.JSONField()
    reason = models.TextField(blank=True, default="")
    details = models.JSONField(default=dict)
    created_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            # One author revision (or withdrawal) per failed round; edits and corrections
            # may be many.
            models.UniqueConstraint(
                fields=["item", "failed_round"],
                condition=models.Q(action__in=["revised", "withdrawn"]),
                name="revision_unique_item_round",
            )
        ]


class AgreementReport(models.Model):
    """Krippendorff's alpha for one scope of a project (a round, or a system × criterion),
    replaced by each recomputation (upserted on project × scope × level)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="agreement_reports")
    scope = models.JSONField()
    # Canonical JSON of `scope` (sorted keys) so that it can carry a unique constraint.
    scope_key = models.CharField(max_length=300)
    level = models.CharField(max_length=16)
    alpha = models.FloatField(null=True)
    ci_low = models.FloatField(null=True)
    ci_high = models.FloatField(null=True)
    units = models.PositiveIntegerField()
    coders = models.PositiveIntegerField()
    # Why alpha is undefined, when it is (no pairable values, a single value …).
    reason = models.CharField(max_length=200, blank=True, default="")
    details = models.JSONField(default=dict)
    job = models.ForeignKey(Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    computed_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "scope_key", "level"], name="report_unique_scope")]
        ordering = ["project_id", "scope_key", "level"]
