"""A model's suggestions to annotators (docs/kinds.md "Model in the loop", docs/protocols.md
"Suggestions"), through HTTP: `next` shows the latest prediction set's label only where the
project's `suggestions` setting is on; each annotation records the suggestion shown and
whether it was taken; the setting is refused with a 400 where the protocol is blind, nothing
stored; the annotator-quality API gives acceptance and agreement where the suggestion was
wrong, checked against a hand count; `next` costs one statement more with suggestions on."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.kinds.qa.test_api import jsonl, upload

pytestmark = pytest.mark.django_db

SLUG = "fa-nli"
PROJECT = f"/api/projects/{SLUG}/"
# The latest set: a and b with scores, c without; d is not predicted.
ROWS = [
    {"id": "a", "label": "entailment", "scores": {"entailment": 0.7, "neutral": 0.2, "contradiction": 0.1}},
    {"id": "b", "label": "neutral", "scores": {"entailment": 0.3, "neutral": 0.4, "contradiction": 0.3}},
    {"id": "c", "label": "contradiction"},
]
SHOWN = {"a": {"label": "entailment", "probability": 0.7}, "b": {"label": "neutral", "probability": 0.4}}
SHOWN["c"] = {"label": "contradiction", "probability": None}


@pytest.fixture
def nli(nli_project, client_for):
    """The Persian nli_relabel project with four items and an older set that predicts d
    (the latest set alone counts), and clients of its members. Five votes per item, so no
    round closes with its three annotators."""
    from django.contrib.auth import get_user_model

    from annotation.models import Item

    for position, key in enumerate(("a", "b", "c", "d")):
        Item.objects.create(
            project=nli_project,
            external_id=key,
            position=position,
            payload={"premise": f"پیش‌فرض {key} درباره‌ی کتاب", "hypothesis": "فرضیه‌ای کوتاه"},
        )
    users = get_user_model().objects
    clients = {name: client_for(users.get(username=name)) for name in ("sup", "rev", "ann1", "ann2", "ann3")}
    for rows, name in (([{"id": "d", "label": "neutral"}], "older"), (ROWS, "model-a")):
        response = clients["sup"].post(
            f"{PROJECT}predictions/", {"file": upload("p.jsonl", jsonl(rows)), "name": name}, format="multipart"
        )
        assert response.status_code == 201, response.content
    return clients


def patch_settings(client, settings):
    return client.patch(PROJECT, {"settings": settings}, format="json")


def stored_settings():
    from annotation.models import Project

    return dict(Project.objects.get(slug=SLUG).settings)


def label_all(client, choose):
    """Take every item `next` serves the caller and submit `choose(external id, suggestion)`;
    {external id: the `next` body}."""
    served = {}
    while True:
        response = client.get(f"{PROJECT}next/")
        if response.status_code == 204:
            return served
        assert response.status_code == 200, response.content
        body = response.json()
        key = body["item"]["external_id"]
        served[key] = body
        submitted = client.post(
            f"/api/assignments/{body['assignment']}/submit/",
            {"value": {"label": choose(key, body.get("suggestion"))}},
            format="json",
        )
        assert submitted.status_code == 201, submitted.content


def recorded():
    from annotation.models import Annotation

    return {
        (a.annotator.username, a.item.external_id): (a.suggested_label, a.suggestion_taken)
        for a in Annotation.objects.select_related("annotator", "item")
    }


def test_suggestions_are_off_by_default_and_nothing_is_shown_or_recorded(nli):
    assert nli["sup"].get(PROJECT).json()["settings"]["suggestions"] is False
    served = label_all(nli["ann1"], lambda key, suggestion: "entailment")
    assert sorted(served) == ["a", "b", "c", "d"]
    assert all("suggestion" not in body for body in served.values())
    assert set(recorded().values()) == {(None, None)}


def test_with_suggestions_on_next_shows_the_latest_sets_label_and_each_annotation_records_it(nli):
    response = patch_settings(nli["sup"], {"aggregation": "majority", "suggestions": True})
    assert response.status_code == 200, response.content
    # ann1 takes the suggestion on a, not on b (nor on c); d has none.
    choices = {"a": "entailment", "b": "contradiction", "c": "contradiction", "d": "neutral"}
    served = label_all(nli["ann1"], lambda key, suggestion: choices[key])
    assert {key: body.get("suggestion") for key, body in served.items()} == {**SHOWN, "d": None}
    assert recorded() == {
        ("ann1", "a"): ("entailment", True),
        ("ann1", "b"): ("neutral", False),
        ("ann1", "c"): ("contradiction", True),
        ("ann1", "d"): (None, None),
    }
    # Off again: the next annotator sees nothing and nothing is recorded for them.
    assert patch_settings(nli["sup"], {"suggestions": False}).status_code == 200
    served = label_all(nli["ann2"], lambda key, suggestion: "neutral")
    assert all("suggestion" not in body for body in served.values())
    assert {v for (who, _), v in recorded().items() if who == "ann2"} == {(None, None)}


def test_next_costs_one_statement_more_with_suggestions_on(nli, monkeypatch):
    # The engine walks the shuffled items from a random point and reads past the end again
    # from the start when it finds nothing after it (one statement more): walking from the
    # start, every call reads its item in one.
    monkeypatch.setattr("annotation.services.assignments.random.random", lambda: 0.0)

    def statements_of_next(client):
        with CaptureQueriesContext(connection) as captured:
            response = client.get(f"{PROJECT}next/")
        assert response.status_code == 200
        return len(captured.captured_queries)

    # A first request pays what the process reads once (sessions, caches warmed by earlier
    # tests or not): measured after it, the two calls differ by the suggestion alone.
    statements_of_next(nli["ann3"])
    off = statements_of_next(nli["ann1"])
    assert patch_settings(nli["sup"], {"aggregation": "majority", "suggestions": True}).status_code == 200
    on = statements_of_next(nli["ann2"])
    assert on == off + 1


@pytest.mark.parametrize(
    "settings",
    [
        {"suggestions": True},  # k-of-n: FarsTail's blind relabel rounds
        {"aggregation": "k_of_n", "suggestions": True},
        {"suggestions": "yes"},
        {"suggestions": 1},
    ],
)
def test_suggestions_refused_where_the_relabel_is_blind_or_wrongly_typed_nothing_stored(nli, settings):
    before = stored_settings()
    response = patch_settings(nli["sup"], settings)
    assert response.status_code == 400, response.content
    assert any(error["field"] == "settings.suggestions" for error in response.json()["errors"])
    assert stored_settings() == before


def test_going_back_to_the_blind_rule_while_suggestions_are_on_is_refused(nli):
    assert patch_settings(nli["sup"], {"aggregation": "majority", "suggestions": True}).status_code == 200
    before = stored_settings()
    response = patch_settings(nli["sup"], {"aggregation": "k_of_n"})
    assert response.status_code == 400, response.content
    assert [error["field"] for error in response.json()["errors"]] == ["settings.suggestions"]
    assert stored_settings() == before


@pytest.mark.parametrize("kind", ["label_test", "nli_relabel"])
def test_a_blind_project_is_not_created_with_suggestions(nli, client_for, kind):
    from django.contrib.auth import get_user_model

    from annotation.models import Project

    admin = client_for(get_user_model().objects.get(username="root"))
    response = admin.post(
        "/api/projects/",
        {"slug": "blind", "name": "Blind", "kind": kind, "language": "he", "settings": {"suggestions": True}},
        format="json",
    )
    assert response.status_code == 400, response.content
    assert any(error["field"] == "settings.suggestions" for error in response.json()["errors"])
    assert not Project.objects.filter(slug="blind").exists()


def test_phrase_pairs_take_suggestions(nli, client_for):
    from django.contrib.auth import get_user_model

    admin = client_for(get_user_model().objects.get(username="root"))
    response = admin.post(
        "/api/projects/",
        {"slug": "phr", "name": "Phrases", "kind": "phrase_pair", "language": "he", "settings": {"suggestions": True}},
        format="json",
    )
    assert response.status_code == 201, response.content
    assert response.json()["settings"]["suggestions"] is True


def test_annotator_quality_gives_acceptance_and_agreement_where_the_suggestion_was_wrong(nli):
    from annotation.models import Item

    assert patch_settings(nli["sup"], {"aggregation": "majority", "suggestions": True}).status_code == 200
    # Suggestions: a entailment, b neutral, c contradiction; d none.
    ann1 = {"a": "entailment", "b": "neutral", "c": "contradiction", "d": "neutral"}  # takes all three
    ann2 = {"a": "entailment", "b": "entailment", "c": "neutral", "d": "entailment"}  # takes a only
    label_all(nli["ann1"], lambda key, suggestion: ann1[key])
    label_all(nli["ann2"], lambda key, suggestion: ann2[key])
    # The decided gold (arranged here; rounds of five votes are still open): the suggestion
    # is right on a, wrong on b and c.
    for key, gold in {"a": "entailment", "b": "entailment", "c": "neutral", "d": "neutral"}.items():
        Item.objects.filter(project__slug=SLUG, external_id=key).update(gold_label=gold)
    rows = {row["annotator"]: row for row in nli["sup"].get(f"{PROJECT}annotators/").json()}
    # Hand count. ann1: shown 3, took 3; wrong on b, c, gave the gold on neither.
    assert rows["ann1"]["suggestions"] == {
        "shown": 3,
        "taken": 3,
        "acceptance_rate": 1.0,
        "suggestion_wrong": 2,
        "agreement_when_wrong": 0.0,
    }
    # ann2: shown 3, took 1 (a); wrong on b and c, gave the gold on both.
    assert rows["ann2"]["suggestions"] == {
        "shown": 3,
        "taken": 1,
        "acceptance_rate": pytest.approx(1 / 3),
        "suggestion_wrong": 2,
        "agreement_when_wrong": 1.0,
    }
    assert rows["ann3"]["suggestions"] is None
    # The supervisor's quality page shows the same figures in its two columns.
    from django.contrib.auth import get_user_model
    from django.test import Client

    browser = Client()
    browser.force_login(get_user_model().objects.get(username="sup"))
    response = browser.get(f"/p/{SLUG}/annotators/", HTTP_ACCEPT_LANGUAGE="en")
    assert response.status_code == 200
    page = response.content.decode()
    assert "Suggestions taken" in page and "Agreement where the suggestion was wrong" in page
    row = page.split('data-annotator="ann2"')[1].split("</tr>")[0]
    assert 'class="num suggestion-rate" data-sort="0.3333' in row and "(3)" in row
    assert 'class="num suggestion-wrong" data-sort="1.0"' in row and "(2)" in row
    # Annotators and reviewers do not read the figures.
    assert nli["ann1"].get(f"{PROJECT}annotators/").status_code == 403
