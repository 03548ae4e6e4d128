"""The bias job on a real Celery worker and PostgreSQL: queued by the API, run by the
worker with progress, its result read back over HTTP, the flags in the items."""

import pytest

from tests.conftest import wait_until
from tests.release.bias_setup import farstail_release

pytestmark = [pytest.mark.worker, pytest.mark.postgres]


@pytest.fixture
def project(transactional_db, make_user, client_for):
    from annotation.models import Membership
    from annotation.services.projects import project_create

    admin = make_user("bw-admin", staff=True)
    project = project_create(actor=admin, slug="bias-w", name="Bias on the worker", kind="nli_relabel", language="fa")
    sup = make_user("bw-sup")
    Membership.objects.create(project=project, user=sup, role="supervisor", status="active")
    client = client_for(sup)
    return project, client, farstail_release(client, "bias-w")


def test_the_worker_runs_the_analysis_and_a_rerun_while_it_runs_is_409(project, celery_worker):
    from annotation.models import Item, Job

    _, client, release = project
    started = client.post("/api/projects/bias-w/bias/", {"split": "train"}, format="json")
    assert started.status_code == 202, started.content
    job_id = started.json()["job"]
    second = client.post("/api/projects/bias-w/bias/", {}, format="json")
    # Refused while the first is queued or running; accepted only once it has finished.
    assert second.status_code == 409 or Job.objects.get(pk=job_id).status in ("done", "failed"), second.content
    job = wait_until(lambda: (j := Job.objects.get(pk=job_id)).status in ("done", "failed") and j, timeout=120)
    assert job.status == "done", job.error
    assert job.progress == 1.0
    wait_until(lambda: not Job.objects.filter(kind="bias", status__in=("queued", "running")).exists(), timeout=120)
    result = client.get("/api/projects/bias-w/bias/").json()
    assert result["flags"]["hard(overlap)"]["items"] == 61
    test_ids = [item.pk for item in release["test"]]
    stored = Item.objects.filter(pk__in=test_ids).values_list("computed", flat=True)
    assert all(
        isinstance(c["computed_hard(overlap)"], bool) and isinstance(c["computed_hard(hypothesis)"], bool)
        for c in stored
    )
    assert sum(c["computed_hard(overlap)"] for c in stored) == result["flags"]["hard(overlap)"]["hard"]
