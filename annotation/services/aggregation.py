"""Label aggregation of a project's items by every method (annotation.metrics.aggregation:
k-of-n, majority, Dawid-Skene, MACE), run on the worker as a job, and the adaptive-overlap
rule of the categorical kinds (API.md "Aggregation, annotator quality, adjudication").

When it runs. Dawid-Skene and MACE estimate every annotator from the whole pool, so the
four methods are computed together per project by the `aggregation` job, requested each
time rounds complete (the consensus step for kinds that have one, the submit that completes
an item for the others). Requests are debounced: a request while the project already has a
queued aggregation job, or one queued in the last MASHOV_AGGREGATION_DEBOUNCE_SECONDS
(30), adds nothing; the periodic sweep (every 60 s with the jobs' sweep) requests the
projects that have a closed item without an aggregate of its current round, so a stream of
completions costs about one job per half minute and the last ones are never left out.

What it writes. One ItemAggregate per (item, method) for every item whose current round is
closed (not `open`), and one AnnotatorCompetence per (annotator, method); both upserted.

How gold follows. The project's `aggregation` setting chooses the method. The per-round
rules decide when the round closes: the k-of-n consensus step (`nli_relabel`) decides each
round by k-of-n, or by majority when that is chosen; accepted items take that label. When
Dawid-Skene or MACE is chosen, the round is still decided by k-of-n when it closes (the
revision loop needs an answer then) and each job run then sets the gold of every accepted
item to the pool method's label; for kinds without a consensus step (`phrase_pair`), the
job sets the gold of every complete item to the chosen method's label unless the chosen
method is the kind's own rule. Kinds whose gold is given (`label_test`: the hidden label
under test) keep it: their aggregates are reported against it.
"""

from __future__ import annotations

import logging
from collections import defaultdict

from datetime import timedelta

from django.conf import settings as django_settings
from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone

from annotation.kinds.registry import get_kind
from annotation.metrics.aggregation import (
    METHODS,
    aggregate,
    needs_another_vote,
    posterior_from_competence,
    ratings_spread,
    vote_confidence,
)
from annotation.models import Annotation, AnnotatorCompetence, Item, ItemAggregate, Job, Project
from annotation.services.tasks_queue import enqueue_on_commit

logger = logging.getLogger(__name__)

JOB_KIND = "aggregation"
# The annotator key of a reference label that counts as a vote but has no author (an
# imported dataset's original label): one pseudo-annotator, estimated like the others.
IMPORTED = "imported"
# Rows per bulk upsert.
WRITE_BATCH = 5_000
# The items a report lists where the methods disagree (the count is always complete).
DISAGREEMENTS_LISTED = 500


# --- requests (debounced) ----------------------------------------------------------------------


def aggregation_request_on_commit(project_id: int) -> None:
    """Ask for the project's aggregation once the surrounding transaction commits. Costs the
    caller no query: the worker decides whether a job is needed (`aggregation_request`)."""
    enqueue_on_commit("annotation.tasks.request_aggregation", project_id)


def aggregation_request(project_id: int) -> Job | None:
    """Queue an aggregation job for the project unless one is already queued (it will read
    the votes stored by now when it starts) or one was queued less than
    MASHOV_AGGREGATION_DEBOUNCE_SECONDS ago (the periodic sweep, `aggregation_sweep`, then
    finds what it missed). Returns the new job, or None."""
    from annotation.services.jobs import job_create

    debounce = timedelta(seconds=django_settings.MASHOV_AGGREGATION_DEBOUNCE_SECONDS)
    with transaction.atomic():
        project = Project.objects.select_for_update().filter(pk=project_id).only("pk", "kind").first()
        if project is None or not get_kind(project.kind).labels:
            return None
        jobs = Job.objects.filter(project_id=project_id, kind=JOB_KIND)
        if jobs.filter(Q(status=Job.Status.QUEUED) | Q(created_at__gte=timezone.now() - debounce)).exists():
            return None
        return job_create(kind=JOB_KIND, project=project)


