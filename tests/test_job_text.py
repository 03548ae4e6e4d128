"""Messages a job computes on the worker (which has no reader's language) are shown in the
reader's language: the job API and the pages translate them when they are read, including
results stored in English before."""

import re

import pytest

HEBREW = re.compile(r"[\u0590-\u05ff]")
ARABIC_SCRIPT = re.compile(r"[\u0600-\u06ff]")
SCRIPT = {"he": HEBREW, "fa": ARABIC_SCRIPT}


def _read(client_for, user, job_id, language):
    client = client_for(user)
    response = client.get(f"/api/jobs/{job_id}/", HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200, response.content
    return response.json()


def _messages(body):
    error = body["error"] or {}
    return [e["message"] for e in error.get("errors", [])] or [error.get("message")]


def _run(kind, project, user, params=None):
    from annotation.models import Job
    from annotation.services.jobs import job_create
    from annotation.tasks import run_job

    job = job_create(kind=kind, project=project, user=user, params=params)
    run_job(job.pk)
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED, (job.result, job.error)
    return job


@pytest.mark.django_db
@pytest.mark.parametrize("language", ["he", "fa"])
@pytest.mark.parametrize(
    ("job_kind", "english"),
    [
        ("summary_intrinsic", "intrinsic measures are computed for"),
        ("bias", "needs gold items of two or more classes"),
        ("no_such_job", "unknown job kind"),
    ],
)
def test_a_failed_jobs_message_is_read_in_the_readers_language(nli_project, client_for, language, job_kind, english):
    from django.contrib.auth import get_user_model

    sup = get_user_model().objects.get(username="sup")
    job = _run(job_kind, nli_project, sup)
    # Stored for any reader: the English text, untranslated.
    assert english in str(job.error)
    messages = _messages(_read(client_for, sup, job.pk, language))
    assert messages and all(SCRIPT[language].search(m) for m in messages), messages
    assert not any(english in m for m in messages), messages
    # The English reader reads what was stored.
    assert any(english in m for m in _messages(_read(client_for, sup, job.pk, "en")))


@pytest.mark.django_db
@pytest.mark.parametrize("language", ["he", "fa"])
def test_an_english_message_stored_before_is_translated_when_read(nli_project, client_for, language):
    from django.contrib.auth import get_user_model

    from annotation.models import Job

    sup = get_user_model().objects.get(username="sup")
    # As the worker stored them before: English, the parameters already in the text.
    job = Job.objects.create(
        kind="summary_intrinsic",
        project=nli_project,
        status=Job.Status.FAILED,
        error={
            "errors": [
                {"field": "kind", "message": "intrinsic measures are computed for summary_rating projects"},
                {"field": "kind", "message": "This project's kind, ghost, is not installed on this site."},
            ]
        },
    )
    messages = _messages(_read(client_for, sup, job.pk, language))
    assert len(messages) == 2 and all(SCRIPT[language].search(m) for m in messages), messages
    assert "ghost" in messages[1] and "is not installed" not in messages[1], messages


@pytest.mark.django_db
@pytest.mark.parametrize("language", ["he", "fa"])
def test_the_releases_page_shows_a_failed_builds_reason_in_the_readers_language(nli_project, language):
    from django.contrib.auth import get_user_model
    from django.test import Client

    from annotation.models import Release

    sup = get_user_model().objects.get(username="sup")
    Release.objects.create(
        project=nli_project,
        version="1.0",
        license="CC-BY-4.0",
        status=Release.Status.FAILED,
        error="This project's kind, ghost, is not installed on this site.",
    )
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(sup)
    page = client.get(f"/p/{nli_project.slug}/releases/").content.decode()
    assert "ghost" in page
    assert "is not installed on this site" not in page


@pytest.mark.django_db
@pytest.mark.parametrize(("language", "required"), [("he", "חובה"), ("fa", "لازم است"), ("en", "is required")])
def test_an_import_jobs_row_errors_are_read_in_the_readers_language(
    nli_project, client_for, settings, language, required
):
    import json

    from django.contrib.auth import get_user_model

    from annotation.services.imports import items_import
    from annotation.tasks import run_job

    settings.MASHOV_IMPORT_JOB_ROWS = 0  # every import is a job on the worker
    sup = get_user_model().objects.get(username="sup")
    rows = [{"id": f"r{k}", "premise": "یک جمله", "hypothesis": "جملهٔ دیگر", "label": "neutral"} for k in range(2)]
    del rows[1]["hypothesis"]
    data = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()
    job_id = items_import(project=nli_project, data=data, fmt="jsonl", user=sup).job
    run_job(job_id)
    errors = _read(client_for, sup, job_id, language)["error"]["errors"]
    assert errors and errors[0]["row"] == 2, errors
    assert required in errors[0]["message"], errors


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("language", "reason"), [("he", "פחות משני מתייגים"), ("fa", "کمتر از ۲ کدگذار"), ("en", "fewer than 2 coders")]
)
def test_why_alpha_is_undefined_is_read_in_the_readers_language(nli_project, client_for, language, reason):
    """The agreement job stores the metrics' reason in English; the API and the dashboard
    say it in the reader's language."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from annotation.models import Job
    from annotation.services.jobs import job_create
    from annotation.tasks import run_job

    sup = get_user_model().objects.get(username="sup")
    job = job_create(kind="agreement", project=nli_project, user=sup)
    run_job(job.pk)  # no annotations: fewer than 2 coders
    assert Job.objects.get(pk=job.pk).status == Job.Status.DONE
    client = client_for(sup)
    rows = client.get(f"/api/projects/{nli_project.slug}/agreement/", HTTP_ACCEPT_LANGUAGE=language).json()
    assert rows and {row.get("reason") for row in rows} == {reason}, rows
    result = _read(client_for, sup, job.pk, language)["result"]
    assert {report["reason"] for report in result["reports"]} == {reason}, result
    page = Client(HTTP_ACCEPT_LANGUAGE=language)
    page.force_login(sup)
    assert reason in page.get(f"/p/{nli_project.slug}/dashboard/").content.decode()


@pytest.mark.parametrize("language", ["he", "fa"])
def test_curation_reasons_stored_in_english_are_read_in_the_readers_language(language):
    """The back-translation filter's and the near-duplicate search's removal reasons are
    stored in English (written by a job or by a supervisor's request alike) and shown in the
    item's history in the reader's language."""
    from django.utils import translation

    from annotation.kinds.translation.back_translation import LOW_SIMILARITY
    from annotation.release.duplicates import NEAR_DUPLICATE_REASON
    from annotation.stored_text import translated_text

    params = {"system": "google", "threshold": 0.7, "item": "v4", "premise": "0.912", "hypothesis": "1.000",
              "representation": "bow"}  # fmt: skip
    for msgid in (*LOW_SIMILARITY.values(), NEAR_DUPLICATE_REASON):
        english = msgid % params
        with translation.override(language):
            expected = translation.gettext(msgid) % params
            assert expected != english, msgid
            assert translated_text(english) == expected
