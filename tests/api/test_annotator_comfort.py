"""Drafts, skips and changing one's own answers, through HTTP (docs/api.md "Annotator comfort and the supervisor console").

Items are our own writing."""

from datetime import timedelta

import pytest

from tests.api.test_annotate import error_list, import_records, make_project, next_for, submit  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db

# 2 of 3 without a reference label: an item needs three votes.
THREE_VOTES = {"consensus_n": 3, "consensus_k": 2}


def items(project, n: int, prefix: str = "i"):
    import_records(
        project, *({"id": f"{prefix}{i}", "premise": f"הנחה מספר {i}", "hypothesis": "השערה"} for i in range(n))
    )


def draft_url(assignment: int) -> str:
    return f"/api/assignments/{assignment}/draft/"


# ---------------------------------------------------------------- drafts


def test_draft_is_kept_for_the_claimant_until_submit(make_project):
    from annotation.models import Assignment

    project, team = make_project("dr", annotators=2, settings=THREE_VOTES)
    items(project, 2)
    claim = next_for(team["a1"], "dr").json()["assignment"]
    assert team["a1"].get(draft_url(claim)).json() == {"value": None}
    draft = {"questions": [{"question": "מי כתב את זה?\u200f 🙂", "answer": {"start": 3, "text": "א\u05bcב"}}]}
    saved = team["a1"].put(draft_url(claim), {"value": draft}, format="json")
    assert saved.status_code == 200 and saved.json() == {"value": draft}
    # another device: the same user, another client
    assert team["a1"].get(draft_url(claim)).json() == {"value": draft}
    # someone else's claim does not exist for them
    error_list(team["a2"].get(draft_url(claim)), 404)
    error_list(team["a2"].put(draft_url(claim), {"value": {}}, format="json"), 404)
    assert submit(team["a1"], claim).status_code == 201
    assert Assignment.objects.get(pk=claim).draft is None
    assert "no longer open" in error_list(team["a1"].get(draft_url(claim)), 409)[0]["message"]
    error_list(team["a1"].put(draft_url(claim), {"value": draft}, format="json"), 409)


def test_draft_is_gone_after_skip_and_expiry(make_project):
    from django.utils import timezone

    from annotation.models import Assignment

    project, team = make_project("dx", annotators=1, settings=THREE_VOTES)
    items(project, 3)
    claim = next_for(team["a1"], "dx").json()["assignment"]
    team["a1"].put(draft_url(claim), {"value": {"questions": []}}, format="json")
    assert team["a1"].post(f"/api/assignments/{claim}/skip/").status_code == 204
    assert Assignment.objects.get(pk=claim).draft is None
    error_list(team["a1"].get(draft_url(claim)), 409)

    claim = next_for(team["a1"], "dx").json()["assignment"]
    team["a1"].put(draft_url(claim), {"value": {"questions": []}}, format="json")
    Assignment.objects.filter(pk=claim).update(expires_at=timezone.now() - timedelta(seconds=1))
    error_list(team["a1"].get(draft_url(claim)), 409)
    assert Assignment.objects.get(pk=claim).draft is None


@pytest.mark.parametrize(
    "body, status, field",
    [
        ({"value": [1, 2]}, 400, "value"),
        ({"value": "text"}, 400, "value"),
        ({}, 400, "value"),
        ({"value": {}, "other": 1}, 400, "other"),
        ({"value": {"q": "x" * (64 * 1024)}}, 413, "value"),
        ({"value": {"q": "a\u0000b"}}, 400, "value.q"),
    ],
)
def test_bad_draft_is_refused_and_nothing_is_stored(make_project, body, status, field):
    from annotation.models import Assignment

    project, team = make_project("db", annotators=1, settings=THREE_VOTES)
    items(project, 1)
    claim = next_for(team["a1"], "db").json()["assignment"]
    errors = error_list(team["a1"].put(draft_url(claim), body, format="json"), status)
    assert errors[0]["field"] == field
    assert Assignment.objects.get(pk=claim).draft is None


# ---------------------------------------------------------------- skip


def test_skip_gives_the_item_to_others_and_not_back_to_the_skipper(make_project):
    from annotation.models import Annotation

    project, team = make_project("sk", annotators=2, settings={"consensus_n": 2, "consensus_k": 2})
    items(project, 1)
    first = next_for(team["a1"], "sk").json()
    assert next_for(team["a2"], "sk").status_code == 200
    # both slots are held; a2 submits, a1 skips: the slot a1 held is free again
    assert team["a1"].post(f"/api/assignments/{first['assignment']}/skip/").status_code == 204
    assert team["a1"].post(f"/api/assignments/{first['assignment']}/skip/").status_code == 204  # again: nothing changes
    # not served again to the one who skipped it
    assert next_for(team["a1"], "sk").status_code == 204
    # a submit of the skipped claim is refused
    error_list(submit(team["a1"], first["assignment"]), 409)
    assert Annotation.objects.count() == 0


