"""Background runs: create a Job row, enqueue its task after commit, record progress."""

from django.db import transaction
from django.utils import timezone

from annotation.models import Job
from annotation.services.tasks_queue import enqueue_rollback_unsafe


def job_create(*, kind: str, project=None, user=None, params: dict | None = None, input_data: bytes | None = None) -> Job:
    """Store a queued Job and enqueue it when the surrounding transaction commits."""
    job = Job.objects.create(kind=kind, project=project, created_by=user, params=params or {}, input_data=input_data)
    transaction.on_commit(lambda: job_enqueue(job.pk))
    return job


def job_enqueue(job_id: int) -> None:
    """Publish the job's task; a job whose publish fails stays queued for the sweep."""
    from annotation.tasks import run_job

    enqueue_rollback_unsafe(run_job, job_id)


def job_set_progress(job_id: int, progress: float) -> None:
    Job.objects.filter(pk=job_id).update(progress=max(0.0, min(1.0, progress)))


def job_claim(job_id: int) -> Job | None:
    """Mark a queued (or redelivered running) job as running; None when it already finished,
    so a redelivered message changes nothing."""
    with transaction.atomic():
        job = Job.objects.select_for_update().filter(pk=job_id).first()
        if job is None or job.status in (Job.Status.DONE, Job.Status.FAILED):
            return None
        job.status = Job.Status.RUNNING
        job.attempts += 1
        job.started_at = job.started_at or timezone.now()
        job.save(update_fields=["status", "attempts", "started_at"])
        return job


def job_finish(job_id: int, *, result: dict | None = None, error: dict | None = None) -> None:
    Job.objects.filter(pk=job_id).update(
        status=Job.Status.FAILED if error else Job.Status.DONE,
        progress=1.0,
        result=result,
        error=error,
        finished_at=timezone.now(),
        input_data=None,  # the upload is no longer needed once the job has an outcome
    )


def jobs_sweep(older_than_seconds: int = 60) -> int:
    """Re-enqueue jobs still queued after `older_than_seconds` (a lost message, a broker
    that was down when they were created). Running them twice is safe: job_claim guards."""
    cutoff = timezone.now() - timezone.timedelta(seconds=older_than_seconds)
    stalled = list(Job.objects.filter(status=Job.Status.QUEUED, created_at__lt=cutoff).values_list("pk", flat=True)[:500])
    for job_id in stalled:
        job_enqueue(job_id)
    return len(stalled)
