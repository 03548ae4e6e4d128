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
closed (not `open`) and has a vote, and one AnnotatorCompetence per (annotator, method);
both upserted. k-of-n's and majority's competence is the annotator's agreement with the
method's label over the closed items it labelled, kept as counts (`agreed`, `counted`).

Incremental runs. Each request records the items it changed (AggregationChange: the
services that close, decide or adjudicate a round name the item). A run over the whole
project costs seconds per 100,000 items, so a project of MASHOV_AGGREGATION_INCREMENTAL_ITEMS
(5,000) items or more recomputes only the changed items and those waiting as `deciding`:
- k-of-n and majority exactly as a full run would: an item's label depends on its votes
  alone, and the annotators' agreement counts take the item's old contribution (stored on
  its aggregate) out and its new one in;
- Dawid-Skene and MACE estimate every annotator from the whole pool by EM, which has no
  exact update: a changed item gets its posterior under the annotators' parameters of the
  last full run (the E-step with the parameters held fixed), and the parameters are
  re-estimated by a full run once MASHOV_AGGREGATION_FULL_SHARE (10 %) of the items changed
  since it, or it is MASHOV_AGGREGATION_FULL_SECONDS (an hour) old, at the next run; a
  change that names no item, and a project without a full run yet, also run in full.
Runs of one project never overlap (a PostgreSQL advisory lock: a job that finds it held
ends at once and leaves its changes to the sweep; `_one_run_at_a_time`), and a run deletes
the changes it read only after its writes and decisions, so a run that stopped halfway
leaves them to the next one.

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

Memory. A run reads the votes into arrays a chunk of rows at a time
(selectors.aggregation.project_vote_arrays), runs the methods on the arrays
(metrics.aggregation.aggregate_arrays) and writes the aggregates AGGREGATE_BATCH items at a
time (_write_aggregates: COPY into a temporary table, upserted from it), all of them in the
run's one transaction: its memory follows the arrays (about 9 bytes a vote), not one Python
object per vote or per aggregate as before (5.4 GB at 1M items).

A kind without labels has no method to run; one whose report is kept by the changed items
(`Kind.report_counted`) has its changes recorded and its job queued alike — its submits and
edits name their item — and the job only brings its figures up to date by them
(services.figures), reading every item on the full runs' schedule.

