"""Blind rating (LCHAIM §2.2): nothing an annotator can reach, before, during or after
rating, names the system behind a candidate or gives away which candidate (import order)
stood at which place on their screen. The walk covers every URL pattern of the site (pages
and API, GET and an empty POST), the next / submit / replay / resubmit exchanges and
progress, on a project whose items carry back-translations, similarity scores (which name
the systems) and flags, and whose settings name the released system."""

import io
import json

import pytest

from tests.kinds.translation.test_api import stub_encoder
from tests.security.annotator_walk import rate_everything, walk_every_route

pytestmark = pytest.mark.django_db

SYSTEMS = ("SYSNAME-ALPHA-7f3", "SYSNAME-BETA-9c1")
SLUG = "blind-mt"


def leaks(body: bytes) -> list[str]:
    text = body.decode("utf-8", "replace")
    return [name for name in SYSTEMS if name in text or name.lower() in text.lower()]


def ratings_by_place(payload: dict) -> dict:
    """Different scores per display place, so a value keyed by candidate index differs."""
    n = len(payload["candidates"])
    return {
        "ratings": {
            str(d): {"accuracy": 1 + d, "fluency": 4, "cultural_fit": 5 - d, "label_valid": d == 0} for d in range(n)
        }
    }


@pytest.fixture
def blind(make_user, client_for):
    from annotation.kinds.translation import back_translation
    from annotation.models import Item, Project

    admin = client_for(make_user("root", staff=True))
    made = admin.post(
        "/api/projects/",
        {
            "slug": SLUG,
            "name": "Blind",
            "kind": "translation_rating",
            "language": "he",
            "settings": {"released_system": SYSTEMS[0]},
        },
        format="json",
    )
    assert made.status_code == 201, made.content
    rows = []
    for i in range(4):
        source = {"premise": f"The dog ran home {i}.", "hypothesis": f"A dog ran {i}.", "label": "e"}
        rows.append(
            {
                "id": f"b{i}",
                "split": "test",
                "source": source,
                "candidates": [
                    {
                        "system": system,
                        "premise": f"תרגום {n} של {i}",
                        "hypothesis": f"השערה {n} של {i}",
                        "back_translation": source
                        if n == 0
                        else {"premise": "Unrelated words entirely.", "hypothesis": source["hypothesis"]},
                    }
                    for n, system in enumerate(SYSTEMS)
                ],
            }
        )
    upload = io.BytesIO("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode())
    upload.name = "b.jsonl"
    assert admin.post(f"/api/projects/{SLUG}/import/", {"file": upload, "format": "jsonl"}).status_code == 201
    sample = admin.post(f"/api/projects/{SLUG}/sample/", {"n": 4, "seed": 1}, format="json")
    assert sample.status_code == 200, sample.content
    project = Project.objects.get(slug=SLUG)
    back_translation.back_translation_compute(project, encoder=stub_encoder)
    assert any(SYSTEMS[1] in json.dumps(item.computed) for item in Item.objects.filter(project=project))
    assert (
        Item.objects.filter(project=project, status="removed").count() == 0
    )  # every released candidate back-translates well
    rater = make_user("rater")
    assert (
        admin.post(
            f"/api/projects/{SLUG}/members/",
            {"username": "rater", "role": "annotator", "status": "active"},
            format="json",
        ).status_code
        == 201
    )
    return {"admin": admin, "rater": rater, "api": client_for(rater), "job": sample.json()["job"], "project": project}


def test_nothing_an_annotator_reaches_names_a_system_or_the_candidate_order(blind, client):
    from annotation.models import Annotation, Item

    api = blind["api"]
    seen, last_assignment, rated = rate_everything(api, SLUG, ratings_by_place)
    assert rated == 4
    # The stored value is keyed by candidate index: the mapping is on record for the staff.
    stored = Annotation.objects.filter(annotator=blind["rater"]).first()
    assert "display_order" in stored.value

    client.force_login(blind["rater"])
    item = Item.objects.filter(project=blind["project"]).first()
    params = {
        "slug": SLUG,
        "username": "rater",
        "item_id": item.pk,
        "assignment_id": last_assignment,
        "annotation_id": stored.pk,
        "feedback_id": 987654321,
        "evaluation_id": 987654321,
        "pair_id": 987654321,
        "job_id": blind["job"],
        "table": "table1",
        "fmt": "json",
        "version": "9.9",
        "other": "9.8",
        "webhook_id": 987654321,
        "delivery_id": 987654321,
        "audit_id": 987654321,
    }
    seen += walk_every_route(api, client, params)
    for what, body in seen:
        assert not leaks(body), f"{what} names a system: {body[:300]!r}"
        assert b"display_order" not in body, f"{what} gives away the candidate order: {body[:300]!r}"