def aggregation_sweep(limit: int = 100) -> int:
    """Periodic (with the jobs' sweep): request the aggregation of every project of an
    aggregating kind that has a closed item without an aggregate of its current round (its
    round closed after the last run, or while a debounced request was skipped). Returns how
    many projects were requested."""
    from annotation.kinds.registry import available_kinds

    kinds = [name for name in available_kinds() if get_kind(name).labels]
    current = ItemAggregate.objects.filter(item_id=OuterRef("pk"), round=OuterRef("round"), method="majority")
    stale = (
        Item.objects.filter(project__kind__in=kinds, probe_of__isnull=True)
        .exclude(status=Item.Status.OPEN)
        .filter(~Exists(current))
        .order_by()
        .values_list("project_id", flat=True)
        .distinct()[:limit]
    )
    requested = 0
    for project_id in list(stale):
        requested += aggregation_request(project_id) is not None
    return requested


# --- the job -----------------------------------------------------------------------------------


def aggregation_compute_job(job: Job) -> dict:
    from annotation.services.jobs import job_set_progress

    return aggregation_compute_for_project(job.project, progress=lambda share: job_set_progress(job.pk, share))


def _author_key(item_author_id: int | None):
    return item_author_id if item_author_id is not None else IMPORTED


def project_votes(project: Project, kind, *, author_votes: bool) -> tuple[list[tuple], dict[int, tuple[int, str]]]:
    """(votes, items): the current round's votes of every ordinary item of the project as
    (item id, annotator key, label), the author's or original label one more vote where
    `author_votes`; and {item id: (round, status)}. Two queries."""
    items: dict[int, tuple[int, str]] = {}
    votes: list[tuple] = []
    rows = Item.objects.filter(project=project, probe_of__isnull=True).values_list(
        "pk", "round", "status", "reference_label", "author_id"
    )
    for item_id, round_, status, reference, author_id in rows.iterator(chunk_size=10_000):
        items[item_id] = (round_, status)
        if author_votes and reference in kind.labels:
            votes.append((item_id, _author_key(author_id), reference))
    annotations = Annotation.objects.filter(item__project=project, item__probe_of__isnull=True).values_list(
        "item_id", "round", "annotator_id", "value"
    )
    for item_id, round_, annotator_id, value in annotations.iterator(chunk_size=20_000):
        label = value.get("label") if isinstance(value, dict) else None
        if item_id in items and items[item_id][0] == round_ and label in kind.labels:
            votes.append((item_id, annotator_id, label))
    return votes, items


def aggregation_compute_for_project(project: Project, *, progress=None) -> dict:
    """Compute every method on the project's pool and store the results (module docstring).
    Idempotent: a second run on the same votes writes the same rows."""
    kind = get_kind(project.kind)
    labels = tuple(kind.labels)
    if not labels:
        return {"items": 0, "methods": []}
    settings = kind.project_settings(project)
    k, n = kind.k_of_n_rule(settings)
    if kind.adaptive_overlap(settings):
        n = k  # the number of votes varies: k agreeing votes decide (metrics.aggregation.needs_another_vote)
    votes, items = project_votes(project, kind, author_votes=kind.aggregates_by_consensus)
    results = {}
    for position, method in enumerate(METHODS):
        results[method] = aggregate(votes, method, labels=labels, k=k, n=n, seed=0)
        if progress is not None:
            progress(0.8 * (position + 1) / len(METHODS))
    now = timezone.now()
    closed = {item_id for item_id, (_round, status) in items.items() if status != Item.Status.OPEN}
    with transaction.atomic():
        _write_aggregates(project, results, items, closed, now)
        _write_competences(project, results, now)
        changed = _gold_follows(project, kind, settings, results[settings["aggregation"]])
    if progress is not None:
        progress(1.0)
    return {
        "items": len(closed & set(results["majority"].items)),
        "votes": len(votes),
        "methods": list(METHODS),
        "chosen": settings["aggregation"],
        "gold_changed": changed,
    }


