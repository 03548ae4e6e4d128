"""Label aggregation of a project's items by every method (annotation.metrics.aggregation:
k-of-n, majority, Dawid-Skene, MACE), run on the worker as a job, and the adaptive-overlap
rule of the categorical kinds (docs/api.md "Aggregation, annotator quality, adjudication").

When it runs. Dawid-Skene and MACE estimate every annotator from the whole pool, so the
four methods are computed together per project by the `aggregation` job, requested each
time the project's votes or decisions change (a round closes or is decided, an
adjudication, a reopen). Each request counts the change (`Project.aggregation_requested`)
and is debounced: while the project has a queued aggregation job, or one queued in the
last MASHOV_AGGREGATION_DEBOUNCE_SECONDS (30), it adds no job; the periodic sweep (every 60
s with the jobs' sweep; on the embedded default, the first request after the delay)
queues the projects whose change count is ahead of the one their last run read. A
project where nothing changed is never run again.

What it writes. One ItemAggregate per (item, method) for every item whose current round is
closed (not `open`), and one AnnotatorCompetence per (annotator, method); both upserted.

How gold follows. Gold is written only through the decision ledger (services.decisions).
The project's `aggregation` setting chooses the method. k-of-n and majority are rules of
the round: the consensus step (`nli_relabel`) or the kind's own rule at the last vote
decides each round. Dawid-Skene and MACE decide on the worker: a round that has its
votes waits as `deciding`, and this job accepts it with the method's label once the
posterior reaches `confidence_target` (0.9 by default), or sends it down the protocol's
failure path. Where the kind lets the chosen method own the gold of decided items
(`Kind.gold_statuses_from_aggregation`), a later run relabels them with a confident label
of its own — never an adjudicated item. Kinds whose gold is given (`label_test`: the
hidden label under test) keep it: their aggregates are reported against it.

The reads (the votes the job reads, the methods' report) are annotation/selectors/aggregation.py.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, defaultdict
from datetime import timedelta

from django.conf import settings as django_settings
from django.db import transaction
from django.db.models import F, Q
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
from annotation.models import Annotation, AnnotatorCompetence, ConsensusOutcome, Item, ItemAggregate, Job, Project
from annotation.selectors.aggregation import project_votes
from annotation.services.decisions import (
    RANK_ADJUDICATION,
    RANK_CHOSEN_METHOD,
    Verdict,
    confidence_target,
    decisions_record_bulk,
    effective_decisions,
    pool_method_deciding,
)
from annotation.services.tasks_queue import enqueue_on_commit

logger = logging.getLogger(__name__)

JOB_TYPE = "aggregation"
# Rows per bulk upsert.
WRITE_BATCH = 5_000


# --- requests (debounced) ----------------------------------------------------------------------


def aggregation_request_on_commit(project_id: int) -> None:
    """Ask for the project's aggregation once the surrounding transaction commits: its
    votes or decisions changed. Costs the caller no query: the worker counts the change
    and decides whether a job is needed (`aggregation_request`)."""
    enqueue_on_commit("annotation.tasks.request_aggregation", project_id)


def aggregation_request(project_id: int, *, change: bool = True) -> Job | None:
    """Count a change of the project's votes or decisions (`change`) and queue an
    aggregation job unless one is already queued (it will read the votes stored by now when
    it starts) or one was queued less than MASHOV_AGGREGATION_DEBOUNCE_SECONDS ago: the
    change counter keeps what the debounce skipped, and the sweep (`aggregation_sweep`)
    runs it. Returns the new job, or None."""
    from annotation.services.jobs import job_create

    debounce = timedelta(seconds=django_settings.MASHOV_AGGREGATION_DEBOUNCE_SECONDS)
    with transaction.atomic():
        project = Project.objects.select_for_update().filter(pk=project_id).only("pk", "kind").first()
        if project is None or not get_kind(project.kind).labels:
            return None
        if change:
            Project.objects.filter(pk=project_id).update(aggregation_requested=F("aggregation_requested") + 1)
        jobs = Job.objects.filter(project_id=project_id, kind=JOB_TYPE)
        if jobs.filter(Q(status=Job.Status.QUEUED) | Q(created_at__gte=timezone.now() - debounce)).exists():
            if django_settings.CELERY_TASK_ALWAYS_EAGER:
                # No beat to sweep: the next request after the delay runs it (`aggregation_run_due`).
                _due_in_process.setdefault(project_id, time.monotonic() + debounce.total_seconds())
            return None
        return job_create(kind=JOB_TYPE, project=project)


# The embedded default (tasks in-process, no broker, no beat): projects whose aggregation
# the debounce skipped, with when it falls due. Process-local, as the runserver is one process.
_due_in_process: dict[int, float] = {}


def aggregation_run_due() -> int:
    """On the embedded default, after a request: ask again for every skipped aggregation
    whose delay has passed (annotation.middleware.EmbeddedSweepMiddleware). No query when
    nothing is due. Returns how many jobs ran."""
    now = time.monotonic()
    due = [project_id for project_id, when in list(_due_in_process.items()) if when <= now]
    ran = 0
    for project_id in due:
        when = _due_in_process.pop(project_id, now)
        try:
            ran += aggregation_request(project_id, change=False) is not None
        except Exception:
            _due_in_process.setdefault(project_id, when)  # due again at the next request
            raise
    return ran


def aggregation_sweep(limit: int = 100) -> int:
    """Periodic (with the jobs' sweep): queue the aggregation of every project whose votes or decisions
    changed since its last finished run (`Project.aggregation_requested` ahead of
    `aggregation_done`) and that has no job queued. A project where nothing changed is
    never run again, whatever its items hold. Returns how many jobs were queued."""
    from annotation.kinds.registry import available_kinds

    kinds = [name for name in available_kinds() if get_kind(name).labels]
    stale = (
        Project.objects.filter(kind__in=kinds, aggregation_requested__gt=F("aggregation_done"))
        .order_by("pk")
        .values_list("pk", flat=True)[:limit]
    )
    requested = 0
    for project_id in list(stale):
        requested += aggregation_request(project_id, change=False) is not None
    return requested


# --- the job -----------------------------------------------------------------------------------


def aggregation_compute_job(job: Job) -> dict:
    from annotation.services.figures import project_figures_store
    from annotation.services.jobs import job_set_progress

    result = aggregation_compute_for_project(
        job.project, job=job, progress=lambda share: job_set_progress(job.pk, share)
    )
    project_figures_store(job.project)  # what the supervisor's pages of a large project read
    return result


def aggregation_compute_for_project(project: Project, *, job: Job | None = None, progress=None) -> dict:
    """Compute every method on the project's pool, store the results (module docstring)
    and let the chosen method decide what it owns through the ledger. Idempotent: a second
    run on the same votes writes the same aggregates and decides nothing new."""
    kind = get_kind(project.kind)
    labels = tuple(kind.labels)
    if not labels:
        return {"items": 0, "methods": []}
    # The change count this run answers for: changes counted after this read ask for
    # another run (`aggregation_sweep`).
    seen = Project.objects.filter(pk=project.pk).values_list("aggregation_requested", flat=True).first() or 0
    settings = kind.project_settings(project)
    k, n = kind.k_of_n_rule(settings)
    if kind.adaptive_overlap(settings):
        n = k  # the number of votes varies: k agreeing votes decide (metrics.aggregation.needs_another_vote)
    votes, items = project_votes(project, kind, author_votes=kind.aggregates_by_consensus)
    results = {}
    for position, method in enumerate(METHODS):
        results[method] = aggregate(votes, method, labels=labels, k=k, n=n, seed=0)
        if progress is not None:
            progress(0.7 * (position + 1) / len(METHODS))
    now = timezone.now()
    closed = {item_id for item_id, (_round, status) in items.items() if status != Item.Status.OPEN}
    with transaction.atomic():
        _write_aggregates(project, results, items, closed, now)
        _write_competences(project, results, now)
    decided = decide_by_chosen_method(project, kind, settings, results[settings["aggregation"]], votes, job=job)
    Project.objects.filter(pk=project.pk, aggregation_done__lt=seen).update(aggregation_done=seen)
    if progress is not None:
        progress(1.0)
    return {
        "items": len(closed & set(results["majority"].items)),
        "votes": len(votes),
        "methods": list(METHODS),
        "chosen": settings["aggregation"],
        **decided,
    }


def _write_aggregates(
    project: Project, results: dict, items: dict[int, tuple[int, str]], closed: set[int], now
) -> None:
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
            project=project,
            annotator_id=annotator,
            method=method,
            competence=competence,
            confusion=result.confusion.get(annotator, []),
            computed_at=now,
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


def decide_by_chosen_method(
    project: Project, kind, settings: dict, result, votes: list[tuple], *, job: Job | None = None
) -> dict:
    """The chosen method's decisions, through the ledger (services.decisions), in chunks of
    WRITE_BATCH items, each chunk one transaction with the items locked:

    - a `deciding` item (its round waits for the chosen pool method) is accepted with the
      method's label when its confidence reaches the project's `confidence_target` (0.9
      by default), otherwise it takes the protocol's failure path (back to its author while
      revisions remain, else the adjudication queue); its round's outcome is stored as the
      consensus step stores one;
    - a decided item whose gold the chosen method owns (`Kind.gold_statuses_from_aggregation`)
      takes the method's label where it differs from its gold (a pool method: only with the
      target confidence) — unless an adjudicator decided its round, which no method
      overrides.

    Returns {"decided": deciding items decided, "gold_changed": decided items relabelled}."""
    method = settings["aggregation"]
    pool = pool_method_deciding(kind, settings)
    owned = tuple(kind.gold_statuses_from_aggregation(method))
    statuses = ((Item.Status.DECIDING,) if pool else ()) + owned
    counts = {"decided": 0, "gold_changed": 0}
    if not statuses:
        return counts
    target = confidence_target(settings)
    tallies = _vote_tallies(votes)
    candidates = list(
        Item.objects.filter(project=project, probe_of__isnull=True, status__in=statuses)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    for start in range(0, len(candidates), WRITE_BATCH):
        with transaction.atomic():
            rows = list(
                Item.objects.select_for_update()
                .filter(pk__in=candidates[start : start + WRITE_BATCH], status__in=statuses)
                .order_by("pk")
                .values_list("pk", "round", "status", "gold_label", "author_id", "reference_label")
            )
            standing = effective_decisions((pk, round_) for pk, round_, *_rest in rows)
            verdicts, outcomes = [], []
            for pk, round_, status, gold, author_id, reference in rows:
                label, confidence = result.items.get(pk) or (None, 0.0)
                confident = label is not None and (confidence >= target or not pool)
                if status == Item.Status.DECIDING:
                    after = kind.status_after_round(
                        accepted=confident, author_id=author_id, round_=round_, settings=settings
                    )
                    verdicts.append(Verdict(pk, label if confident else None, after, confidence))
                    outcomes.append(
                        _outcome_of(pk, round_, label if confident else None, tallies.get(pk, {}), reference)
                    )
                    counts["decided"] += 1
                    continue
                current = standing.get(pk)
                if not confident or label == gold or (current is not None and current.rank >= RANK_ADJUDICATION):
                    continue
                verdicts.append(Verdict(pk, label, status, confidence))
                counts["gold_changed"] += 1
            decisions_record_bulk(verdicts, method=method, rank=RANK_CHOSEN_METHOD, job=job)
            ConsensusOutcome.objects.bulk_create(outcomes, batch_size=WRITE_BATCH, ignore_conflicts=True)
    return counts


def _vote_tallies(votes: list[tuple]) -> dict[int, dict[str, int]]:
    tallies: dict[int, Counter] = defaultdict(Counter)
    for item_id, _annotator, label in votes:
        tallies[item_id][label] += 1
    return {item_id: dict(sorted(counts.items())) for item_id, counts in tallies.items()}


def _outcome_of(item_id: int, round_: int, gold: str | None, tally: dict[str, int], reference: str) -> ConsensusOutcome:
    """The round's record as the consensus step keeps one (votes by label, the share of
    the top label), for a round a pool method decided."""
    n_votes = sum(tally.values())
    return ConsensusOutcome(
        item_id=item_id,
        round=round_,
        outcome=ConsensusOutcome.Outcome.ACCEPTED if gold is not None else ConsensusOutcome.Outcome.FAILED,
        gold=gold or "",
        votes=tally,
        n_votes=n_votes,
        agreement=max(tally.values()) / n_votes if n_votes else 0.0,
        label_changed=bool(gold and reference and gold != reference),
    )


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
    cast = [
        (annotator, value.get("label")) for annotator, value in rows if isinstance(value, dict) and value.get("label")
    ]
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
    ratings = [
        value.get("ratings") for value in values if isinstance(value, dict) and isinstance(value.get("ratings"), dict)
    ]
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
    votes = [(label, *(stored.get(annotator) or (None, None))) for annotator, label in cast if label in labels]
    posterior = posterior_from_competence(votes, labels, default_competence=default)
    return max(posterior.values())
