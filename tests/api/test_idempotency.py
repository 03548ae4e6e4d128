"""Writes a client may retry: the same `Idempotency-Key` returns the first result and changes
nothing (docs/api.md "General rules")."""

import io

import pytest

from tests.conftest import NOTHING_HELD_OUT


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
        sup.post(
            f"/api/projects/{nli_project.slug}/import/",
            {"file": upload(line), "format": "jsonl"},
            HTTP_IDEMPOTENCY_KEY="i-1",
        )
        for _ in range(2)
    ]
    assert [r.json() for r in imported] == [{"created": 1, "skipped": 0, "job": None, **NOTHING_HELD_OUT}] * 2
    assert Item.objects.filter(project=nli_project).count() == 1

    django_user_model.objects.create_user("late", password="pass-word-123")
    member = {"username": "late", "role": "annotator", "status": "trial"}
    added = [
        sup.post(f"/api/projects/{nli_project.slug}/members/", member, format="json", HTTP_IDEMPOTENCY_KEY="m-1")
        for _ in range(2)
    ]
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


# ---------------------------------------------------------------- same key, another request


def conflict_field(response) -> str:
    assert response.status_code == 409, response.content
    (error,) = response.json()["errors"]
    return error["field"]


@pytest.mark.django_db
def test_same_key_with_another_body_is_409_and_stores_nothing(nli_project, client_for, django_user_model):
    from annotation.models import Annotation, Item, Project

    root = client_for(django_user_model.objects.get(username="root"))
    first = {"slug": "first", "name": "A", "kind": "nli_relabel", "language": "fa"}
    assert root.post("/api/projects/", first, format="json", HTTP_IDEMPOTENCY_KEY="k").status_code == 201
    other = {**first, "slug": "second"}
    assert (
        conflict_field(root.post("/api/projects/", other, format="json", HTTP_IDEMPOTENCY_KEY="k")) == "Idempotency-Key"
    )
    assert not Project.objects.filter(slug="second").exists()

    # A second label for the same assignment under the same key is refused, not dropped in silence.
    ann = client_for(django_user_model.objects.get(username="ann1"))
    line = '{"id": "r1", "premise": "השמש זורחת.", "hypothesis": "یک روز است.", "label": "entailment"}\n'
    sup = client_for(django_user_model.objects.get(username="sup"))
    sup.post(f"/api/projects/{nli_project.slug}/import/", {"file": upload(line), "format": "jsonl"})
    assignment = ann.get(f"/api/projects/{nli_project.slug}/next/").json()["assignment"]
    url = f"/api/assignments/{assignment}/submit/"
    labelled = ann.post(url, {"value": {"label": "neutral"}}, format="json", HTTP_IDEMPOTENCY_KEY="s-1")
    assert labelled.status_code == 201
    assert (
        ann.post(url, {"value": {"label": "neutral"}}, format="json", HTTP_IDEMPOTENCY_KEY="s-1").json()
        == labelled.json()
    )
    relabelled = ann.post(url, {"value": {"label": "contradiction"}}, format="json", HTTP_IDEMPOTENCY_KEY="s-1")
    assert conflict_field(relabelled) == "Idempotency-Key"
    assert list(Annotation.objects.values_list("value", flat=True)) == [{"label": "neutral"}]

    # Another file under an import's key: refused, nothing imported.
    imported = sup.post(
        f"/api/projects/{nli_project.slug}/import/",
        {"file": upload(line.replace("r1", "r2")), "format": "jsonl"},
        HTTP_IDEMPOTENCY_KEY="i",
    )
    assert imported.status_code == 201
    again = sup.post(
        f"/api/projects/{nli_project.slug}/import/",
        {"file": upload(line.replace("r1", "r3")), "format": "jsonl"},
        HTTP_IDEMPOTENCY_KEY="i",
    )
    assert conflict_field(again) == "Idempotency-Key"
    assert set(Item.objects.filter(project=nli_project).values_list("external_id", flat=True)) == {"r1", "r2"}


@pytest.mark.django_db
def test_a_multipart_retry_is_the_same_request_whatever_its_boundary(nli_project, client_for, django_user_model):
    from django.test.client import encode_multipart

    from annotation.models import Item

    sup = client_for(django_user_model.objects.get(username="sup"))
    line = '{"id": "b1", "premise": "השמש זורחת.", "hypothesis": "יום.", "label": "entailment"}\n'

    def send(boundary: str):
        body = encode_multipart(boundary, {"file": upload(line), "format": "jsonl"})
        return sup.generic(
            "POST",
            f"/api/projects/{nli_project.slug}/import/",
            body,
            content_type=f"multipart/form-data; boundary={boundary}",
            HTTP_IDEMPOTENCY_KEY="b",
        )

    first, retry = send("first-boundary-1234"), send("another-boundary-98765")
    assert first.status_code == retry.status_code == 201 and first.json() == retry.json()
    assert Item.objects.filter(project=nli_project, external_id="b1").count() == 1