def _write_aggregates(project: Project, results: dict, items: dict[int, tuple[int, str]], closed: set[int], now) -> None:
    # An item whose round reopened (a revision) keeps no aggregate of the round before.
    ItemAggregate.objects.filter(item__project=project, item__status=Item.Status.OPEN).delete()
    rows = []
    for method, result in results.items():
        for item_id, (label, confidence) in result.items.items():
            if item_id in closed:
                rows.append(
                    ItemAggregate(
                        item_id=item_id, round=items[item_id][0], method=method, label=label or "",
                        confidence=confidence, computed_at=now,
                    )
                )  # fmt: skip
    ItemAggregate.objects.bulk_create(
        rows,
        batch_size=WRITE_BATCH,
        update_conflicts=True,
        unique_fields=["item", "method"],
        update_fields=["round", "label", "confidence", "computed_at"],
    )


def _write_competences(project: Project, results: dict, now) -> None:
    rows = [
        AnnotatorCompetence(
            project=project, annotator_id=annotator, method=method, competence=competence,
            confusion=result.confusion.get(annotator, []), computed_at=now,
        )  # fmt: skip
        for method, result in results.items()
        for annotator, competence in result.competence.items()
        if isinstance(annotator, int)  # users; the imported labels' pseudo-annotator has no row
    ]
    AnnotatorCompetence.objects.bulk_create(
        rows,
        batch_size=WRITE_BATCH,
        update_conflicts=True,
        unique_fields=["project", "annotator", "method"],
        update_fields=["competence", "confusion", "computed_at"],
    )


def _gold_follows(project: Project, kind, settings: dict, result) -> int:
    """Set the gold of decided items to the chosen method's label where the job owns it
    (module docstring). Returns how many items changed."""
    method = settings["aggregation"]
    statuses = kind.gold_statuses_from_aggregation(method)
    if not statuses:
        return 0
    current = dict(Item.objects.filter(project=project, status__in=statuses, probe_of__isnull=True).values_list("pk", "gold_label"))
    by_label: dict[str, list[int]] = defaultdict(list)
    for item_id, gold in current.items():
        label = (result.items.get(item_id) or (None, 0.0))[0]
        if label is not None and label != gold:
            by_label[label].append(item_id)
    for label, pks in by_label.items():
        for start in range(0, len(pks), WRITE_BATCH):
            Item.objects.filter(pk__in=pks[start : start + WRITE_BATCH]).update(gold_label=label)
    return sum(len(pks) for pks in by_label.values())


# --- adaptive overlap ----------------------------------------------------------------------------


def categorical_wants_another_vote(kind, item: Item, settings: dict, submitted: int) -> bool:
    """The adaptive-overlap rule (metrics.aggregation.needs_another_vote) for an item of a
    categorical kind holding `submitted` annotator votes: its labels (and the author's or
    original label where it is a vote), the kind's k, the votes left to `overlap_max`, and
    the chosen method's confidence when a `confidence_target` is set — k-of-n and majority:
    the top label's share; Dawid-Skene and MACE: the item's posterior under the annotators'
    parameters from the last pool run (metrics.aggregation.posterior_from_competence), or
    the top label's share before any run. Call with the item locked."""
    rows = list(Annotation.objects.filter(item=item, round=item.round).values_list("annotator_id", "value"))
    cast = [(annotator, value.get("label")) for annotator, value in rows if isinstance(value, dict) and value.get("label")]
    if kind.aggregates_by_consensus and item.reference_label:
        cast.append((item.author_id, item.reference_label))
    labels = [label for _annotator, label in cast]
    k, _n = kind.k_of_n_rule(settings)
    target = settings.get("confidence_target")
    confidence = None
    if target is not None:
        if settings["aggregation"] in ("dawid_skene", "mace"):
            confidence = _pool_confidence(item, settings, cast, tuple(kind.labels))
        if confidence is None:
            confidence = vote_confidence(labels)
    return needs_another_vote(
        labels, k=k, votes_left=settings["overlap_max"] - submitted, confidence=confidence, confidence_target=target
    )


