"""Blind rating (HeSum §4.1): the order an annotator sees the summaries in cannot be worked
out from anything public (the item's id comes with `next`), differs between projects holding
the same items, and nothing an annotator can reach, before, during or after rating, names
the system behind a summary. The walk covers every URL pattern of the site (pages and API,
GET and an empty POST), the next / submit / replay / resubmit exchanges and progress."""

import hashlib
import io
import json
import random

import pytest

from tests.conftest import NOTHING_HELD_OUT
from tests.security.annotator_walk import rate_everything, walk_every_route
from tests.security.test_route_role_matrix import content_of

pytestmark = pytest.mark.django_db

SYSTEMS = ("SYSNAME-ALPHA-7f3", "SYSNAME-BETA-9c1", "SYSNAME-GAMMA-2d8", "SYSNAME-DELTA-5e4")
N_ITEMS = 10


def public_formula(external_id: str, n: int) -> list[int]:
    """What a rater could compute from an item's id if the order were seeded by it alone."""
    seed = int.from_bytes(hashlib.sha256(f"mashov.summary_rating:{external_id}".encode()).digest()[:8], "big")
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return order


def rows():
    return [
        {
            "id": f"s{i}",
            "split": "test",
            "article": f"כתבה מספר {i} על מזג האוויר בעיר.",
            "summaries": [
                {"system": system, "text": f"סיכום {n} של כתבה {i}", "scores": {"rouge1": 0.1 * n}}
                for n, system in enumerate(SYSTEMS)
            ],
        }
        for i in range(N_ITEMS)
    ]


def text_of(item_index: int, summary_index: int) -> str:
    return f"סיכום {summary_index} של כתבה {item_index}"


def leaks(body: bytes) -> list[str]:
    text = body.decode("utf-8", "replace").lower()
    return [name for name in SYSTEMS if name.lower() in text]


def make_project(admin, slug: str, rater: str):
    made = admin.post(
        "/api/projects/",
        {"slug": slug, "name": slug, "kind": "summary_rating", "language": "he", "settings": {"raters_per_item": 1}},
        format="json",
    )
    assert made.status_code == 201, made.content
    upload = io.BytesIO("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows()).encode())
    upload.name = "s.jsonl"
    imported = admin.post(f"/api/projects/{slug}/import/", {"file": upload, "format": "jsonl"})
    assert imported.status_code == 201, imported.content
    added = admin.post(
        f"/api/projects/{slug}/members/", {"username": rater, "role": "annotator", "status": "active"}, format="json"
    )
    assert added.status_code == 201, added.content


def seen_orders(api, slug: str) -> dict[str, list[int]]:
    """external id → the summaries (file index) in the order the annotator is shown them."""
    orders = {}
    for _ in range(N_ITEMS):
        response = api.get(f"/api/projects/{slug}/next/")
        assert response.status_code == 200, response.content
        item = response.json()["item"]
        i = int(item["external_id"][1:])
        texts = [s["text"] for s in item["payload"]["summaries"]]
        orders[item["external_id"]] = [next(k for k in range(len(SYSTEMS)) if text_of(i, k) == t) for t in texts]
        skipped = api.post(
            f"/api/assignments/{response.json()['assignment']}/submit/",
            {"value": rating_value(len(texts))},
            format="json",
        )
        assert skipped.status_code == 201, skipped.content
    return orders


def rating_value(n: int) -> dict:
    # Different scores per display place, so a value keyed by file index would differ.
    return {"ratings": {str(d): {"coherence": 1 + d, "completeness": 5 - d, "errors": []} for d in range(n)}}


@pytest.fixture
def admin(make_user, client_for, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    return client_for(make_user("root", staff=True))


def test_the_order_is_secret_and_differs_between_projects(admin, make_user, client_for):
    api = client_for(make_user("rater"))
    make_project(admin, "blind-a", "rater")
    make_project(admin, "blind-b", "rater")
    first, second = seen_orders(api, "blind-a"), seen_orders(api, "blind-b")
    assert set(first) == set(second) == {f"s{i}" for i in range(N_ITEMS)}
    for orders in (first, second):
        assert all(sorted(order) == list(range(len(SYSTEMS))) for order in orders.values())
        # The id-only formula predicts at most a few items by chance (1 in 24 each).
        predicted = sum(order == public_formula(eid, len(SYSTEMS)) for eid, order in orders.items())
        assert predicted <= 3, f"{predicted} of {N_ITEMS} orders follow from the item id alone"
    # Same items, other project: other orders.
    assert sum(first[eid] != second[eid] for eid in first) >= 3
    # Orders differ between items of a project (a fixed order would reveal the positions).
    assert len({tuple(order) for order in first.values()}) > 1


def test_ratings_still_map_to_the_system_the_annotator_saw(admin, make_user, client_for):
    """The report reads each rating as the summary shown at that place on the screen."""
    api = client_for(make_user("rater"))
    make_project(admin, "blind-a", "rater")
    orders = seen_orders(api, "blind-a")
    report = admin.get("/api/projects/blind-a/report/")
    assert report.status_code == 200, report.content
    text = json.dumps(report.json())
    exported = admin.get("/api/projects/blind-a/export/?format=jsonl")
    assert exported.status_code == 200, exported.content
    records = [json.loads(line) for line in content_of(exported).decode().splitlines() if line.strip()]
    assert len(records) == N_ITEMS and text
    for record in records:
        order = orders[record["id"]]
        for display, stored in enumerate(order):
            summary = record["summaries"][stored]
            assert summary["system"] == SYSTEMS[stored]
            assert [(r["coherence"], r["completeness"]) for r in summary["ratings"]] == [(1 + display, 5 - display)]


def test_nothing_an_annotator_reaches_names_a_system(admin, make_user, client_for, client):
    from annotation.models import Annotation, Item

    rater = make_user("rater")
    api = client_for(rater)
    make_project(admin, "blind-a", "rater")
    seen, last_assignment, rated = rate_everything(
        api, "blind-a", lambda payload: rating_value(len(payload["summaries"]))
    )
    assert rated == N_ITEMS

    client.force_login(rater)
    stored = Annotation.objects.filter(annotator=rater).first()
    item = Item.objects.filter(project__slug="blind-a").first()
    params = {
        "slug": "blind-a",
        "username": "rater",
        "item_id": item.pk,
        "assignment_id": last_assignment,
        "annotation_id": stored.pk,
        "feedback_id": 987654321,
        "evaluation_id": 987654321,
        "pair_id": 987654321,
        "job_id": 987654321,
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
        assert b'"order"' not in body, f"{what} gives away the display order: {body[:300]!r}"


def test_items_imported_before_keep_their_order_and_a_reimport_skips_them(admin, make_user):
    from annotation.models import Item

    make_user("rater")
    make_project(admin, "blind-a", "rater")
    # An item stored before the order was keyed: its order (and so its ratings) stay as stored.
    item = Item.objects.get(project__slug="blind-a", external_id="s0")
    item.payload["order"] = public_formula("s0", len(SYSTEMS))
    item.save(update_fields=["payload"])
    upload = io.BytesIO("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows()).encode())
    upload.name = "s.jsonl"
    again = admin.post("/api/projects/blind-a/import/", {"file": upload, "format": "jsonl"})
    assert again.status_code == 201 and again.json() == {
        "created": 0,
        "skipped": N_ITEMS,
        "job": None,
        **NOTHING_HELD_OUT,
    }, again.content
    item.refresh_from_db()
    assert item.payload["order"] == public_formula("s0", len(SYSTEMS))
