"""A published FarsTail release in a project, as the bias tests need it: the shipped Val and
Test samples imported in FarsTail's own format, then given gold labels and splits directly
(the import's `split`/`labels_final` flags belong to another change). The Val sample is the
training split here: the full Train file is not shipped."""

import io
from pathlib import Path

FARSTAIL_DIR = Path(__file__).resolve().parents[3] / "shared" / "data" / "farstail"


def upload(name: str, data: bytes):
    handle = io.BytesIO(data)
    handle.name = name
    return handle


def import_farstail(client, slug: str, filename: str, *, split: str) -> list:
    """Import one shipped file and make its rows gold items of `split`; returns the items."""
    from annotation.models import Item

    before = set(Item.objects.filter(project__slug=slug).values_list("pk", flat=True))
    response = client.post(
        f"/api/projects/{slug}/import/",
        {"file": upload(filename, (FARSTAIL_DIR / filename).read_bytes()), "format": "farstail"},
    )
    assert response.status_code == 201, response.content
    items = list(Item.objects.filter(project__slug=slug).exclude(pk__in=before).order_by("position", "id"))
    for item in items:
        item.split, item.gold_label, item.status = split, item.reference_label, Item.Status.ACCEPTED
    Item.objects.bulk_update(items, ["split", "gold_label", "status"])
    return items


def farstail_release(client, slug: str) -> dict:
    return {
        "train": import_farstail(client, slug, "Val-word.csv", split="train"),
        "test": import_farstail(client, slug, "Test-word.csv", split="test"),
    }
