"""`manage.py load_demo`: every demo project loads, a second run changes nothing, and an
annotator can start on each of them."""

import io

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_demo_loads_twice_and_every_project_serves_work(settings, client_for, django_user_model):
    from annotation.models import Item, Project

    settings.DEBUG = True
    settings.CELERY_TASK_ALWAYS_EAGER = True
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    assert "annotator1" in out.getvalue() and "mashov-demo-annotator1" in out.getvalue()
    counts = {p.slug: p.items.count() for p in Project.objects.all()}
    assert set(Project.objects.values_list("kind", flat=True)) == {
        "nli_relabel",
        "qa_authoring",
        "translation_rating",
        "phrase_pair",
        "summary_rating",
    }
    assert all(n > 0 for n in counts.values()), counts
    call_command("load_demo", stdout=io.StringIO())
    assert {p.slug: p.items.count() for p in Project.objects.all()} == counts
    assert Item.objects.count() == sum(counts.values())

    annotator = client_for(django_user_model.objects.get(username="annotator1"))
    for slug in counts:
        response = annotator.get(f"/api/projects/{slug}/next/")
        assert response.status_code == 200, (slug, response.content)


@pytest.mark.django_db
def test_demo_refuses_without_debug(settings):
    from django.core.management.base import CommandError

    settings.DEBUG = False
    with pytest.raises(CommandError):
        call_command("load_demo", stdout=io.StringIO())
