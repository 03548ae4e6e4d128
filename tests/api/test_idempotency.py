"""Writes a client may retry: the same `Idempotency-Key` returns the first result and changes
nothing (API.md general rules)."""

import io

import pytest


def upload(text: str):
    handle = io.BytesIO(text.encode("utf-8"))
    handle.name = "items.jsonl"
    return handle


@pytest.mark.django_db
def test_retried_writes_replay_their_first_result(nli_project, client_for, django_user_model):
    from annotation.models import Item, Membership, Project

    sup = client_for(django_user_model.objects.get(username="sup"))
    root = client_for(django_user_model.objects.get(username="root"))
    body = {"slug": "retry-me", "name": "Retry", "kind": "nli_relabel", "language": "he"}
    first = root.post("/api/projects/", body, format="json", HTTP_IDEMPOTENCY_KEY="p-1")
    again = root.post("/api/projects/", body, format="json", HTTP_IDEMPOTENCY_KEY="p-1")
    assert first.status_code == again.status_code == 201 and first.json() == again.json()
    assert Project.objects.filter(slug="retry-me").count() == 1
    assert root.post("/api/projects/", body, format="json", HTTP_IDEMPOTENCY_KEY="p-2").status_code == 409

    line = '{"id": "r1", "premise": "השמש זורחת.", "hypothesis": "יום.", "label": "entailment"}\n'
    imported = [
        sup.post(f"/api/projects/{nli_project.slug}/import/", {"file": upload(line), "format": "jsonl"}, HTTP_IDEMPOTENCY_KEY="i-1")
        for _ in range(2)
    ]
    assert [r.json() for r in imported] == [{"created": 1, "skipped": 0, "job": None}] * 2
    assert Item.objects.filter(project=nli_project).count() == 1

    django_user_model.objects.create_user("late", password="pass-word-123")
    member = {"username": "late", "role": "annotator", "status": "trial"}
    added = [sup.post(f"/api/projects/{nli_project.slug}/members/", member, format="json", HTTP_IDEMPOTENCY_KEY="m-1") for _ in range(2)]
    assert [r.status_code for r in added] == [201, 201]
    assert Membership.objects.filter(project=nli_project, user__username="late").count() == 1


@pytest.mark.django_db
def test_keys_are_per_user_and_per_path(nli_project, client_for, django_user_model):
    from annotation.models import Project

    root = client_for(django_user_model.objects.get(username="root"))
    sup = client_for(django_user_model.objects.get(username="sup"))
    one = {"slug": "first-key", "name": "A", "kind": "nli_relabel", "language": "fa"}
    two = {"slug": "second-key", "name": "B", "kind": "nli_relabel", "language": "fa"}
    assert root.post("/api/projects/", one, format="json", HTTP_IDEMPOTENCY_KEY="same").status_code == 201
    # Another user with the same key gets their own write, not someone else's result.
    assert sup.post("/api/projects/", two, format="json", HTTP_IDEMPOTENCY_KEY="same").json()["slug"] == "second-key"
    assert set(Project.objects.values_list("slug", flat=True)) >= {"first-key", "second-key"}
    too_long = root.post("/api/projects/", one, format="json", HTTP_IDEMPOTENCY_KEY="x" * 201)
    assert too_long.status_code == 400 and too_long.json()["errors"][0]["field"] == "Idempotency-Key"
