"""Intrinsic measures of summaries (HeSum §3.3) computed by the "summary_intrinsic" job and
stored in Item.computed, on hand-computed Hebrew examples: novel n-grams n = 1..4 over
distinct n-grams, CMP = 1 - |S|/|A|, RED = sum(f - 1) / sum(f), whitespace tokens (so
"תקציב," and "תקציב" differ and Hebrew words are never dropped)."""

import json

import pytest

from tests.conftest import wait_until

# Ten whitespace tokens: הממשלה אישרה אמש את תקציב המדינה אחרי דיון ארוך במיוחד
ARTICLE = "הממשלה אישרה אמש את תקציב המדינה אחרי דיון ארוך במיוחד"
SUMMARIES = [
    # Copy-like, 5 words. Unigrams all in the article: 0. Bigrams: הממשלה-אישרה, את-תקציב,
    # תקציב-המדינה are in it, אישרה-את is not: 1/4. Trigrams: only את-תקציב-המדינה: 2/3
    # novel. 4-grams: both novel: 1. CMP 1 - 5/10. No repeats.
    {"system": "copy", "text": "הממשלה אישרה את תקציב המדינה"},
    # Repetitive, 6 words. Unigram types התקציב, אושר (novel), אחרי, דיון: 2/4. Bigram types
    # התקציב-אושר, אושר-התקציב, אושר-אחרי (novel), אחרי-דיון (in the article): 3/4; every
    # trigram and 4-gram is novel. CMP 1 - 6/10. RED1: התקציב ×2, אושר ×2 → 2/6.
    # RED2: התקציב-אושר ×2 of 5 bigrams → 1/5.
    {"system": "repeat", "text": "התקציב אושר התקציב אושר אחרי דיון"},
    # Punctuation stays on the token: "תקציב," is not "תקציב". 3 words: no 4-gram (None).
    {"system": "short", "text": "תקציב, אושר סופית."},
]
EXPECTED = [
    {
        "novel_ngrams": {"1": 0.0, "2": 0.25, "3": 2 / 3, "4": 1.0},
        "compression_ratio": 0.5,
        "redundancy": {"1": 0.0, "2": 0.0},
        "words": 5,
    },
    {
        "novel_ngrams": {"1": 0.5, "2": 0.75, "3": 1.0, "4": 1.0},
        "compression_ratio": 0.4,
        "redundancy": {"1": 1 / 3, "2": 0.2},
        "words": 6,
    },
    {
        "novel_ngrams": {"1": 1.0, "2": 1.0, "3": 1.0, "4": None},
        "compression_ratio": 0.7,
        "redundancy": {"1": 0.0, "2": 0.0},
        "words": 3,
    },
]
SECOND = {"id": "s2", "article": "שלום עולם", "summaries": [{"system": "copy", "text": "שלום שלום"}]}


def assert_measures(stored: dict) -> None:
    assert stored["tokens"] == "whitespace"
    assert stored["article_words"] == 10
    assert len(stored["summaries"]) == len(EXPECTED)
    for got, want in zip(stored["summaries"], EXPECTED):
        assert got["words"] == want["words"]
        assert got["compression_ratio"] == pytest.approx(want["compression_ratio"])
        for key in ("novel_ngrams", "redundancy"):
            for n, value in want[key].items():
                if value is None:
                    assert got[key][n] is None
                else:
                    assert got[key][n] == pytest.approx(value), (key, n)


def _jsonl(rows) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")


def _project(make_user, slug="sum-measures"):
    from annotation.models import Membership
    from annotation.services.imports import items_import
    from annotation.services.projects import project_create

    admin = make_user(f"{slug}-admin", staff=True)
    sup = make_user(f"{slug}-sup")
    project = project_create(actor=admin, slug=slug, name="Measures", kind="summary_rating", language="he")
    Membership.objects.create(project=project, user=sup, role="supervisor", status="active")
    rows = [{"id": "s1", "article": ARTICLE, "summaries": SUMMARIES}, SECOND]
    assert items_import(project=project, data=_jsonl(rows), fmt="jsonl", user=admin).created == 2
    return project, sup


