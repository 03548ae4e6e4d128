from django.conf import settings as django_settings
from django.db import models

from .items import Item


class Adjudication(models.Model):
    """An adjudicator's decision on an item from the adjudication queue: the item's gold
    becomes `label`, whatever its votes said (a supervisor's decision beside the papers'
    k-of-n rule, for items that rule could not settle). One per item and round: a second
    decision is a conflict, so two adjudicators never overwrite each other silently; a
    supervisor's reopen starts a round that may be adjudicated again. The ledger entry
    that made it the gold is `decision`.

    `reasons` keeps why the item was in the queue when it was decided ("failed",
    "methods_disagree", "incoherent_probe"); `round` the item's round at that time."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="adjudications")
    round = models.PositiveSmallIntegerField()
    label = models.CharField(max_length=64)
    comment = models.TextField(blank=True, default="")
    reasons = models.JSONField(default=list)
    adjudicator = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    decision = models.OneToOneField("Decision", null=True, on_delete=models.SET_NULL, related_name="adjudication")

    class Meta:
        ordering = ["item_id", "round"]
        constraints = [models.UniqueConstraint(fields=["item", "round"], name="adjudication_unique_item_round")]


class QueueSighting(models.Model):
    """An item an adjudicator who also annotates the project saw in the adjudication queue,
    with its votes: the assignment engine never serves it to them afterwards (in a later
    round after a reopen or a revision either), so that they cannot vote what they saw."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(django_settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["item", "user"], name="queue_sighting_unique_item_user")]
