from django.conf import settings as django_settings
from django.db import models
from django.db.models import Q

from .items import Item
from .projects import Project


class ItemAggregate(models.Model):
    """One aggregation method's label and confidence for an item (annotation.metrics.
    aggregation): k-of-n and majority per round when the round is decided, Dawid-Skene
    and MACE by the project's recomputation over the whole pool. Upserted on (item, method):
    the latest computation replaces the one before where it differs."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="aggregates")
    round = models.PositiveSmallIntegerField()
    method = models.CharField(max_length=16)
    # "" when the method decides nothing (k-of-n short of its rule, a majority tie).
    label = models.CharField(max_length=64, blank=True, default="")
    confidence = models.FloatField()
    # k-of-n and majority with a label: what the item adds to its annotators' agreement
    # counts, [[annotator id, 1 if the vote agrees with the label else 0], ...], so that an
    # incremental run can take an item's old share out of the counts before adding its new one.
    contributions = models.JSONField(default=list, blank=True)
    # When a run last changed the row: a run that computes the same aggregate leaves it.
    computed_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["item", "method"], name="aggregate_unique_item_method")]
        ordering = ["item_id", "method"]


class AnnotatorCompetence(models.Model):
    """An annotator's competence in a project by one method (Dawid-Skene: expected
    accuracy, with the confusion matrix P(observed | true), rows and columns in the kind's
    label order; MACE: probability of not spamming; k-of-n and majority: agreement with
    the decided label). Upserted on (project, annotator, method)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="competences")
    annotator = models.ForeignKey(django_settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="competences")
    method = models.CharField(max_length=16)
    competence = models.FloatField()
    confusion = models.JSONField(default=list)
    # k-of-n and majority: the annotator's votes on closed items the method decided, and how
    # many of them agree with its label (competence = agreed / counted), kept up to date by
    # the incremental runs from each changed item's contributions.
    agreed = models.PositiveIntegerField(default=0)
    counted = models.PositiveIntegerField(default=0)
    computed_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "annotator", "method"], name="competence_unique_project_annotator_method"
            )
        ]
        ordering = ["project_id", "annotator_id", "method"]


class ProjectFigures(models.Model):
    """A report's figures for one project as the worker last computed them (`name`: which
    report; `value`: its JSON), so that the supervisor's pages of a large project read them
    instead of recomputing them over every vote per request (annotation.services.figures).
    Upserted on (project, name)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="figures")
    name = models.CharField(max_length=64)
    value = models.JSONField()
    computed_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="figures_unique_project_name")]


class AggregationChange(models.Model):
    """An item whose votes, round or status changed since the project's last aggregation
    run (`item_id` null: something the job cannot pin to items, so the next run recomputes
    the whole project). Recorded when the change asks for the aggregation
    (services.aggregation.aggregation_request); the run that read it deletes it."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="aggregation_changes")
    # No foreign key: a deleted item's change must still reach the next run.
    item_id = models.BigIntegerField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["project", "id"], name="aggregation_change_idx")]


class ItemFigures(models.Model):
    """What one item adds to its project's stored figures (annotation.services.figures):
    its annotators' claim durations, its current-round votes, its consensus, gold and
    whether it was adjudicated, and why it waits for an adjudicator. The project's sums
    are kept in ProjectFigures; an incremental run takes a changed item's old share (this
    row) out of them and adds its new one, so the work follows the items that changed."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="item_figures")
    # No foreign key: a deleted item's share must still be taken out by the next run.
    item_id = models.BigIntegerField()
    value = models.JSONField()
    # The item's position where the methods disagree (`x` of its share), else None: the
    # methods' comparison lists those items first by position, read in that order from the
    # index below — as many entries as it lists, whatever the project's size.
    disagree_position = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "item_id"], name="item_figures_unique_item")]
        indexes = [
            models.Index(
                fields=["project", "disagree_position", "item_id"],
                condition=Q(disagree_position__isnull=False),
                name="item_figures_disagree_order",
            ),
        ]


class ItemValueCount(models.Model):
    """How many of a project's items hold one value of the item browser's filters (`name`:
    split, group, round or flag), kept by the stored figures' runs from the items' shares
    (ItemFigures), so that a run costs the changed items' values, not the project's
    (annotation.services.figures). A value no item holds keeps no row."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="item_value_counts")
    name = models.CharField(max_length=8)
    value = models.TextField()
    items = models.PositiveIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "name", "value"], name="item_value_count_unique"),
        ]


class AdjudicationReason(models.Model):
    """Why one item of a large project waits for an adjudicator ("failed",
    "methods_disagree", "incoherent_probe"), as its project's last stored figures' run
    found — adjudicated items included: the queue takes them out when read. A row per
    waiting item, so that a run rewrites only the changed items' reasons
    (annotation.services.figures)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="adjudication_reasons")
    # No foreign key: like ItemFigures, rewritten by the run that reads the item's change.
    item_id = models.BigIntegerField()
    reasons = models.JSONField()
    # The item's position in its file (items keep theirs): the queue's order is the items'
    # (position, id), so a page number is skipped along the index below, over the
    # waiting items' rows only, not every item before the page.
    position = models.PositiveIntegerField(default=0)
    # Kept by PostgreSQL (migration 0035), whatever the row is written with: whether an
    # adjudicator who does not supervise may be shown the item — it exists, its round is
    # closed and nobody adjudicated it in that round — and who voted in its round (annotator
    # ids, ascending), whom it is never shown to. Every change to the item's status, round,
    # adjudications or votes recomputes them in its transaction, so that such an
    # adjudicator's queue is read from these rows alone and counted from QueueCount. Not
    # kept on SQLite (its small projects' queue is read from the items there).
    waiting = models.BooleanField(default=False)
    voters = models.JSONField(default=list)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "item_id"], name="adjudication_reason_unique_item"),
        ]
        indexes = [models.Index(fields=["project", "position", "item_id"], name="adjudication_reason_order")]


class QueueCount(models.Model):
    """The adjudication queue's items an adjudicator who does not supervise may decide, counted
    without reading them: `annotator_id` 0 counts a project's waiting stored reasons
    (AdjudicationReason.waiting), an annotator's id those of them they voted on in the
    item's round, so that an annotator's count is the first less theirs — two index reads
    whatever the project's size, where probing each waiting item for its status, an
    adjudication and their vote read 70,000 items of a million per page. Like
    ItemStatusCount, kept by PostgreSQL: triggers on the stored reasons (migration 0035)
    append a row of each change in the transaction that makes it, exact at every commit;
    the periodic sweep folds each (project, annotator)'s rows into one
    (services.item_counts). Not kept on SQLite."""

    # No foreign keys: a deleted project's or user's rows are appended while Django deletes
    # them; the sweep drops a deleted project's.
    project_id = models.BigIntegerField()
    annotator_id = models.BigIntegerField()  # 0: every waiting item
    items = models.BigIntegerField()

    class Meta:
        indexes = [models.Index(fields=["project_id", "annotator_id"], name="queue_count_idx")]