@pytest.mark.django_db
def test_the_job_stores_hand_computed_measures(make_user):
    from annotation.kinds.summary.measures import summary_measures_request
    from annotation.models import Item, Job
    from annotation.tasks import run_job

    project, sup = _project(make_user)
    item = Item.objects.get(project=project, external_id="s1")
    item.computed = {"other_feature": [1, 2]}
    item.save(update_fields=["computed"])
    job = summary_measures_request(user=sup, slug=project.slug)
    run_job(job.pk)
    job.refresh_from_db()
    assert job.status == "done" and job.result == {"measured": 2, "items": 2}
    item.refresh_from_db()
    assert_measures(item.computed["intrinsic"])
    assert item.computed["other_feature"] == [1, 2]  # other keys of `computed` are kept
    second = Item.objects.get(project=project, external_id="s2").computed["intrinsic"]["summaries"][0]
    assert second["redundancy"]["1"] == pytest.approx(0.5) and second["novel_ngrams"]["2"] == pytest.approx(1.0)
    assert second["compression_ratio"] == pytest.approx(0.0)

    # Running the finished job again changes nothing; a new job finds nothing missing.
    run_job(job.pk)
    again = summary_measures_request(user=sup, slug=project.slug)
    run_job(again.pk)
    assert Job.objects.get(pk=again.pk).result == {"measured": 0, "items": 2}
    item.refresh_from_db()
    assert_measures(item.computed["intrinsic"])

    # `remeasure` rewrites every item with the same figures.
    Item.objects.filter(pk=item.pk).update(computed={"intrinsic": {"summaries": []}})
    full = summary_measures_request(user=sup, slug=project.slug, remeasure=True)
    run_job(full.pk)
    assert Job.objects.get(pk=full.pk).result == {"measured": 2, "items": 2}
    item.refresh_from_db()
    assert_measures(item.computed["intrinsic"])


@pytest.mark.django_db
def test_the_request_is_for_supervisors_of_summary_projects(make_user, nli_project):
    from annotation.errors import InvalidInput, PermissionDenied
    from annotation.kinds.summary.measures import summary_measures_request
    from annotation.models import Membership

    project, sup = _project(make_user)
    annotator = make_user("sum-ann")
    Membership.objects.create(project=project, user=annotator, role="annotator", status="active")
    with pytest.raises(PermissionDenied):
        summary_measures_request(user=annotator, slug=project.slug)
    Membership.objects.create(project=nli_project, user=sup, role="supervisor", status="active")
    with pytest.raises(InvalidInput):
        summary_measures_request(user=sup, slug=nli_project.slug)


@pytest.mark.django_db
def test_after_import_hook_enqueues_on_commit(make_user, settings, django_capture_on_commit_callbacks):
    from django.db import transaction

    from annotation.kinds.registry import get_kind
    from annotation.models import Item, Job

    settings.CELERY_TASK_ALWAYS_EAGER = True
    # The import service calls the hook inside its transaction: the job row exists at once,
    # its enqueue waits for a commit that this (non-transactional) test never makes.
    project, _sup = _project(make_user)
    assert Job.objects.get(kind="summary_intrinsic", project=project).status == "queued"
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        with transaction.atomic():
            get_kind("summary_rating").after_import(project, 2)
            assert not Item.objects.filter(project=project, computed__has_key="intrinsic").exists()
    # The measuring job's enqueue; the job, measuring, asks for the run that keeps the
    # report by the measured items (its request, then that run's job).
    assert len(callbacks) == 3
    job = Job.objects.filter(kind="summary_intrinsic", project=project).latest("id")
    assert job.status == "done"
    assert Job.objects.get(kind="aggregation", project=project).status == "done"
    assert_measures(Item.objects.get(project=project, external_id="s1").computed["intrinsic"])
    get_kind("summary_rating").after_import(project, 0)  # nothing new, nothing queued
    assert Job.objects.filter(kind="summary_intrinsic").count() == 2


@pytest.mark.worker
@pytest.mark.postgres
def test_the_job_runs_on_a_real_worker(transactional_db, celery_worker, make_user, client_for):
    from annotation.models import Item, Job

    # The import committed and queued a measuring job: the worker runs it.
    project, sup = _project(make_user, slug="sum-worker")
    client = client_for(sup)
    imported = Job.objects.get(kind="summary_intrinsic", project=project)
    final = wait_until(
        lambda: (body := client.get(f"/api/jobs/{imported.pk}/").json())["status"] in ("done", "failed") and body,
        timeout=60,
    )
    assert final["status"] == "done" and final["result"] == {"measured": 2, "items": 2}, final
    assert_measures(Item.objects.get(project=project, external_id="s1").computed["intrinsic"])
    # Asking again through the API re-measures every item on the worker.
    response = client.post(f"/api/projects/{project.slug}/intrinsic/", {"all": True}, format="json")
    assert response.status_code == 202, response.content
    job_id = response.json()["job"]
    final = wait_until(
        lambda: (body := client.get(f"/api/jobs/{job_id}/").json())["status"] in ("done", "failed") and body, timeout=60
    )
    assert final["status"] == "done" and final["result"] == {"measured": 2, "items": 2}, final