def ratings_want_another_vote(item: Item, settings: dict, submitted: int) -> bool:
    """The rating kinds' adaptive-overlap rule: one more rater, up to `overlap_max`, while
    two raters' scores of one candidate on one criterion differ by more than `spread`
    points (metrics.aggregation.ratings_spread); without a `spread`, `overlap_min` raters.
    Call with the item locked."""
    spread = settings.get("spread")
    if spread is None or submitted >= settings["overlap_max"]:
        return False
    values = Annotation.objects.filter(item=item, round=item.round).values_list("value", flat=True)
    ratings = [value.get("ratings") for value in values if isinstance(value, dict) and isinstance(value.get("ratings"), dict)]
    return ratings_spread(ratings) > spread


def _pool_confidence(item: Item, settings: dict, cast: list[tuple], labels: tuple[str, ...]) -> float | None:
    """The item's posterior confidence under the annotators' stored parameters; None before
    the first pool run stored any (one query)."""
    method = settings["aggregation"]
    stored = {
        annotator: (competence, confusion)
        for annotator, competence, confusion in AnnotatorCompetence.objects.filter(
            project_id=item.project_id, method=method
        ).values_list("annotator_id", "competence", "confusion")
    }
    if not stored:
        return None
    known = sorted(competence for competence, _confusion in stored.values())
    default = known[len(known) // 2]
    votes = [
        (label, *(stored.get(annotator) or (None, None)))
        for annotator, label in cast
        if label in labels
    ]
    posterior = posterior_from_competence(votes, labels, default_competence=default)
    return max(posterior.values())


# --- reads for the reports -----------------------------------------------------------------------


def aggregation_report_for_project(project: Project, chosen: str, *, score_against_reference: bool = False) -> dict:
    """Per method: items with a label, and how often it equals the chosen method's; the
    items where two methods give different labels (a method that decides nothing, such as
    k-of-n short of its rule, disagrees with no one), counted and listed (the first
    DISAGREEMENTS_LISTED by position). With `score_against_reference` (a hidden gold, as in
    `label_test`), each method's accuracy against it over the items it decided, and over
    all items with a reference (undecided counting as wrong). One query."""
    rows = (
        ItemAggregate.objects.filter(item__project=project, round=F("item__round"))
        .order_by("item__position", "item_id", "method")
        .values_list("item_id", "item__external_id", "item__reference_label", "method", "label", "confidence")
    )
    per_item: dict[int, dict] = {}
    external: dict[int, str] = {}
    reference: dict[int, str] = {}
    for item_id, external_id, reference_label, method, label, confidence in rows:
        per_item.setdefault(item_id, {})[method] = {"label": label or None, "confidence": confidence}
        external[item_id] = external_id
        reference[item_id] = reference_label
    decided = {method: 0 for method in METHODS}
    agree_with_chosen = {method: 0 for method in METHODS}
    disagreements = []
    for item_id, methods in per_item.items():
        chosen_label = (methods.get(chosen) or {}).get("label")
        given = set()
        for method, value in methods.items():
            if value["label"] is not None:
                decided[method] += 1
                given.add(value["label"])
                agree_with_chosen[method] += value["label"] == chosen_label
        if len(given) > 1:
            disagreements.append({"id": item_id, "external_id": external[item_id], "aggregates": methods})
    report = {
        "chosen": chosen,
        "items": len(per_item),
        "decided": decided,
        "agree_with_chosen": agree_with_chosen,
        "disagreements": {"count": len(disagreements), "items": disagreements[:DISAGREEMENTS_LISTED]},
    }
    if score_against_reference:
        report["accuracy_against_reference"] = _accuracy_against_reference(per_item, reference)
    return report


def _accuracy_against_reference(per_item: dict[int, dict], reference: dict[int, str]) -> dict:
    scored = {item_id: methods for item_id, methods in per_item.items() if reference[item_id]}
    figures = {}
    for method in METHODS:
        correct = sum((methods.get(method) or {}).get("label") == reference[item_id] for item_id, methods in scored.items())
        decided = sum((methods.get(method) or {}).get("label") is not None for methods in scored.values())
        figures[method] = {
            "items": len(scored),
            "decided": decided,
            "accuracy": correct / len(scored) if scored else None,
            "accuracy_decided": correct / decided if decided else None,
        }
    return figures
