"""The curation jobs on PostgreSQL with a real Celery worker: the search, the split and the
leak check started over HTTP run on the worker, record their runs, and give the same result
when run again."""

import json

import pytest

from tests.conftest import wait_until

pytestmark = [pytest.mark.worker, pytest.mark.postgres]

SLUG = "fa-release-w"
PREMISES = [
    "کتاب‌های زیادی در کتابخانه مرکزی شهر نگهداری می‌شود و دانشجویان هر روز به آنجا می‌روند",
    "رودخانه از میان دره می‌گذرد و کشاورزان از آب آن برای آبیاری مزرعه‌ها استفاده می‌کنند",
    "دانشمندان ایرانی در قرن چهارم هجری آثار مهمی در ریاضیات و نجوم نوشته‌اند",
]

HYPOTHESES = ["این متن درباره یک کتاب قدیمی است", "هیچ کس در تابستان به آنجا نمی‌رود", "شاید فردا صبح باران ببارد"]


@pytest.fixture
def project(transactional_db, make_user, client_for):
    from annotation.models import Membership
    from annotation.services.imports import items_import
    from annotation.services.projects import project_create

    admin = make_user("rw-admin", staff=True)
    sup = make_user("rw-sup")
    project = project_create(actor=admin, slug=SLUG, name="Release on the worker", kind="nli_relabel", language="fa")
    Membership.objects.create(project=project, user=sup, role="supervisor", status="active")
    rows = [
        {"id": f"q{g}-{k}", "premise": premise, "hypothesis": f"{hypothesis} {g}", "group": f"q{g}"}
        for g, premise in enumerate(PREMISES)
        for k, hypothesis in enumerate(HYPOTHESES)
    ]
    # A near-copy of q0-1 written for another question.
    rows.append({"id": "copy", "premise": PREMISES[0] + " .", "hypothesis": rows[1]["hypothesis"], "group": "other"})
    data = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()
    assert items_import(project=project, data=data, fmt="jsonl", user=admin).created == len(rows)
    return client_for(sup)


def run_on_worker(client, path: str, body: dict) -> dict:
    from annotation.models import Job

    response = client.post(f"/api/projects/{SLUG}/{path}/", body, format="json")
    assert response.status_code == 202, response.content
    job_id = response.json()["job"]
    job = wait_until(lambda: Job.objects.filter(pk=job_id, status__in=("done", "failed")).first(), timeout=60)
    assert job.status == "done", job.error
    assert client.get(f"/api/jobs/{job_id}/").json()["status"] == "done"
    return job.result


def test_search_split_and_leak_check_run_on_the_worker(project, celery_worker):
    from annotation.models import CurationRun, Item

    client = project
    found = run_on_worker(client, "duplicates", {})
    assert found["pairs"] == 1
    pairs = client.get(f"/api/projects/{SLUG}/duplicates/").json()["results"]
    assert [(p["a"]["external_id"], p["b"]["external_id"]) for p in pairs] == [("q0-1", "copy")]
    assert run_on_worker(client, "duplicates", {})["pairs"] == 1

    split = run_on_worker(client, "splits", {"seed": 11, "shares": {"train": 0.5, "dev": 0.25, "test": 0.25}})
    # The copy's premise joins its group to q0's: three components of groups, the largest 4 items.
    assert (split["components"], split["largest_component"], split["merged_components"]) == (3, 4, 1)
    stored = dict(Item.objects.filter(project__slug=SLUG).values_list("external_id", "split"))
    assert stored["copy"] == stored["q0-0"] == stored["q0-1"] == stored["q0-2"]
    again = run_on_worker(client, "splits", {"seed": 11, "shares": {"train": 0.5, "dev": 0.25, "test": 0.25}})
    assert (
        again["changed"] == 0
        and dict(Item.objects.filter(project__slug=SLUG).values_list("external_id", "split")) == stored
    )

    assert run_on_worker(client, "leaks", {})["count"] == 0
    assert list(CurationRun.objects.filter(project__slug=SLUG).order_by("pk").values_list("kind", flat=True)) == [
        "duplicates", "duplicates", "splits", "splits", "leaks"]  # fmt: skip
    assert CurationRun.objects.filter(kind="splits").first().params == {
        "shares": {"train": 0.5, "dev": 0.25, "test": 0.25}, "seed": 11, "leak_threshold": 0.9}  # fmt: skip