def test_skipped_slot_goes_to_the_next_annotator(make_project):
    project, team = make_project("sl", annotators=3, settings={"consensus_n": 2, "consensus_k": 2})
    items(project, 1)
    held = [next_for(team[name], "sl").json()["assignment"] for name in ("a1", "a2")]
    assert next_for(team["a3"], "sl").status_code == 204  # full
    team["a1"].post(f"/api/assignments/{held[0]}/skip/")
    again = next_for(team["a3"], "sl")
    assert again.status_code == 200 and again.json()["item"]["external_id"] == "i0"


def test_skip_of_a_submitted_or_foreign_claim(make_project):
    project, team = make_project("sf", annotators=2, settings=THREE_VOTES)
    items(project, 2)
    claim = next_for(team["a1"], "sf").json()["assignment"]
    error_list(team["a2"].post(f"/api/assignments/{claim}/skip/"), 404)
    error_list(team["a1"].post("/api/assignments/987654/skip/"), 404)
    submit(team["a1"], claim)
    assert "already submitted" in error_list(team["a1"].post(f"/api/assignments/{claim}/skip/"), 409)[0]["message"]


def test_progress_does_not_count_a_skipped_item(make_project):
    project, team = make_project("sp", annotators=1, settings=THREE_VOTES)
    items(project, 3)
    claim = next_for(team["a1"], "sp").json()["assignment"]
    team["a1"].post(f"/api/assignments/{claim}/skip/")
    assert team["a1"].get("/api/projects/sp/progress/").json() == {"done": 0, "remaining": 2}


# ---------------------------------------------------------------- mine and edits


def label(client, slug: str, value: str) -> dict:
    claim = next_for(client, slug).json()
    assert submit(client, claim["assignment"], {"label": value}).status_code == 201
    return claim


def test_mine_lists_the_callers_annotations_newest_first_paginated(make_project):
    project, team = make_project("mi", annotators=2, settings=THREE_VOTES)
    items(project, 4)
    done = [label(team["a1"], "mi", "neutral")["item"]["external_id"] for _ in range(3)]
    label(team["a2"], "mi", "entailment")
    page = team["a1"].get("/api/projects/mi/mine/?page_size=2").json()
    assert page["count"] == 3 and page["next"] is not None
    assert [entry["item"]["external_id"] for entry in page["results"]] == done[::-1][:2]
    entry = page["results"][0]
    assert set(entry) == {"annotation", "assignment", "item", "round", "value", "created_at", "edited_at", "editable"}
    assert entry["value"] == {"label": "neutral"} and entry["editable"] is True and entry["edited_at"] is None
    assert set(entry["item"]["payload"]) == {"premise", "hypothesis"}
    rest = team["a1"].get("/api/projects/mi/mine/?page_size=2&page=2").json()
    assert [e["item"]["external_id"] for e in rest["results"]] == [done[0]]
    error_list(team["a1"].get("/api/projects/no-such/mine/"), 404)


def test_edit_changes_the_value_only_for_its_annotator(make_project):
    from annotation.models import Annotation

    project, team = make_project("ed", annotators=2, settings=THREE_VOTES)
    items(project, 2)
    label(team["a1"], "ed", "neutral")
    annotation = Annotation.objects.get()
    url = f"/api/annotations/{annotation.pk}/"
    error_list(team["a2"].patch(url, {"value": {"label": "entailment"}}, format="json"), 404)
    error_list(team["sup"].patch(url, {"value": {"label": "entailment"}}, format="json"), 404)
    bad = error_list(team["a1"].patch(url, {"value": {"label": "maybe"}}, format="json"), 400)
    assert bad[0]["field"] == "value.label"
    error_list(team["a1"].patch(url, {"label": "entailment"}, format="json"), 400)
    changed = team["a1"].patch(url, {"value": {"label": "contradiction"}}, format="json")
    assert changed.status_code == 200, changed.content
    assert changed.json()["value"] == {"label": "contradiction"} and changed.json()["edited_at"]
    annotation.refresh_from_db()
    assert annotation.value == {"label": "contradiction"}
    mine = team["a1"].get("/api/projects/ed/mine/").json()["results"][0]
    assert mine["value"] == {"label": "contradiction"} and mine["edited_at"]