# ---------------------------------------------------------------- the key and the write: one transaction


@pytest.mark.django_db
def test_a_write_that_fails_after_storing_rolls_back_with_its_key(
    nli_project, client_for, django_user_model, monkeypatch
):
    from annotation.errors import InvalidInput
    from annotation.models import IdempotencyRecord, Project
    from annotation.services import projects as project_services

    root = client_for(django_user_model.objects.get(username="root"))
    body = {"slug": "half-done", "name": "A", "kind": "nli_relabel", "language": "fa"}
    real_create = project_services.project_create

    def create_then_fail(**kwargs):
        real_create(**kwargs)
        raise InvalidInput("refused after the write", field="name")

    monkeypatch.setattr(project_services, "project_create", create_then_fail)
    assert root.post("/api/projects/", body, format="json", HTTP_IDEMPOTENCY_KEY="h").status_code == 400
    assert not Project.objects.filter(slug="half-done").exists()
    assert not IdempotencyRecord.objects.filter(key="h").exists()

    # The response cannot be built after the write: a 500, and again nothing is stored.
    monkeypatch.setattr(project_services, "project_create", real_create)
    monkeypatch.setattr("api.serializers.ProjectSerializer.to_representation", lambda self, instance: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        root.post("/api/projects/", body, format="json", HTTP_IDEMPOTENCY_KEY="h")
    assert not Project.objects.filter(slug="half-done").exists()
    assert not IdempotencyRecord.objects.filter(key="h").exists()

    # The retry does the write: the failures left neither a write nor a key behind.
    monkeypatch.undo()
    retried = root.post("/api/projects/", body, format="json", HTTP_IDEMPOTENCY_KEY="h")
    assert retried.status_code == 201 and retried.json()["slug"] == "half-done"
    record = IdempotencyRecord.objects.get(key="h")
    assert (record.status_code, record.body) == (201, retried.json())


@pytest.mark.postgres
def test_concurrent_requests_with_one_key_make_one_write(transactional_db, make_user, client_for, monkeypatch):
    """The second request waits for the first one's key (unique constraint) and gets its answer,
    or a 409 when its body differs; it never writes beside it."""
    import threading
    import time

    from django.db import connection

    from annotation.models import Project
    from annotation.services import projects as project_services

    root = make_user("boss", staff=True)
    real_create = project_services.project_create

    def slow_create(**kwargs):
        project = real_create(**kwargs)
        time.sleep(0.5)  # the write is stored, its transaction still open
        return project

    monkeypatch.setattr(project_services, "project_create", slow_create)

    def race(bodies, key):
        answers = [None] * len(bodies)
        start = threading.Barrier(len(bodies))

        def send(n):
            try:
                start.wait()
                answers[n] = client_for(root).post("/api/projects/", bodies[n], format="json", HTTP_IDEMPOTENCY_KEY=key)
            finally:
                connection.close()

        threads = [threading.Thread(target=send, args=(n,)) for n in range(len(bodies))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return answers

    same = {"slug": "race-same", "name": "A", "kind": "nli_relabel", "language": "fa"}
    first, second = race([same, same], "race-1")
    assert first.status_code == second.status_code == 201 and first.json() == second.json()
    assert Project.objects.filter(slug="race-same").count() == 1

    answers = race([{**same, "slug": "race-a"}, {**same, "slug": "race-b"}], "race-2")
    assert sorted(answer.status_code for answer in answers) == [201, 409]
    assert Project.objects.filter(slug__in=["race-a", "race-b"]).count() == 1


@pytest.mark.django_db
def test_a_write_without_a_key_does_not_touch_the_keys(nli_project, client_for, django_user_model):
    """Submit is the annotate hot path: without the header the decorator adds no query."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    sup = client_for(django_user_model.objects.get(username="sup"))
    line = '{"id": "r1", "premise": "השמש זורחת.", "hypothesis": "یک روز است.", "label": "entailment"}\n'
    sup.post(f"/api/projects/{nli_project.slug}/import/", {"file": upload(line), "format": "jsonl"})
    ann = client_for(django_user_model.objects.get(username="ann1"))
    assignment = ann.get(f"/api/projects/{nli_project.slug}/next/").json()["assignment"]
    with CaptureQueriesContext(connection) as queries:
        response = ann.post(f"/api/assignments/{assignment}/submit/", {"value": {"label": "neutral"}}, format="json")
    assert response.status_code == 201
    assert not [q for q in queries.captured_queries if "idempotency" in q["sql"].lower()]
