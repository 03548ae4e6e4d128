"""An import writes its items with PostgreSQL's COPY, and with bulk_create on the other
databases: both must store the same rows — every column the model's defaults, save() and
the import fill (derived groups, positions, stored payloads, defaults) — whatever the text
holds (tabs, line ends, backslashes: COPY's own escapes)."""

import io
import json
from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parents[2] / "annotation" / "demo"
# Columns that differ between two imports of one file by design: the row's id, when it
# was stored, and the random draw that orders the assignable queue.
UNCOMPARED = {"id", "created_at", "shuffle_key"}
TRICKY = [
    "tab\there, a backslash \\ and \\N and \\t as text",
    "line\nfeed, carriage\rreturn, both\r\n",
    "quotes \" and ' and a formula =1+1",
    "پاراگراف\u2028بعدی\u2029 و\u0085 NEL",
    "מרחב\u00a0לא-שובר, סימן\u200fכיוון",
]


def _demo_projects() -> list[dict]:
    return json.loads((DEMO / "projects.json").read_text(encoding="utf-8"))


def _stored_rows(project) -> list[dict]:
    from annotation.models import Item

    fields = [field.attname for field in Item._meta.concrete_fields if field.attname not in UNCOMPARED]
    return list(Item.objects.filter(project=project).order_by("position", "external_id").values(*fields))


def _import(client, slug: str, name: str, data: bytes, fmt: str) -> dict:
    handle = io.BytesIO(data)
    handle.name = name
    response = client.post(f"/api/projects/{slug}/import/", {"file": handle, "format": fmt})
    assert response.status_code in (200, 201), response.content[:1000]
    return response.json()


def _both_ways(client, monkeypatch, project, name: str, data: bytes, fmt: str) -> tuple[list, list]:
    """The rows an import of `data` stores through COPY, then (the items deleted) through
    bulk_create, into the same project."""
    from django.db import connection

    from annotation.models import Item
    from annotation.services import imports

    assert connection.vendor == "postgresql"  # the suite's database: the COPY path is the default
    chosen = []
    real = imports.copy_available
    monkeypatch.setattr(imports, "copy_available", lambda: chosen.append(real()) or chosen[-1])
    _import(client, project.slug, name, data, fmt)
    assert chosen and all(chosen), "the import did not go through COPY"
    copied = _stored_rows(project)
    created_at = set(Item.objects.filter(project=project).values_list("created_at", flat=True))
    Item.objects.filter(project=project).delete()
    chosen.clear()
    monkeypatch.setattr(imports, "copy_available", lambda: chosen.append(False) or False)
    _import(client, project.slug, name, data, fmt)
    assert chosen, "the import did not reach the insert"
    created = _stored_rows(project)
    # COPY gives every row of a batch the time the batch was written.
    assert len(created_at) == 1 and None not in created_at
    keys = Item.objects.filter(project=project).values_list("shuffle_key", flat=True)
    assert all(0 <= key < 1 for key in keys) and len(set(keys)) > 1
    return copied, created


@pytest.fixture
def supervisor(db, make_user, client_for):
    user = make_user("copy-sup", staff=True)
    return user, client_for(user)


@pytest.mark.django_db
@pytest.mark.parametrize("spec", _demo_projects(), ids=lambda spec: spec["kind"] + "-" + spec["language"])
def test_copy_and_bulk_create_store_the_same_rows_for_every_kind(spec, supervisor, monkeypatch):
    from annotation.kinds.registry import available_kinds
    from annotation.services.projects import project_create

    if spec["kind"] not in available_kinds():
        pytest.skip(f"{spec['kind']} is not installed")
    user, client = supervisor
    project = project_create(actor=user, slug="copy-" + spec["slug"], name=spec["name"], kind=spec["kind"],
                             language=spec["language"], settings=spec.get("settings"))  # fmt: skip
    data = (DEMO / spec["file"]).read_bytes()
    copied, created = _both_ways(client, monkeypatch, project, spec["file"], data, "jsonl")
    assert copied and copied == created


@pytest.mark.django_db
def test_copy_escapes_every_special_character_and_fills_derived_fields(supervisor, monkeypatch, make_user):
    from annotation.services.projects import project_create

    user, client = supervisor
    author = make_user("author1")
    project = project_create(actor=user, slug="copy-nli", name="copy", kind="nli_relabel", language="he")
    records = []
    for i, text in enumerate(TRICKY):
        records.append(
            {"id": f"t{i}\\x", "premise": text, "hypothesis": text[::-1], "label": "neutral",
             **({"group": f"g\t{i}"} if i % 2 else {}), **({"author": author.username} if i % 3 == 0 else {}),
             "extra": {"col\\umn": text, "n": i}}
        )  # fmt: skip
    records.append({"id": "same-premise", "premise": TRICKY[0], "hypothesis": "h", "label": "e"})
    data = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records).encode()
    copied, created = _both_ways(client, monkeypatch, project, "tricky.jsonl", data, "jsonl")
    assert copied == created
    by_id = {row["external_id"]: row for row in copied}
    assert by_id["t0\\x"]["payload"]["premise"] == TRICKY[0]
    assert by_id["t1\\x"]["payload"]["premise"] == TRICKY[1] and by_id["t1\\x"]["group"] == "g\t1"
    assert by_id["t0\\x"]["author_id"] == author.pk and by_id["t1\\x"]["author_id"] is None
    # Rows without a group are grouped by their premise; a premise shared means a group shared.
    assert by_id["t0\\x"]["derived_group"].startswith("premise:")
    assert by_id["t0\\x"]["derived_group"] == by_id["same-premise"]["derived_group"]
    assert by_id["t1\\x"]["derived_group"] == ""  # the file's group wins
    assert [row["position"] for row in copied] == list(range(1, len(records) + 1))
    assert {row["status"] for row in copied} == {"open"} and {row["round"] for row in copied} == {1}
    assert all(row["computed"] == {} and row["flags"] == [] and row["in_sample"] for row in copied)
