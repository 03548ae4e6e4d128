from django.conf import settings as django_settings
from django.db import models

from .items import Item
from .jobs import Job


class Decision(models.Model):
    """One change to an item's outcome: the decision ledger. Rows are only ever added
    (by `services.decisions`, under the item's row lock); the item's gold and status are
    those of its effective decision, the one of highest `rank`, latest among equals, of
    the item's current round.

    `method` says who decided: a rule of the round (`k_of_n`, `majority`, or a kind's own
    rule), a pool method run by the aggregation job (`dawid_skene`, `mace`), a person
    (`adjudication`), an imported file (`import`), or `reopen`, which starts a new round
    with no gold. `rank` is the precedence the ledger gave it when it was written."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="decisions")
    round = models.PositiveSmallIntegerField()
    method = models.CharField(max_length=32)
    rank = models.PositiveSmallIntegerField()
    # The decided value in the kind's gold shape (a label for the categorical kinds), or
    # null when the decision leaves the item without gold (a failed round, a reopen).
    value = models.JSONField(null=True, blank=True)
    # The item status the decision moved it to.
    status = models.CharField(max_length=16)
    # The method's confidence in `value`, where it has one (posterior, vote share).
    confidence = models.FloatField(null=True, blank=True)
    # A person's decision has a user; a job's, the job (either may be null: a rule of the
    # round run at submit has neither).
    decided_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    job = models.ForeignKey(Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    comment = models.TextField(blank=True, default="")
    # A supervisor's decision on an item outside the adjudication queue.
    override = models.BooleanField(default=False)
    # The effective decision of the round this one replaced, if any.
    supersedes = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["item_id", "id"]
        indexes = [models.Index(fields=["item", "round", "rank", "id"], name="decision_effective_idx")]

    def __str__(self) -> str:
        return f"{self.item_id}@{self.round}:{self.method}={self.value!r}"
