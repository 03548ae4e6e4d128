"""Never two aggregation runs of one project at once, on the real stack (PostgreSQL's
advisory lock, the suite's Celery worker): a job queued while a run of its project is
under way ends at once without reading or writing anything, its change left recorded
and counted, and the sweep's next job runs it once the first run is done."""

import threading
from datetime import timedelta

from django.db import connection
from django.utils import timezone

from tests.conftest import wait_until
from tests.services.test_incremental_aggregation import build, vote


def test_a_job_queued_during_a_run_of_its_project_leaves_the_change_to_the_next_job(
    transactional_db, make_user, celery_worker
):
    from annotation.models import AggregationChange, ItemAggregate, Job, Project
    from annotation.services.aggregation import aggregation_compute_for_project, aggregation_request, aggregation_sweep

    project, rows, people = build(make_user, 30, seed=4)
    inside, release, failures = threading.Event(), threading.Event(), []

    def first_run():
        # A run under way: it holds the lock while it computes (paused after its first method).
        def progress(_share):
            inside.set()
            release.wait(120)

        try:
            aggregation_compute_for_project(Project.objects.get(pk=project.pk), progress=progress)
        except Exception as error:  # reported to the test's thread
            failures.append(error)
        finally:
            connection.close()

    thread = threading.Thread(target=first_run)
    thread.start()
    try:
        assert inside.wait(60)
        item = rows[0]
        vote(project, item, people[0], "neutral")
        job = aggregation_request(project.pk, item_ids=[item.pk])
        assert job is not None
        wait_until(lambda: Job.objects.get(pk=job.pk).status in ("done", "failed"), timeout=120)
        job.refresh_from_db()
        assert job.status == "done" and "skipped" in job.result, job.result
        # Nothing read or written for it: the change waits, the first run has not written yet.
        assert AggregationChange.objects.filter(project=project, item_id=item.pk).exists()
        assert not ItemAggregate.objects.filter(item__project=project).exists()
    finally:
        release.set()
        thread.join(120)
    assert not failures and not thread.is_alive()
    project.refresh_from_db()
    assert project.aggregation_requested > project.aggregation_done
    # As if the debounce had passed: the sweep queues the run the skipped job left.
    Job.objects.filter(project=project, kind="aggregation").update(created_at=timezone.now() - timedelta(minutes=5))
    assert aggregation_sweep() == 1
    wait_until(
        lambda: not Job.objects.filter(project=project, kind="aggregation").exclude(status="done").exists(),
        timeout=120,
    )
    project.refresh_from_db()
    assert project.aggregation_requested == project.aggregation_done
    assert not AggregationChange.objects.filter(project=project).exists()
    latest = Job.objects.filter(project=project, kind="aggregation").latest("pk")
    assert "skipped" not in latest.result and latest.result["items"] > 0
