"""Prediction sets through HTTP (docs/api.md "Model in the loop"): JSONL and CSV uploads stored
as named, versioned sets; every bad row a 400 naming row and field with nothing stored;
supervisors only; the latest set on the item browser and the item page."""

import json

import pytest

from tests.kinds.qa.test_api import jsonl, upload

pytestmark = pytest.mark.django_db

URL = "/api/projects/fa-nli/predictions/"


@pytest.fixture
def nli(nli_project, client_for):
    from django.contrib.auth import get_user_model

    from annotation.models import Item

    for position, key in enumerate(("a", "b", "c", "d")):
        Item.objects.create(
            project=nli_project,
            external_id=key,
            position=position,
            payload={"premise": f"پیش‌فرض {key}", "hypothesis": "فرضیه"},
        )
    users = get_user_model().objects
    return {name: client_for(users.get(username=name)) for name in ("sup", "rev", "ann1")}


def post(client, text, *, name="model-a", filename="p.jsonl"):
    return client.post(URL, {"file": upload(filename, text), "name": name}, format="multipart")


def _stored():
    from annotation.models import Prediction, PredictionSet

    return PredictionSet.objects.count(), Prediction.objects.count()


ROWS = [
    {"id": "a", "label": "entailment", "scores": {"entailment": 0.7, "neutral": 0.2, "contradiction": 0.1}},
    {"id": "b", "label": "n", "scores": {"entailment": 0.3, "n": 0.4, "contradiction": 0.3}},
    {"id": "c", "label": "contradiction"},
]


def test_a_jsonl_set_is_stored_with_its_scores_and_margins_and_listed(nli):
    from annotation.models import Prediction

    response = post(nli["sup"], jsonl(ROWS))
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["name"], body["version"], body["items"], body["source"]) == ("model-a", 1, 3, "upload")
    stored = {p.item.external_id: p for p in Prediction.objects.select_related("item")}
    assert stored["a"].label == "entailment" and stored["a"].margin == pytest.approx(0.5)
    # The short code is the kind's spelling: stored as the label.
    assert stored["b"].label == "neutral" and stored["b"].scores == {
        "entailment": 0.3,
        "neutral": 0.4,
        "contradiction": 0.3,
    }
    assert stored["b"].margin == pytest.approx(0.1)
    assert stored["c"].scores is None and stored["c"].margin is None
    again = post(nli["sup"], jsonl(ROWS[:1]))
    assert again.json()["version"] == 2
    other = post(nli["sup"], jsonl(ROWS[:1]), name="model-b")
    assert other.json()["version"] == 1
    listed = nli["sup"].get(URL).json()
    assert [(s["name"], s["version"]) for s in listed] == [("model-b", 1), ("model-a", 2), ("model-a", 1)]


def test_a_csv_set_reads_scores_from_columns(nli):
    from annotation.models import Prediction

    text = "id,label,scores.entailment,scores.neutral,scores.contradiction\na,e,0.1,0.1,0.8\nb,neutral,,,\n"
    response = post(nli["sup"], text, filename="p.csv")
    assert response.status_code == 201, response.content
    stored = {p.item.external_id: p for p in Prediction.objects.select_related("item")}
    assert stored["a"].label == "entailment" and stored["a"].margin == pytest.approx(0.7)
    assert stored["b"].scores is None


BAD_ROWS = [
    ({"id": "zz", "label": "entailment"}, "id"),
    ({"label": "entailment"}, "id"),
    ({"id": "b", "label": "yes"}, "label"),
    ({"id": "b"}, "label"),
    ({"id": "b", "label": "entailment", "scores": {"entailment": 0.9}}, "scores"),
    ({"id": "b", "label": "entailment", "scores": {"entailment": 1.2, "neutral": -0.2}}, "scores"),
    ({"id": "b", "label": "entailment", "scores": {"maybe": 1.0}}, "scores"),
    ({"id": "b", "label": "entailment", "scores": {"entailment": "1"}}, "scores"),
    ({"id": "b", "label": "entailment", "scores": [1, 0, 0]}, "scores"),
    ({"id": "b", "label": "entailment", "scores": {"e": 0.5, "entailment": 0.5}}, "scores"),
]


