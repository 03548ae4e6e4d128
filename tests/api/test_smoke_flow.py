"""The foundation's flow through the HTTP contract: project, members, import, next, submit."""

import io

import pytest

from tests.conftest import NOTHING_HELD_OUT


def upload(name: str, text: str | bytes):
    data = text.encode("utf-8") if isinstance(text, str) else text
    handle = io.BytesIO(data)
    handle.name = name
    return handle


JSONL = (
    '{"id": "a", "premise": "הספר מונח על השולחן.", "hypothesis": "יש ספר.", "label": "entailment", "group": "g1"}\n'
    '{"id": "b", "premise": "کتاب روی میز است.", "hypothesis": "کتابی نیست.", "label": "c", "group": "g2"}\n'
)


@pytest.mark.django_db
def test_flow_import_next_submit(nli_project, client_for, django_user_model):
    sup = client_for(django_user_model.objects.get(username="sup"))
    response = sup.post(
        f"/api/projects/{nli_project.slug}/import/", {"file": upload("x.jsonl", JSONL), "format": "jsonl"}
    )
    assert response.status_code == 201, response.content
    assert response.json() == {"created": 2, "skipped": 0, "job": None, **NOTHING_HELD_OUT}

    ann = client_for(django_user_model.objects.get(username="ann1"))
    first = ann.get(f"/api/projects/{nli_project.slug}/next/")
    assert first.status_code == 200
    body = first.json()
    assert set(body["item"]["payload"]) == {"premise", "hypothesis"}
    again = ann.get(f"/api/projects/{nli_project.slug}/next/")
    assert again.json()["assignment"] == body["assignment"]

    submitted = ann.post(
        f"/api/assignments/{body['assignment']}/submit/", {"value": {"label": "neutral"}}, format="json"
    )
    assert submitted.status_code == 201, submitted.content
    twice = ann.post(f"/api/assignments/{body['assignment']}/submit/", {"value": {"label": "neutral"}}, format="json")
    assert twice.status_code == 409

    other = client_for(django_user_model.objects.get(username="ann2"))
    stolen = other.post(
        f"/api/assignments/{body['assignment']}/submit/", {"value": {"label": "neutral"}}, format="json"
    )
    assert stolen.status_code == 404

    second = ann.get(f"/api/projects/{nli_project.slug}/next/").json()
    assert second["item"]["id"] != body["item"]["id"]
    ann.post(f"/api/assignments/{second['assignment']}/submit/", {"value": {"label": "neutral"}}, format="json")
    assert ann.get(f"/api/projects/{nli_project.slug}/next/").status_code == 204
