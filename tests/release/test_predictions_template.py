"""What a model's author needs to make a predictions file: the
leaderboard page offers a template (every id of the split, empty predictions) that the
upload takes back once filled, and the item browser offers every export format of the kind
(a question project's `squad`, which alone carries the question ids)."""

import json

import pytest

from tests.release.test_evaluation_api import ITEMS, nli, post, run_latest_job  # noqa: F401

pytestmark = pytest.mark.django_db


def browser_of(username: str):
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    return client


def test_the_leaderboard_offers_a_predictions_template_that_the_upload_takes_back(nli):
    from annotation.models import Evaluation

    sup = browser_of("sup")
    page = sup.get("/p/fa-nli/leaderboard/").content.decode()
    assert 'id="template-form"' in page and 'name="template" value="jsonl"' in page
    response = sup.get("/p/fa-nli/leaderboard/?template=jsonl&split=test")
    assert response.status_code == 200 and response["Content-Type"].startswith("application/x-ndjson")
    assert 'filename="fa-nli-test-predictions.jsonl"' in response["Content-Disposition"]
    rows = [json.loads(line) for line in response.content.decode().splitlines()]
    assert rows == [{"id": key, "prediction": ""} for key, _, split, *_ in ITEMS if split == "test"]
    every = [
        json.loads(line)["id"]
        for line in sup.get("/p/fa-nli/leaderboard/?template=jsonl&split=all").content.decode().splitlines()
    ]
    assert every == [key for key, *_ in ITEMS]
    # Filled in, it is a valid upload.
    filled = "".join(json.dumps({**row, "prediction": "neutral"}) + "\n" for row in rows)
    assert post(nli["sup"], filled).status_code == 202
    run_latest_job()
    assert Evaluation.objects.get().status == "done"


def test_a_template_of_a_split_without_gold_says_so_on_the_page(nli):
    response = browser_of("sup").get("/p/fa-nli/leaderboard/?template=jsonl&split=train")
    assert response.status_code == 200 and 'id="upload-errors"' in response.content.decode()


def test_the_item_browser_offers_every_export_format_of_the_kind(client, django_user_model):
    from annotation.services.projects import project_create

    admin = django_user_model.objects.create_user(username="fmt-admin", password="fmt-pass-123", is_staff=True)
    project_create(actor=admin, slug="fmt-qa", name="שאלות", kind="qa_authoring", language="he")
    client.force_login(admin)
    html = client.get("/console/p/fmt-qa/items/").content.decode()
    for fmt in ("jsonl", "csv", "squad"):
        assert f"export/?format={fmt}&amp;status=all" in html
    assert client.get("/api/projects/fmt-qa/export/?format=squad&status=all").status_code == 200


@pytest.mark.parametrize(
    ("kind", "own"),
    [
        ("phrase_pair", ["/export/phrasis/"]),
        ("qa_authoring", ["/questions/export/?format=jsonl"]),
        (
            "translation_rating",
            ["/ratings-export/?format=jsonl&amp;status=all", "/ratings-export/?format=csv&amp;status=all"],
        ),
    ],
)
def test_the_item_browser_offers_the_kinds_own_exports_too(client, django_user_model, kind, own):
    """Exports a kind writes through its own address (PhrasIS's files, one question a line,
    the translation ratings) are offered beside the common ones on the item browser, and
    each answers."""
    from annotation.services.imports import items_import
    from annotation.services.projects import project_create

    admin = django_user_model.objects.create_user(username="own-admin", password="own-pass-123", is_staff=True)
    slug = f"own-{kind.replace('_', '-')}"
    project_create(actor=admin, slug=slug, name="ייצוא", kind=kind, language="he")
    client.force_login(admin)
    html = client.get(f"/console/p/{slug}/items/").content.decode()
    for path in own:
        href = f"/api/projects/{slug}{path}"
        assert f'href="{href}"' in html, href
        assert client.get(href.replace("&amp;", "&")).status_code == 200, href
