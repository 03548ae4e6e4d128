import random

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from .projects import Project


def _shuffle_key() -> float:
    return random.random()


class Item(models.Model):
    class Status(models.TextChoices):
        OPEN = "open", _("open")  # collecting annotations in its current round
        COMPLETE = "complete", _("complete")  # every needed annotation of the round is in
        # The round's votes are in and the project's pool method (Dawid-Skene, MACE) decides
        # it on the worker's next aggregation run.
        DECIDING = "deciding", _("deciding")
        ACCEPTED = "accepted", _("accepted")
        NEEDS_REVISION = "needs_revision", _("needs revision")
        REMOVED = "removed", _("removed")

    # No index of its own: every index of the table begins with the project (the unique
    # external id first), and an import's COPY keeps each index up to date row by row.
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="items", db_index=False)
    external_id = models.CharField(max_length=200)
    # The kind's payload, stored exactly as imported (docs/text.md "Storing text").
    payload = models.JSONField()
    # The author's intended label or the dataset's original label. It counts as one vote
    # where the kind says so and never reaches an annotator's page.
    reference_label = models.CharField(max_length=64, blank=True, default="")
    # The label of the item's effective decision (services.decisions, its only writer).
    gold_label = models.CharField(max_length=64, blank=True, default="")
    group = models.CharField(max_length=200, blank=True, default="")
    # The group the assignment engine keeps apart when the file gave none, derived by the
    # kind from the payload (`Kind.derived_group`; for NLI, the premise). Kept apart from
    # `group` so that exports carry only the groups the files had.
    derived_group = models.CharField(max_length=200, blank=True, default="")
    split = models.CharField(max_length=32, blank=True, default="")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    round = models.PositiveSmallIntegerField(default=1)
    # Adaptive overlap: the votes the engine asks of the item in its current round, once it
    # asked for more than the project's overlap_min (null: overlap_min, or the fixed count
    # while the feature is off). Reset by a new round.
    votes_target = models.PositiveSmallIntegerField(null=True, blank=True)
    # The author and probe indexes (Meta) hold only the rows that have one: most items have
    # neither, and an index of NULLs costs every imported row an entry no lookup reads.
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="authored_items",
        db_index=False,
    )
    # A reversed copy of another item, mixed in as a coherence probe (phrase pairs): never
    # exported as gold, never counted in agreement.
    probe_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="probes", db_index=False
    )
    # Only items in the sample go to annotators (stratified sampling, LCHAIM §2.2).
    in_sample = models.BooleanField(default=True)
    # Figures computed on the worker (similarities, intrinsic measures) and flags raised by
    # them, e.g. {"back_translation_similarity": [...]} and ["low_back_translation"].
    computed = models.JSONField(default=dict, blank=True)
    flags = models.JSONField(default=list, blank=True)
    # Position in the file it came from, so exports can keep the source order.
    position = models.PositiveIntegerField(default=0)
    shuffle_key = models.FloatField(default=_shuffle_key)
    # Where the item stands in the project's active-learning order (the `order` setting;
    # lower is served first): kept by annotation/services/priorities.py, read by the
    # assignment engine through item_priority_idx. Unused in sequential order.
    priority = models.FloatField(default=0.0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "external_id"], name="item_unique_external_id")]
        indexes = [
            models.Index(fields=["project", "status", "shuffle_key"], name="item_assignable_idx"),
            models.Index(fields=["project", "status", "priority", "shuffle_key"], name="item_priority_idx"),
            # Source order: the item browser's keyset pages and the exports' stream.
            models.Index(fields=["project", "position", "id"], name="item_source_order_idx"),
            # The same order within one status: the browser's page number typed beside a
            # status skips along it without reading the skipped items' rows.
            models.Index(fields=["project", "status", "position", "id"], name="item_status_order_idx"),
            models.Index(fields=["author"], name="item_author_idx", condition=models.Q(author__isnull=False)),
            models.Index(fields=["probe_of"], name="item_probe_of_idx", condition=models.Q(probe_of__isnull=False)),
            # A project's probes (its report's coherence, the adjudication queue's incoherent
            # probes, a changed original's probes): read without the site's other probes.
            models.Index(
                fields=["project", "probe_of"],
                name="item_project_probes_idx",
                condition=models.Q(probe_of__isnull=False),
            ),
        ]
        ordering = ["project_id", "position", "id"]

    def __str__(self) -> str:
        return f"{self.project_id}:{self.external_id}"

    @property
    def assignment_group(self) -> str:
        """The key of the rule "not the same group twice in a row": the file's group, else
        the derived one ("" for none). `claim_candidate` computes the same in SQL."""
        return self.group or self.derived_group


class ItemStatusCount(models.Model):
    """How many of a project's items are in each status, kept by PostgreSQL itself: triggers
    on the item table (migration 0032) append a row of the change to these counts in the
    transaction that inserts, deletes or changes the status of items, so the counts are
    exact at every commit, and the project page, the dashboard, the report and the item
    browser read a handful of rows instead of counting a million items per request. A
    count is the sum of its (project, status, probe) rows; the periodic sweep folds each
    into one row (services.item_counts). Rows are appended, never updated, so concurrent
    submits that close rounds never wait on one another here. Not kept on SQLite (the
    tests' small projects): counted from the items there."""

    # No foreign key: the rows of a deleted project's items are appended while Django
    # deletes them, after its own cascade would have run; the sweep drops them.
    project_id = models.BigIntegerField()
    status = models.CharField(max_length=16)
    probe = models.BooleanField()  # the coherence probes, counted apart from the dataset's items
    items = models.BigIntegerField()

    class Meta:
        indexes = [models.Index(fields=["project_id", "status", "probe"], name="item_status_count_idx")]