The reads (the votes the job reads, the methods' report) are annotation/selectors/aggregation.py.
"""

from __future__ import annotations

import io
import json
import logging
import time
from collections import Counter, defaultdict
from contextlib import contextmanager
from datetime import timedelta
from typing import Any, Iterable

from django.conf import settings as django_settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from annotation.kinds.registry import get_kind, installed_kind
from annotation.metrics.aggregation import (
    METHODS,
    ArrayResult,
    aggregate_arrays,
    needs_another_vote,
    posterior_from_competence,
    posteriors_from_competence_arrays,
    ratings_spread,
    vote_confidence,
)
from annotation.models import (
    AggregationChange,
    Annotation,
    AnnotatorCompetence,
    ConsensusOutcome,
    Item,
    ItemAggregate,
    Job,
    Project,
    ProjectFigures,
)
from annotation.selectors.aggregation import IMPORTED_ID, ProjectVotes, project_vote_arrays
from annotation.selectors.figures import AGGREGATION_STATE, stored_figures
from annotation.services.decisions import (
    POOL_METHODS,
    RANK_ADJUDICATION,
    RANK_CHOSEN_METHOD,
    Verdict,
    confidence_target,
    decisions_record_bulk,
    effective_decisions,
    pool_method_deciding,
)
from annotation.services.figures import project_figures_store
from annotation.services.tasks_queue import enqueue_on_commit, enqueue_rollback_unsafe
from annotation.sql import column_in

logger = logging.getLogger(__name__)

JOB_TYPE = "aggregation"
# Rows per bulk upsert.
WRITE_BATCH = 5_000
# Items per batch of the aggregates' writes (four rows each).
AGGREGATE_BATCH = 20_000
# The methods whose annotator figure is agreement with the item's label, counted per item.
AGREEMENT_METHODS = ("k_of_n", "majority")
# A pool method's competence for annotators before any was estimated.
DEFAULT_COMPETENCE = 0.7
# The first key of the aggregation's PostgreSQL advisory lock (the second: the project).
LOCK_NAMESPACE = 0x6D61


# --- requests (debounced) ----------------------------------------------------------------------


def aggregation_request_on_commit(project_id: int, item_ids: Iterable[int] | None = None) -> None:
    """Ask for the project's aggregation once the surrounding transaction commits: the
    votes, round or status of the items `item_ids` changed (None: something that only a
    run over the whole project covers). Costs the caller no query: the worker records and
    counts the change and decides whether a job is needed (`aggregation_request`)."""
    ids = None if item_ids is None else sorted(set(item_ids))
    enqueue_on_commit("annotation.tasks.request_aggregation", project_id, ids)


def aggregation_request_after_commit(project_id: int, item_ids: Iterable[int]) -> None:
    """`aggregation_request_on_commit` for a caller that runs on the worker already (the
    consensus task): the request is made here, in this process, once the surrounding
    transaction commits, instead of by a task queued to make it. The same function under
    the same lock, so the debounce and the one job of a project at a time hold alike; on the
    embedded default the queued task ran in-process anyway. A request that fails is handed
    to that task, which retries it, so the change is not lost with the attempt."""
    ids = sorted(set(item_ids))

    def ask() -> None:
        try:
            aggregation_request(project_id, item_ids=ids)
        except Exception:
            logger.warning(
                "aggregation request for project %s failed here; queued as a task", project_id, exc_info=True
            )
            enqueue_rollback_unsafe("annotation.tasks.request_aggregation", project_id, ids)

    transaction.on_commit(ask)


def aggregation_request(project_id: int, *, change: bool = True, item_ids: list[int] | None = None) -> Job | None:
    """Record and count a change of the project's votes or decisions (`change`: the items
    `item_ids`, None for the whole project) and queue an
    aggregation job unless one is already queued (it will read the votes stored by now when
    it starts) or one was queued less than MASHOV_AGGREGATION_DEBOUNCE_SECONDS ago: the
    change counter keeps what the debounce skipped, and the sweep (`aggregation_sweep`)
    runs it. Returns the new job, or None."""
    from annotation.services.jobs import job_create

    debounce = timedelta(seconds=django_settings.MASHOV_AGGREGATION_DEBOUNCE_SECONDS)
    with transaction.atomic():
        project = Project.objects.select_for_update().filter(pk=project_id).only("pk", "kind").first()
        kind = None if project is None else installed_kind(project.kind)
        # Gone, not installed, or of a kind without labels whose report is not kept by the
        # changed items (a run would have nothing to do).
        if kind is None or not (kind.labels or kind.report_counted):
            return None
        if change:
            Project.objects.filter(pk=project_id).update(aggregation_requested=F("aggregation_requested") + 1)
            aggregation_changes_record(project_id, item_ids)
        jobs = Job.objects.filter(project_id=project_id, kind=JOB_TYPE)
        if jobs.filter(Q(status=Job.Status.QUEUED) | Q(created_at__gte=timezone.now() - debounce)).exists():
            if django_settings.CELERY_TASK_ALWAYS_EAGER:
                # No beat to sweep: the next request after the delay runs it (`aggregation_run_due`).
                _due_in_process.setdefault(project_id, time.monotonic() + debounce.total_seconds())
            return None
        return job_create(kind=JOB_TYPE, project=project)


def aggregation_changes_record(project_id: int, item_ids: list[int] | None) -> None:
    """Record that the items `item_ids` (None: the whole project) changed, for the next run."""
    AggregationChange.objects.bulk_create(
        [AggregationChange(project_id=project_id, item_id=item_id) for item_id in item_ids]
        if item_ids is not None
        else [AggregationChange(project_id=project_id, item_id=None)],
        batch_size=WRITE_BATCH,
    )


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

    kinds = [name for name in available_kinds() if get_kind(name).labels or get_kind(name).report_counted]
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
    """The worker's job. While another run of the project holds its lock (a job the
    debounce let start while a long run went on), it ends at once without reading
    anything: waiting would hold a worker process for the other run's length, and the
    changes it was asked for stay recorded and counted, so the sweep queues a run for them
    once the other one is done."""
    from annotation.services.jobs import job_set_progress

    project = job.project
    assert project is not None  # aggregation jobs are made for a project (aggregation_request)
    with _one_run_at_a_time(project.pk, wait=False) as running:
        if not running:
            return {"skipped": "another aggregation of the project is running"}
        result = aggregation_compute_for_project(
            project, job=job, progress=lambda share: job_set_progress(job.pk, share)
        )
        if "full" not in result:  # a kind without labels: no run stored its figures
            project_figures_store(project)  # what the supervisor's pages of a large project read
    return result


def aggregation_compute_for_project(
    project: Project, *, job: Job | None = None, progress=None, full: bool | None = None
) -> dict:
    """Compute every method, store the results (module docstring) and let the chosen method
    decide what it owns through the ledger. A full run reads the whole project; an
    incremental one only the items recorded as changed (AggregationChange) and those
    waiting as `deciding` ("Incremental runs" in the module docstring). `full`: force one
    or the other; None lets `_full_run_due` choose. Idempotent: a second run on the same
    votes writes the same aggregates and decides nothing new. Runs of one project never
    overlap (`_one_run_at_a_time`)."""
    kind = get_kind(project.kind)
    if not kind.labels and not kind.report_counted:
        return {"items": 0, "methods": []}
    with _one_run_at_a_time(project.pk):
        # The change count this run answers for: changes counted after this read ask for
        # another run (`aggregation_sweep`).
        seen = Project.objects.filter(pk=project.pk).values_list("aggregation_requested", flat=True).first() or 0
        last_change, changed = _changes_recorded(project)
        state = stored_figures(project, AGGREGATION_STATE) or {}
        if full is None:
            full = _full_run_due(state, changed)
        if not kind.labels:
            # No method to run: the kind's report, kept by the changed items, follows them
            # (read whole on the full runs' schedule, as the figures of the kinds with labels).
            result = {
                "items": 0,
                "methods": [],
                "item_ids": None if full else sorted(changed or ()),
                "items_in_project": Item.objects.filter(project=project).count() if full else None,
            }
        elif full:
            result = _compute_full(project, kind, job=job, progress=progress)
        else:
            assert changed is not None
            result = _compute_incremental(project, kind, changed, job=job, progress=progress)
        if full:
            state = {"full_at": timezone.now().isoformat(), "items": result["items_in_project"], "changed": 0}
        else:
            assert changed is not None
            state = {**state, "changed": int(state.get("changed", 0)) + len(changed)}
        # The supervisor's figures follow the items this run read. A full run re-estimates
        # Dawid-Skene and MACE, which may change any item's aggregates (whether the methods
        # agree) and, by its decisions, its gold: its figures read every item too, on the
        # full runs' schedule.
        project_figures_store(project, result.pop("item_ids", None))
        ProjectFigures.objects.update_or_create(
            project=project, name=AGGREGATION_STATE, defaults={"value": state, "computed_at": timezone.now()}
        )
        # Only now: a run that stopped before this point leaves the changes for the next one.
        AggregationChange.objects.filter(project=project, pk__lte=last_change).delete()
        Project.objects.filter(pk=project.pk, aggregation_done__lt=seen).update(aggregation_done=seen)
    if progress is not None:
        progress(1.0)
    return {**result, "full": full}


@contextmanager
def _one_run_at_a_time(project_id: int, *, wait: bool = True):
    """Hold the project's aggregation lock for the run (a PostgreSQL session advisory
    lock, taken again by the same session at no cost); yields whether it is held. `wait`:
    a second run of the same project waits for the first, then reads what it left;
    without, it yields False at once while another session holds it. Without PostgreSQL
    (the embedded default runs jobs one at a time in-process) a no-op that yields True."""
    if connection.vendor != "postgresql":
        yield True
        return
    with connection.cursor() as cursor:
        if wait:
            cursor.execute("SELECT pg_advisory_lock(%s, %s)", [LOCK_NAMESPACE, project_id])
        else:
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [LOCK_NAMESPACE, project_id])
            if not cursor.fetchone()[0]:
                yield False
                return
    try:
        yield True
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [LOCK_NAMESPACE, project_id])


def _changes_recorded(project: Project) -> tuple[int, set[int] | None]:
    """(the last change row read, the changed item ids — None when a change asked for the
    whole project)."""
    last = 0
    changed: set[int] | None = set()
    for pk, item_id in AggregationChange.objects.filter(project=project).values_list("pk", "item_id").iterator():
        last = max(last, pk)
        if item_id is None:
            changed = None
        elif changed is not None:
            changed.add(item_id)
    return last, changed


def _full_run_due(state: dict, changed: set[int] | None) -> bool:
    """Whether this run must read the whole project: no full run yet, a change that names
    no items, a small project (under MASHOV_AGGREGATION_INCREMENTAL_ITEMS at its last full
    run, where a full run costs little and keeps Dawid-Skene and MACE re-estimated on every
    change), more than MASHOV_AGGREGATION_FULL_SHARE of its items changed since the last
    full run, or that run is MASHOV_AGGREGATION_FULL_SECONDS old."""
    if not state or changed is None:
        return True
    items = int(state.get("items", 0))
    if items < django_settings.MASHOV_AGGREGATION_INCREMENTAL_ITEMS:
        return True
    if int(state.get("changed", 0)) + len(changed) > django_settings.MASHOV_AGGREGATION_FULL_SHARE * items:
        return True
    full_at = parse_datetime(state.get("full_at") or "")
    age = django_settings.MASHOV_AGGREGATION_FULL_SECONDS
    return full_at is None or timezone.now() - full_at >= timedelta(seconds=age)


def _rule(kind, settings: dict) -> tuple[int, int]:
    k, n = kind.k_of_n_rule(settings)
    if kind.adaptive_overlap(settings):
        n = k  # the number of votes varies: k agreeing votes decide (metrics.aggregation.needs_another_vote)
    return k, n


def _compute_full(project: Project, kind, *, job: Job | None, progress) -> dict:
    settings = kind.project_settings(project)
    k, n = _rule(kind, settings)
    pool = project_vote_arrays(project, kind, author_votes=kind.aggregates_by_consensus)
    results = {}
    for position, method in enumerate(METHODS):
        results[method] = _aggregate(pool, method, k=k, n=n)
        if progress is not None:
            progress(0.7 * (position + 1) / len(METHODS))
    now = timezone.now()
    with transaction.atomic():
        # An item whose round reopened (a revision), or closed without a vote, keeps no
        # aggregate of a round before.
        ItemAggregate.objects.filter(item__project=project).filter(
            Q(item__status=Item.Status.OPEN) | ~Q(round=F("item__round"))
        ).delete()
        shares = _write_aggregates(pool, results, now)
        AnnotatorCompetence.objects.filter(project=project, method__in=AGREEMENT_METHODS).delete()
        _write_competences(project, pool, results, shares, now)
    chosen = settings["aggregation"]
    decided = decide_by_chosen_method(project, kind, settings, ChosenLabels(pool, results[chosen]), job=job)
    return {
        "items": int(pool.closed[pool.voted_at].sum()),
        "items_in_project": len(pool.item_ids),
        "votes": len(pool.votes),
        "methods": list(METHODS),
        "chosen": chosen,
        **decided,
    }


def _compute_incremental(project: Project, kind, changed: set[int], *, job: Job | None, progress) -> dict:
    """The run over the changed items and the `deciding` ones: k-of-n and majority exactly
    as a full run would compute them (each item's label depends on its own votes; the
    annotators' agreement counts are updated by each item's old and new contributions);
    Dawid-Skene and MACE as each item's posterior under the annotators' parameters of the
    last full run (metrics.aggregation.posterior_from_competence: the E-step with the
    parameters held fixed, not a re-estimation)."""
    settings = kind.project_settings(project)
    k, n = _rule(kind, settings)
    deciding = Item.objects.filter(project=project, status=Item.Status.DECIDING, probe_of__isnull=True)
    ids = sorted(changed | set(deciding.values_list("pk", flat=True)))
    pool = project_vote_arrays(project, kind, author_votes=kind.aggregates_by_consensus, item_ids=ids)
    results = {method: _aggregate(pool, method, k=k, n=n) for method in AGREEMENT_METHODS}
    for method in POOL_METHODS:
        results[method] = _posteriors_under_stored(project, method, pool)
    if progress is not None:
        progress(0.7)
    now = timezone.now()
    with transaction.atomic():
        old = defaultdict(list)
        for start in range(0, len(ids), WRITE_BATCH):
            for method, given in ItemAggregate.objects.filter(
                column_in(ItemAggregate, "item_id", ids[start : start + WRITE_BATCH]), method__in=AGREEMENT_METHODS
            ).values_list("method", "contributions"):
                old[method].append(given)
            # Every changed item's aggregates are written anew below, or left out: an open
            # round, or a closed one without a vote, keeps none.
            ItemAggregate.objects.filter(column_in(ItemAggregate, "item_id", ids[start : start + WRITE_BATCH])).delete()
        shares = _write_aggregates(pool, results, now)
        new = {method: _agreement_counts(pool, *shares[method]) for method in AGREEMENT_METHODS}
        _update_counts(project, old, new, now)
    decided = decide_by_chosen_method(
        project, kind, settings, ChosenLabels(pool, results[settings["aggregation"]]), job=job, item_ids=ids
    )
    return {
        "items": int(pool.closed[pool.voted_at].sum()),
        "votes": len(pool.votes),
        "methods": list(METHODS),
        "chosen": settings["aggregation"],
        "item_ids": ids,
        **decided,
    }


def _aggregate(pool: ProjectVotes, method: str, *, k: int, n: int) -> ArrayResult:
    import numpy as np

    if len(pool.votes):
        return aggregate_arrays(pool.votes, method, k=k, n=n, seed=0)
    return ArrayResult(method, np.zeros(0, dtype=np.int8), np.zeros(0), np.full(pool.votes.n_annotators, np.nan))


class ChosenLabels:
    """The chosen method's result by item id, and the votes' tallies by label, for
    decide_by_chosen_method: looked up in the pool's arrays, not copied into dicts."""

    def __init__(self, pool: ProjectVotes, result: ArrayResult):
        self.pool = pool
        self.result = result

    def get(self, item_id: int) -> tuple[str | None, float] | None:
        voted = self.pool.voted
        number = int(voted.searchsorted(item_id))
        if number >= len(voted) or voted[number] != item_id:
            return None
        label = int(self.result.label[number])
        return (self.pool.votes.labels[label] if label >= 0 else None, float(self.result.confidence[number]))

    def tallies(self, item_ids: set[int]) -> dict[int, dict[str, int]]:
        """{item id: {label: votes}} of the items `item_ids`, labels by name."""
        import numpy as np

        votes = self.pool.votes
        chosen = np.isin(self.pool.voted, np.fromiter(item_ids, dtype=np.int64, count=len(item_ids)))
        picked = chosen[votes.item]
        tallies: dict[int, Counter] = defaultdict(Counter)
        for number, label in zip(votes.item[picked].tolist(), votes.label[picked].tolist()):
            tallies[int(self.pool.voted[number])][votes.labels[label]] += 1
        return {item_id: dict(sorted(counts.items())) for item_id, counts in tallies.items()}


