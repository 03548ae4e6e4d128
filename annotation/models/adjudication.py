from django.conf import settings as django_settings
from django.db import models

from .items import Item


class Adjudication(models.Model):
    """An adjudicator's decision on an item from the adjudication queue: the item's gold
    becomes `label`, whatever its votes said (a supervisor's decision beside the papers'
    k-of-n rule, for items that rule could not settle). One per item: a second
    decision is a conflict, so two adjudicators never overwrite each other silently.

    `reasons` keeps why the item was in the queue when it was decided ("failed",
    "methods_disagree", "incoherent_probe"); `round` the item's round at that time."""

    item = models.OneToOneField(Item, on_delete=models.CASCADE, related_name="adjudication")
    round = models.PositiveSmallIntegerField()
    label = models.CharField(max_length=64)
    comment = models.TextField(blank=True, default="")
    reasons = models.JSONField(default=list)
    adjudicator = models.ForeignKey(django_settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["item_id"]
