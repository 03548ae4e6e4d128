"""Celery tasks: small wrappers that take ids and call a service (HackSoft styleguide)."""

import logging

from celery import shared_task
from django.db import InterfaceError, OperationalError
from django.utils import translation
from django.utils.translation import gettext_noop

from annotation.errors import KindNotInstalled
from annotation.services import aggregation, consensus, item_counts, jobs, webhooks
from annotation.stored_text import stored_message

logger = logging.getLogger(__name__)


def _handlers():
    """Job kind → the function that runs it: the core's jobs, then those the kinds declare."""
    from django.utils.module_loading import import_string

    from annotation.kinds.registry import job_handlers
    from annotation.release.baseline_model import model_train_job
    from annotation.release.bias import bias_analysis_job
    from annotation.release.duplicates import duplicates_compute_job
    from annotation.release.evaluation import evaluation_run_job
    from annotation.release.publish import release_build_job
    from annotation.release.splits import leaks_compute_job, splits_compute_job
    from annotation.services.aggregation import aggregation_compute_job
    from annotation.services.agreement import agreement_compute_job
    from annotation.services.imports import items_import_job

    handlers = {
        "import": items_import_job,
        "agreement": agreement_compute_job,
        "evaluation": evaluation_run_job,
        "model_train": model_train_job,
        "bias": bias_analysis_job,
        "aggregation": aggregation_compute_job,
        "release": release_build_job,
    }
    # The release stage's curation jobs (near-duplicates, splits, leak check).
    handlers.update(duplicates=duplicates_compute_job, splits=splits_compute_job, leaks=leaks_compute_job)
    handlers.update((job_kind, import_string(path)) for job_kind, path in job_handlers().items())
    return handlers


@shared_task(name="annotation.tasks.run_job", acks_late=True, reject_on_worker_lost=True)
def run_job(job_id: int) -> None:
    """Run a Job by its kind. Idempotent: a job that is not queued is left alone, and running a
    job again is safe for every kind (annotation.services.jobs). While it runs, its heartbeat
    tells the sweep that this worker is alive; if the worker dies, the sweep queues it again."""
    job = jobs.job_claim(job_id)
    if job is None:
        return
    handler = _handlers().get(job.kind)
    if handler is None:
        message = stored_message(gettext_noop("unknown job kind %(kind)s"), kind=job.kind)
        jobs.job_finish(job_id, error=message, attempt=job.attempts)
        return
    try:
        # No reader's language on the worker: what the job says is stored in English (the
        # message ids) and translated when it is read (annotation.stored_text).
        with jobs.job_heartbeat(job), translation.override(None):
            result = handler(job)
    except KindNotInstalled as exc:  # the site's configuration, not a fault: no traceback
        jobs.job_finish(job_id, error={"errors": [error.as_dict() for error in exc.errors]}, attempt=job.attempts)
        return
    except Exception as exc:  # the job records the failure; the worker carries on
        logger.exception("job %s failed", job_id)
        jobs.job_finish(job_id, error={"message": str(exc) or exc.__class__.__name__}, attempt=job.attempts)
        return
    if isinstance(result, dict) and "errors" in result:
        jobs.job_finish(job_id, error=result, attempt=job.attempts)
    else:
        jobs.job_finish(job_id, result=result, attempt=job.attempts)


# Idempotent tasks: acknowledged after they ran, redelivered if the worker dies, and
# retried (with backoff, a few times) only on transient database errors.
IDEMPOTENT_TASK = {
    "acks_late": True,
    "reject_on_worker_lost": True,
    "autoretry_for": (OperationalError, InterfaceError),
    "retry_backoff": 2,
    "retry_backoff_max": 60,
    "max_retries": 5,
}


@shared_task(name="annotation.tasks.compute_consensus", **IDEMPOTENT_TASK)
def compute_consensus(item_id: int) -> None:
    """Decide an item's round; safe to run any number of times (only transient database
    errors are retried)."""
    consensus.consensus_compute_for_item(item_id)


@shared_task(name="annotation.tasks.compute_consensus_batch", **IDEMPOTENT_TASK)
def compute_consensus_batch(item_ids: list[int]) -> int:
    """Decide a chunk of items (the sweep's unit of work); idempotent like the per-item
    task, one transaction per chunk."""
    return consensus.consensus_compute_batch(item_ids)


@shared_task(name="annotation.tasks.request_aggregation", **IDEMPOTENT_TASK)
def request_aggregation(project_id: int, item_ids: list[int] | None = None) -> None:
    """Rounds of the project's items `item_ids` closed (None: any of them): record the change
    and queue its aggregation job unless one is queued already (debounced;
    annotation.services.aggregation)."""
    aggregation.aggregation_request(project_id, item_ids=item_ids)


@shared_task(name="annotation.tasks.sweep_jobs")
def sweep_jobs() -> int:
    """Periodic (every 60 s on beat): queue again the jobs of a worker that died, and
    re-enqueue what a lost message or a downed broker left behind; fold the kept counts of
    items per status and of the adjudication queue (a minute's appended rows into one per count)."""
    item_counts.item_counts_fold()
    return (
        jobs.jobs_sweep() + consensus.consensus_sweep() + aggregation.aggregation_sweep() + webhooks.deliveries_sweep()
    )


@shared_task(name="annotation.tasks.deliver_webhook", acks_late=True, reject_on_worker_lost=True)
def deliver_webhook(delivery_id: int) -> str | None:
    """One attempt of a webhook delivery that is due; a failed one is sent again later with
    backoff (annotation.services.webhooks). Idempotent: a delivery that is not pending or
    not yet due is left alone."""
    return webhooks.delivery_attempt(delivery_id)
