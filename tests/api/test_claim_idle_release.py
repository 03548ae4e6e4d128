"""Claims and idle release through HTTP (docs/api.md "Claims and idle release"): a claim
holds its slot for `idle_release_seconds` unless its annotator shows signs of work (the
page's heartbeat, a draft save), never past `claim_ttl`; one that lapsed idle comes back
while its slot is free."""

from datetime import timedelta

import pytest

from tests.api.test_annotate import error_list, import_records, make_project, next_for, submit  # noqa: F401

# Two votes per item (the fewest the kind takes).
SETTINGS = {"consensus_n": 2, "consensus_k": 2, "claim_ttl": 1800, "idle_release_seconds": 120}


def setup(make_project, slug: str):
    """One item, annotators a1 (A) and a2 (B); a3 holds the item's other slot throughout."""
    project, team = make_project(slug, annotators=3, settings=SETTINGS)
    import_records(project, {"id": "only", "premise": "p", "hypothesis": "h"})
    assert next_for(team["a3"], slug).status_code == 200
    return project, team


def heartbeat(client, assignment: int):
    return client.post(f"/api/assignments/{assignment}/heartbeat/")


def _age(assignment_id: int, seconds: int) -> None:
    """Move a claim `seconds` into the past: claimed and last renewed that much earlier."""
    from annotation.models import Assignment

    claim = Assignment.objects.get(pk=assignment_id)
    Assignment.objects.filter(pk=assignment_id).update(
        claimed_at=claim.claimed_at - timedelta(seconds=seconds),
        expires_at=claim.expires_at - timedelta(seconds=seconds),
    )


@pytest.mark.django_db
def test_an_idle_claim_is_released_after_the_idle_time_not_the_claim_ttl(make_project):
    from django.utils import timezone

    from annotation.models import Assignment

    project, team = setup(make_project, "idle")
    first = next_for(team["a1"], "idle").json()
    claim = Assignment.objects.get(pk=first["assignment"])
    assert timedelta(seconds=110) < claim.expires_at - timezone.now() <= timedelta(seconds=120)
    assert next_for(team["a2"], "idle").status_code == 204  # held while A might be reading

    _age(first["assignment"], 121)  # two minutes without a sign of A
    taken = next_for(team["a2"], "idle")
    assert taken.status_code == 200 and taken.json()["item"]["external_id"] == "only"
    # A's page, touched now, learns the item went to someone else.
    errors = error_list(heartbeat(team["a1"], first["assignment"]), 409)
    assert errors[0]["field"] == "assignment"


@pytest.mark.django_db
def test_a_heartbeat_keeps_the_claim_and_never_past_the_claim_ttl(make_project):
    from django.utils import timezone

    from annotation.models import Assignment

    project, team = setup(make_project, "beat")
    first = next_for(team["a1"], "beat").json()
    for _minute in range(5):  # A at work for five minutes, a heartbeat each minute
        _age(first["assignment"], 60)
        response = heartbeat(team["a1"], first["assignment"])
        assert response.status_code == 200, response.content
        assert next_for(team["a2"], "beat").status_code == 204
    claim = Assignment.objects.get(pk=first["assignment"])
    assert timedelta(seconds=110) < claim.expires_at - timezone.now() <= timedelta(seconds=120)

    # Near the end of claim_ttl a heartbeat renews only up to it.
    _age(first["assignment"], 1800 - 300 - 30)
    assert heartbeat(team["a1"], first["assignment"]).status_code == 200
    claim.refresh_from_db()
    assert claim.expires_at == claim.claimed_at + timedelta(seconds=1800)
    assert submit(team["a1"], first["assignment"]).status_code == 201
    error_list(heartbeat(team["a1"], first["assignment"]), 409)  # submitted: nothing to keep


@pytest.mark.django_db
def test_a_claim_that_lapsed_idle_comes_back_on_input_while_its_slot_is_free(make_project):
    project, team = setup(make_project, "back")
    first = next_for(team["a1"], "back").json()
    _age(first["assignment"], 300)
    assert heartbeat(team["a1"], first["assignment"]).status_code == 200
    assert next_for(team["a1"], "back").json()["assignment"] == first["assignment"]


@pytest.mark.django_db
def test_a_draft_with_work_holds_the_claim_for_the_claim_ttl(make_project):
    from annotation.models import Assignment

    project, team = setup(make_project, "draft")
    first = next_for(team["a1"], "draft").json()
    url = f"/api/assignments/{first['assignment']}/draft/"
    assert team["a1"].put(url, {"value": {"questions": [], "pending": None}}, format="json").status_code == 200
    claim = Assignment.objects.get(pk=first["assignment"])
    assert claim.expires_at < claim.claimed_at + timedelta(seconds=200)  # nothing typed: idle rule
    response = team["a1"].put(url, {"value": {"questions": [{"question": "q"}]}}, format="json")
    assert response.status_code == 200, response.content
    claim.refresh_from_db()
    assert claim.expires_at == claim.claimed_at + timedelta(seconds=1800)
    _age(first["assignment"], 600)  # ten minutes at lunch: the typed work keeps its item
    assert next_for(team["a2"], "draft").status_code == 204


@pytest.mark.django_db
def test_idle_release_is_a_checked_setting(make_project):
    from annotation.errors import InvalidInput
    from annotation.kinds.registry import get_kind

    kind = get_kind("nli_relabel")
    assert kind.settings_for({})["idle_release_seconds"] == 180
    with pytest.raises(InvalidInput) as refused:
        kind.clean_settings({"idle_release_seconds": 1})
    assert refused.value.errors[0].field == "settings.idle_release_seconds"