def _agreement_shares(pool: ProjectVotes, label) -> tuple:
    """Per vote: whether it counts in its annotator's agreement with the method's label (a
    closed item with a label, a user's vote: the imported labels' pseudo-annotator has no
    competence row), and whether it agrees."""
    votes = pool.votes
    given = label[votes.item]
    counted = (given >= 0) & pool.closed[pool.voted_at][votes.item]
    counted &= pool.annotator_ids[votes.annotator] != IMPORTED_ID
    return counted, counted & (given == votes.label)


def _agreement_counts(pool: ProjectVotes, counted, agrees) -> dict[int, list[int]]:
    """{annotator id: [agreed, counted]} over the votes that count."""
    import numpy as np

    size = pool.votes.n_annotators
    total = np.bincount(pool.votes.annotator[counted], minlength=size)
    agreed = np.bincount(pool.votes.annotator[agrees], minlength=size)
    return {
        int(pool.annotator_ids[number]): [int(agreed[number]), int(total[number])]
        for number in np.flatnonzero(total).tolist()
    }


def _counts_of(contributions) -> dict[int, list[int]]:
    counts: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for given in contributions:
        for annotator, agrees in given:
            counts[annotator][0] += agrees
            counts[annotator][1] += 1
    return counts


def _update_counts(project: Project, old: dict, new: dict, now) -> None:
    """Take the changed items' old contributions out of the annotators' agreement counts and
    add their new ones (`new`: {method: {annotator: [agreed, counted]}}); competence =
    agreed / counted; an annotator left with nothing counted keeps no row (as after a full
    run)."""
    for method in AGREEMENT_METHODS:
        delta: dict[int, list[int]] = defaultdict(lambda: [0, 0])
        for annotator, (agrees, counted) in new[method].items():
            delta[annotator] = [agrees, counted]
        for annotator, (agrees, counted) in _counts_of(old[method]).items():
            delta[annotator][0] -= agrees
            delta[annotator][1] -= counted
        delta = {annotator: pair for annotator, pair in delta.items() if pair != [0, 0]}
        if not delta:
            continue
        rows = {
            row.annotator_id: row
            for row in AnnotatorCompetence.objects.select_for_update().filter(
                project=project, method=method, annotator_id__in=list(delta)
            )
        }
        gone, kept = [], []
        for annotator, (agrees, counted) in delta.items():
            row = rows.get(annotator) or AnnotatorCompetence(project=project, annotator_id=annotator, method=method)
            row.agreed += agrees
            row.counted += counted
            if row.counted <= 0:
                gone.append(annotator)
                continue
            row.competence = row.agreed / row.counted
            row.confusion = []
            row.computed_at = now
            kept.append(row)
        AnnotatorCompetence.objects.filter(project=project, method=method, annotator_id__in=gone).delete()
        _upsert_competences(kept)