def test_consensus_uses_the_latest_value_and_a_decided_round_is_409(make_project):
    from annotation.models import Annotation, ConsensusOutcome, Item
    from annotation.services.consensus import consensus_compute_for_item

    project, team = make_project("cs", annotators=3, settings=THREE_VOTES)
    items(project, 1)
    label(team["a1"], "cs", "neutral")
    label(team["a2"], "cs", "entailment")
    first = Annotation.objects.get(annotator__username="cs-a1")
    # a1 changes their mind before the last vote: the round is decided on the new value
    assert (
        team["a1"].patch(f"/api/annotations/{first.pk}/", {"value": {"label": "entailment"}}, format="json").status_code
        == 200
    )
    label(team["a3"], "cs", "contradiction")
    item = Item.objects.get()
    assert item.status == "complete"
    # complete but not decided yet: still editable
    assert team["a3"].get("/api/projects/cs/mine/").json()["results"][0]["editable"] is True
    consensus_compute_for_item(item.pk)
    item.refresh_from_db()
    assert item.status == "accepted" and item.gold_label == "entailment"
    assert ConsensusOutcome.objects.get().votes == {"entailment": 2, "contradiction": 1}
    late = error_list(
        team["a1"].patch(f"/api/annotations/{first.pk}/", {"value": {"label": "neutral"}}, format="json"), 409
    )
    assert "decided" in late[0]["message"]
    assert team["a1"].get("/api/projects/cs/mine/").json()["results"][0]["editable"] is False
    first.refresh_from_db()
    assert first.value == {"label": "entailment"}


def test_a_reviewed_annotation_is_not_editable(make_project):
    from annotation.models import Annotation, Review

    project, team = make_project("rv", annotators=1, settings=THREE_VOTES)
    items(project, 1)
    label(team["a1"], "rv", "neutral")
    annotation = Annotation.objects.get()
    Review.objects.create(annotation=annotation, grade="good")
    assert team["a1"].get("/api/projects/rv/mine/").json()["results"][0]["editable"] is False
    assert (
        "reviewed"
        in error_list(
            team["a1"].patch(f"/api/annotations/{annotation.pk}/", {"value": {"label": "entailment"}}, format="json"),
            409,
        )[0]["message"]
    )


def test_a_decided_phrase_pair_refuses_an_edit_and_keeps_its_gold(make_project):
    """Once the last label closes a phrase pair's round, the kind's rule has decided it:
    an edit would change gold behind the decision, so it is a 409 (a supervisor reopens)."""
    from annotation.models import Annotation, Item

    project, team = make_project(
        "ph", annotators=1, kind="phrase_pair", settings={"labels_per_item": 1, "probe_rate": 0.0}
    )
    import_records(project, {"id": "p1", "left": "בית גדול", "right": "בית קטן"})
    label(team["a1"], "ph", "OPPOSITION")
    assert Item.objects.get().gold_label == "OPPOSITION"
    annotation = Annotation.objects.get()
    response = team["a1"].patch(f"/api/annotations/{annotation.pk}/", {"value": {"label": "SIMILAR"}}, format="json")
    assert response.status_code == 409
    assert "reopen" in response.json()["errors"][0]["message"]
    assert Item.objects.get().gold_label == "OPPOSITION"
    assert Annotation.objects.get().value == {"label": "OPPOSITION"}


def test_mine_reads_a_page_in_a_fixed_number_of_queries(make_project):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    project, team = make_project("mq", annotators=1, settings=THREE_VOTES)
    items(project, 12)
    label(team["a1"], "mq", "neutral")
    with CaptureQueriesContext(connection) as few:
        team["a1"].get("/api/projects/mq/mine/")
    for _ in range(10):
        label(team["a1"], "mq", "entailment")
    with CaptureQueriesContext(connection) as many:
        page = team["a1"].get("/api/projects/mq/mine/").json()
    assert page["count"] == 11
    assert len(many.captured_queries) == len(few.captured_queries) <= 6


def test_the_top_bar_counts_unread_feedback_once_per_page(make_project, client):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotation.models import Feedback

    project, team = make_project("tb", annotators=1, settings=THREE_VOTES)
    annotator = project.memberships.get(role="annotator").user
    Feedback.objects.bulk_create(Feedback(recipient=annotator, project=project, message=f"m{i}") for i in range(3))
    Feedback.objects.create(recipient=annotator, project=project, message="read", read_at="2026-01-01T00:00:00Z")
    client.login(username=annotator.username, password="pass-word-123")
    with CaptureQueriesContext(connection) as queries:
        page = client.get("/")
    assert page.status_code == 200
    assert b'id="inbox-unread"' in page.content and b">3</span>" in page.content
    assert sum("annotation_feedback" in q["sql"] for q in queries.captured_queries) == 1
    client.logout()
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/login/").status_code == 200
    assert not any("annotation_feedback" in q["sql"] for q in queries.captured_queries)