@pytest.mark.parametrize(("row", "field"), BAD_ROWS)
def test_a_bad_row_is_400_naming_row_and_field_and_nothing_is_stored(nli, row, field):
    rows = [ROWS[0], row]
    before = _stored()
    response = post(nli["sup"], jsonl(rows))
    assert response.status_code == 400, response.content
    errors = response.json()["errors"]
    assert any(error["field"] == field and error["row"] == 2 for error in errors), errors
    assert _stored() == before


@pytest.mark.parametrize(
    ("text", "name", "field"),
    [
        ("", "m", "file"),
        ('{"id": "a", "label": "entailment"}\n{"id": "a", "label": "neutral"}', "m", "id"),
        ('{"id": "a", "label": "entailment", "scores": {"entailment": NaN, "neutral": 0}}', "m", "scores"),
        ("id,prediction\na,entailment\n", "m", "file"),
        (jsonl(ROWS), "", "name"),
        (jsonl(ROWS), "x" * 201, "name"),
        (jsonl(ROWS), "a\u202eb", "name"),
    ],
)
def test_a_bad_file_or_name_is_400_naming_it(nli, text, name, field):
    before = _stored()
    filename = "p.csv" if text.startswith("id,") else "p.jsonl"
    response = post(nli["sup"], text, name=name, filename=filename)
    assert response.status_code == 400, response.content
    assert field in {error["field"] for error in response.json()["errors"]}, response.content
    assert _stored() == before


def test_only_supervisors_upload_and_list(nli, client_for, make_user):
    for who, code in (("rev", 403), ("ann1", 403)):
        assert post(nli[who], jsonl(ROWS)).status_code == code
        assert nli[who].get(URL).status_code == code
    outsider = client_for(make_user("outsider"))
    assert post(outsider, jsonl(ROWS)).status_code == 404
    assert outsider.get(URL).status_code == 404
    assert _stored() == (0, 0)


def test_the_latest_set_shows_on_the_item_browser_and_item_page_for_supervisors(nli, client):
    from django.contrib.auth import get_user_model

    from annotation.models import Item

    assert post(nli["sup"], jsonl(ROWS), name="old").status_code == 201
    newest = post(nli["sup"], jsonl([{**ROWS[0], "label": "neutral", "scores": None}]), name="newest")
    assert newest.status_code == 201, newest.content
    users = get_user_model().objects
    client.force_login(users.get(username="sup"))
    page = client.get("/console/p/fa-nli/items/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "newest" in page and "Model's prediction" in page
    item = Item.objects.get(external_id="a")
    detail = client.get(f"/console/p/fa-nli/items/{item.pk}/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert 'id="prediction"' in detail and "neutral" in detail and "newest" in detail
    # The reviewer reads the items but not the model's predictions.
    client.force_login(users.get(username="rev"))
    assert "newest" not in client.get("/console/p/fa-nli/items/").content.decode()
    assert 'id="prediction"' not in client.get(f"/console/p/fa-nli/items/{item.pk}/").content.decode()


def test_the_item_browser_speaks_hebrew_and_persian(nli, client):
    from django.contrib.auth import get_user_model

    post(nli["sup"], jsonl(ROWS))
    client.force_login(get_user_model().objects.get(username="sup"))
    for language in ("he", "fa"):
        client.cookies["django_language"] = language
        page = client.get("/console/p/fa-nli/items/", HTTP_ACCEPT_LANGUAGE=language).content.decode()
        assert "Model's prediction" not in page and "version" not in page, language


def test_a_kind_without_a_closed_label_set_is_refused(db, make_user, client_for):
    from annotation.models import Membership
    from annotation.services.projects import project_create

    admin = make_user("root", staff=True)
    project = project_create(actor=admin, slug="sums", name="S", kind="summary_rating", language="he")
    sup = make_user("s")
    Membership.objects.create(project=project, user=sup, role="supervisor", status="active")
    response = client_for(sup).post(
        "/api/projects/sums/predictions/",
        {"file": upload("p.jsonl", json.dumps({"id": "x", "label": "a"})), "name": "m"},
        format="multipart",
    )
    assert response.status_code == 400 and response.json()["errors"][0]["field"] == "kind"