def _posteriors_under_stored(project: Project, method: str, pool: ProjectVotes) -> ArrayResult:
    """A pool method's result for the items of `pool` under the annotators' parameters its
    last full run stored (each item's posterior; competences unchanged)."""
    import numpy as np

    stored = _stored_parameters(project, method)
    default = _median_competence(stored)
    size = pool.votes.n_annotators
    if not len(pool.votes):
        return ArrayResult(method, np.zeros(0, dtype=np.int8), np.zeros(0), np.full(size, np.nan))
    parameters = [stored.get(annotator) or (None, None) for annotator in pool.annotator_ids.tolist()]
    label, confidence = posteriors_from_competence_arrays(pool.votes, parameters, default_competence=default)
    return ArrayResult(method, label, confidence, np.full(size, np.nan))


def _stored_parameters(project_or_id, method: str) -> dict:
    return {
        annotator: (competence, confusion)
        for annotator, competence, confusion in AnnotatorCompetence.objects.filter(
            project=project_or_id, method=method
        ).values_list("annotator_id", "competence", "confusion")
    }


def _median_competence(stored: dict) -> float:
    known = sorted(competence for competence, _confusion in stored.values())
    return known[len(known) // 2] if known else DEFAULT_COMPETENCE


def _write_aggregates(pool: ProjectVotes, results: dict[str, ArrayResult], now) -> dict[str, tuple]:
    """Upsert one ItemAggregate per (closed item with a vote, method), AGGREGATE_BATCH items
    at a time: on PostgreSQL each batch is COPYed into a temporary table and upserted from
    it by one statement, so that the process holds one batch's text, never a row object
    per aggregate (4M aggregates at 1M items). Call inside the run's transaction: the
    batches land together or not at all. Returns each agreement method's per-vote shares
    (_agreement_shares)."""
    shares = {method: _agreement_shares(pool, results[method].label) for method in AGREEMENT_METHODS}
    starts = pool.votes.starts()
    closed = pool.closed[pool.voted_at]
    postgres = connection.vendor == "postgresql"
    if postgres:
        _staging_create()
    for low in range(0, pool.votes.n_items, AGGREGATE_BATCH):
        high = min(low + AGGREGATE_BATCH, pool.votes.n_items)
        rows = _aggregate_rows(pool, results, shares, starts, closed, low, high)
        if postgres:
            _staging_upsert(rows, now)
            continue
        ItemAggregate.objects.bulk_create(
            [
                ItemAggregate(
                    item_id=item_id,
                    round=round_,
                    method=method,
                    label=label,
                    confidence=confidence,
                    contributions=json.loads(contributions),
                    computed_at=now,
                )  # fmt: skip
                for item_id, round_, method, label, confidence, contributions in rows
            ],
            batch_size=WRITE_BATCH,
            update_conflicts=True,
            unique_fields=["item", "method"],
            update_fields=["round", "label", "confidence", "contributions", "computed_at"],
        )
    return shares


def _aggregate_rows(pool: ProjectVotes, results: dict, shares: dict, starts, closed, low: int, high: int):
    """The aggregates of the items numbered low … high − 1 that are closed: (item id, round,
    method, label, confidence, contributions as JSON)."""
    ids = pool.voted[low:high].tolist()
    rounds = pool.rounds[pool.voted_at[low:high]].tolist()
    kept = closed[low:high].tolist()
    labels = pool.votes.labels
    for method, result in results.items():
        given = ["[]"] * (high - low)
        if method in shares:
            counted, agrees = shares[method]
            given = _contributions_json(pool, counted, agrees, starts, low, high)
        for offset, (label, confidence) in enumerate(
            zip(result.label[low:high].tolist(), result.confidence[low:high].tolist())
        ):
            if kept[offset]:
                yield (
                    ids[offset],
                    rounds[offset],
                    method,
                    labels[label] if label >= 0 else "",
                    confidence,
                    given[offset],
                )


def _contributions_json(pool: ProjectVotes, counted, agrees, starts, low: int, high: int) -> list[str]:
    """Each item's [[annotator id, agrees], ...] (by annotator id) as JSON, items low … high − 1."""
    begin, end = int(starts[low]), int(starts[high])
    mask = counted[begin:end]
    parts: list[list[str]] = [[] for _ in range(high - low)]
    for number, annotator, agree in zip(
        (pool.votes.item[begin:end][mask] - low).tolist(),
        pool.annotator_ids[pool.votes.annotator[begin:end][mask]].tolist(),
        agrees[begin:end][mask].tolist(),
    ):
        parts[number].append(f"[{annotator}, {int(agree)}]")
    return ["[" + ", ".join(given) + "]" for given in parts]


STAGING = "aggregation_staging"


def _staging_create() -> None:
    """The run's temporary table of aggregates (emptied: a second run in one transaction
    finds the first one's)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TEMPORARY TABLE IF NOT EXISTS {STAGING} (item_id bigint, round integer, method text,"
            " label text, confidence double precision, contributions jsonb) ON COMMIT DROP"
        )
        cursor.execute(f"TRUNCATE {STAGING}")


def _staging_upsert(rows, now) -> None:
    buffer = io.StringIO()
    for item_id, round_, method, label, confidence, contributions in rows:
        buffer.write(f"{item_id}\t{round_}\t{method}\t{_copy_text(label)}\t{confidence!r}\t{contributions}\n")
    buffer.seek(0)
    table = ItemAggregate._meta.db_table
    with connection.cursor() as cursor:
        cursor.copy_expert(
            f"COPY {STAGING} (item_id, round, method, label, confidence, contributions) FROM STDIN", buffer
        )
        cursor.execute(
            f"INSERT INTO {table} (item_id, round, method, label, confidence, contributions, computed_at)"
            f" SELECT item_id, round, method, label, confidence, contributions, %s FROM {STAGING}"
            " ON CONFLICT (item_id, method) DO UPDATE SET round = EXCLUDED.round, label = EXCLUDED.label,"
            " confidence = EXCLUDED.confidence, contributions = EXCLUDED.contributions,"
            " computed_at = EXCLUDED.computed_at"
            # An aggregate the run found as the last one left it keeps its row (and its
            # computed_at): a full run rewrote every row of the project, most unchanged.
            f" WHERE ({table}.round, {table}.label, {table}.confidence, {table}.contributions)"
            " IS DISTINCT FROM (EXCLUDED.round, EXCLUDED.label, EXCLUDED.confidence, EXCLUDED.contributions)",
            [now],
        )
        cursor.execute(f"TRUNCATE {STAGING}")


def _copy_text(value: str) -> str:
    """A value in COPY's text format."""
    return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def _write_competences(project: Project, pool: ProjectVotes, results: dict, shares: dict, now) -> None:
    rows: list = []
    for method, result in results.items():
        if method in AGREEMENT_METHODS:
            rows.extend(
                AnnotatorCompetence(
                    project=project,
                    annotator_id=annotator,
                    method=method,
                    competence=agreed / counted,
                    confusion=[],
                    agreed=agreed,
                    counted=counted,
                    computed_at=now,
                )  # fmt: skip
                for annotator, (agreed, counted) in _agreement_counts(pool, *shares[method]).items()
            )
            continue
        for number, (annotator, competence) in enumerate(zip(pool.annotator_ids.tolist(), result.competence.tolist())):
            if annotator == IMPORTED_ID or competence != competence:  # no row; NaN: no figure
                continue
            rows.append(
                AnnotatorCompetence(
                    project=project,
                    annotator_id=annotator,
                    method=method,
                    competence=competence,
                    confusion=[] if result.confusion is None else result.confusion[number].tolist(),
                    computed_at=now,
                )  # fmt: skip
            )
    _upsert_competences(rows)


def _upsert_competences(rows: list) -> None:
    AnnotatorCompetence.objects.bulk_create(
        rows,
        batch_size=WRITE_BATCH,
        update_conflicts=True,
        unique_fields=["project", "annotator", "method"],
        update_fields=["competence", "confusion", "agreed", "counted", "computed_at"],
    )


def decide_by_chosen_method(
    project: Project,
    kind,
    settings: dict,
    result: ChosenLabels,
    *,
    job: Job | None = None,
    item_ids: list[int] | None = None,
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

    `item_ids`: only those items (an incremental run: no other item's label changed).
    Returns {"decided": deciding items decided, "gold_changed": decided items relabelled}."""
    method = settings["aggregation"]
    pool = pool_method_deciding(kind, settings)
    owned = tuple(kind.gold_statuses_from_aggregation(method))
    statuses = ((Item.Status.DECIDING,) if pool else ()) + owned
    counts = {"decided": 0, "gold_changed": 0}
    if not statuses:
        return counts
    target = confidence_target(settings)
    candidates = Item.objects.filter(project=project, probe_of__isnull=True, status__in=statuses)
    if item_ids is not None:
        candidates = candidates.filter(column_in(Item, "id", item_ids))
    candidate_ids, deciding = [], set()
    for pk, status in candidates.order_by("pk").values_list("pk", "status").iterator(chunk_size=WRITE_BATCH):
        candidate_ids.append(pk)
        if status == Item.Status.DECIDING:
            deciding.add(pk)
    # The votes by label of the rounds this run may decide only (their outcomes record them).
    tallies = result.tallies(deciding) if deciding else {}
    for start in range(0, len(candidate_ids), WRITE_BATCH):
        with transaction.atomic():
            rows = list(
                Item.objects.select_for_update()
                .filter(pk__in=candidate_ids[start : start + WRITE_BATCH], status__in=statuses)
                .order_by("pk")
                .values_list("pk", "round", "status", "gold_label", "author_id", "reference_label")
            )
            standing = effective_decisions((pk, round_) for pk, round_, *_rest in rows)
            verdicts, outcomes = [], []
            for pk, round_, status, gold, author_id, reference in rows:
                label, confidence = result.get(pk) or (None, 0.0)
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
    cast: list[tuple[int | None, Any]] = [
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
    ratings: list[Any] = [
        value.get("ratings") for value in values if isinstance(value, dict) and isinstance(value.get("ratings"), dict)
    ]
    return ratings_spread(ratings) > spread


def _pool_confidence(item: Item, settings: dict, cast: list[tuple], labels: tuple[str, ...]) -> float | None:
    """The item's posterior confidence under the annotators' stored parameters; None before
    the first pool run stored any (one query)."""
    stored = _stored_parameters(item.project_id, settings["aggregation"])
    if not stored:
        return None
    default = _median_competence(stored)
    votes = [(label, *(stored.get(annotator) or (None, None))) for annotator, label in cast if label in labels]
    posterior = posterior_from_competence(votes, labels, default_competence=default)
    return max(posterior.values())
