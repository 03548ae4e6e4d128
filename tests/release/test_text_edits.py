"""FarsTail §3.2's spelling cleanup through HTTP: a supervisor edits the premise or the
hypothesis of an accepted item with a reason; the label stands, the old text is kept as a
revision, the near-duplicate search and the leak check compare the new text, exports carry
it, the audit log records it; bad input is a 400 naming the field and stores nothing."""

import json

import pytest

from tests.release.test_api import SLUG, import_file, jsonl, planted_rows, run, sup  # noqa: F401 (sup is a fixture)

pytestmark = pytest.mark.django_db
RLO = "\u202e"


def edit(client, item_id, **body):
    return client.post(f"/api/items/{item_id}/text/", body, format="json")


@pytest.fixture
def accepted(sup):
    from annotation.models import Item

    assert import_file(sup, "v.jsonl", jsonl(planted_rows()), fmt="jsonl", labels_final="true").status_code == 201
    return {item.external_id: item for item in Item.objects.all()}


def test_an_edit_keeps_the_label_and_the_checks_and_exports_read_the_new_text(sup, accepted):
    from annotation.models import AuditEntry, Decision, Item

    copy = accepted["copy"]
    assert (copy.status, run(sup, "duplicates")["pairs"]) == ("accepted", 1)
    decisions = Decision.objects.filter(item=copy).count()
    premise = "متنی دیگر\u200cبا نیم‌فاصله دربارهٔ موضوعی کاملاً متفاوت از همهٔ جمله‌های دیگر"
    response = edit(sup, copy.pk, changes={"premise": premise}, reason="املای متن")
    assert response.status_code == 201, response.content
    assert response.json()["details"] == {
        "fields": ["premise"], "before": {"premise": copy.payload["premise"]}, "after": {"premise": premise},
    }  # fmt: skip
    stored = Item.objects.get(pk=copy.pk)
    # Stored exactly as sent (the ZWNJ kept); status and gold untouched, no new decision.
    assert stored.payload["premise"] == premise and stored.payload["hypothesis"] == copy.payload["hypothesis"]
    assert (stored.status, stored.gold_label) == ("accepted", copy.gold_label)
    assert Decision.objects.filter(item=copy).count() == decisions
    # The near-duplicate search compares the new text: the copy is a copy no more.
    assert run(sup, "duplicates")["pairs"] == 0
    # The export carries it.
    exported = b"".join(sup.get(f"/api/projects/{SLUG}/export/?format=jsonl").streaming_content).decode()
    records = {r["id"]: r for r in map(json.loads, exported.splitlines())}
    assert records["copy"]["premise"] == premise and records["copy"]["gold_label"] == copy.gold_label
    # The history, and the audit log.
    history = sup.get(f"/api/items/{copy.pk}/revisions/").json()
    assert [(r["action"], r["by"], r["reason"]) for r in history] == [("edited", "sup", "املای متن")]
    entry = AuditEntry.objects.get(action="item_text_edit")
    assert entry.before == {"premise": copy.payload["premise"]} and entry.comment == "املای متن"
    # A second edit is a second revision; an edit that changes nothing is a 409.
    assert edit(sup, copy.pk, changes={"hypothesis": "فرضیه"}, reason="r").status_code == 201
    assert edit(sup, copy.pk, changes={"hypothesis": "فرضیه"}, reason="r").status_code == 409
    assert len(sup.get(f"/api/items/{copy.pk}/revisions/").json()) == 2


def test_the_leak_check_reads_the_edited_text(sup):
    from annotation.models import Item

    rows = planted_rows()
    for row in rows:
        row["split"] = "test" if row["id"] == "copy" else "train"
    assert import_file(sup, "v.jsonl", jsonl(rows), fmt="jsonl", labels_final="true").status_code == 201
    run(sup, "leaks", {"threshold": 0.8})
    assert sup.get(f"/api/projects/{SLUG}/leaks/").json()["count"] == 3
    copy = Item.objects.get(external_id="copy")
    changes = {"premise": "جمله‌ای تازه و بی‌ربط", "hypothesis": "فرضیه‌ای تازه و بی‌ربط"}
    assert edit(sup, copy.pk, changes=changes, reason="cleanup").status_code == 201
    run(sup, "leaks", {"threshold": 0.8})
    assert sup.get(f"/api/projects/{SLUG}/leaks/").json()["count"] == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"changes": {"premise": "x"}}, "reason"),
        ({"changes": {"premise": "x"}, "reason": "  "}, "reason"),
        ({"changes": {"premise": "x"}, "reason": 3}, "reason"),
        ({"changes": {"label": "e"}, "reason": "r"}, "changes.label"),
        ({"changes": {}, "reason": "r"}, "changes"),
        ({"changes": "premise", "reason": "r"}, "changes"),
        ({"changes": {"premise": ""}, "reason": "r"}, "changes.premise"),
        ({"changes": {"premise": 5}, "reason": "r"}, "changes.premise"),
        ({"changes": {"premise": "a\x00b"}, "reason": "r"}, "changes.premise"),
        ({"changes": {"premise": "x" * 20_001}, "reason": "r"}, "changes.premise"),
        ({"changes": {"hypothesis": f"متن {RLO}وارونه"}, "reason": "r"}, "changes.hypothesis"),
        ({"changes": {"premise": "x"}, "reason": "r", "gold_label": "e"}, "gold_label"),
    ],
)
def test_bad_edits_name_the_field_and_store_nothing(sup, accepted, body, field):
    from annotation.models import AuditEntry, Item, ItemRevision

    item = accepted["v1"]
    response = edit(sup, item.pk, **body)
    assert response.status_code == 400, response.content
    assert response.json()["errors"][0]["field"] == field
    assert ItemRevision.objects.count() == 0 and not AuditEntry.objects.filter(action="item_text_edit").exists()
    assert Item.objects.get(pk=item.pk).payload == item.payload


def test_who_may_edit_and_which_items(sup, accepted, client_for, django_user_model, make_user):
    from annotation.models import Item
    from annotation.services.projects import project_create

    body = {"changes": {"premise": "متن تازه"}, "reason": "املا"}
    rev = client_for(django_user_model.objects.get(username="rev"))
    ann = client_for(django_user_model.objects.get(username="ann1"))
    item = accepted["v2"]
    assert edit(rev, item.pk, **body).status_code == 403
    assert edit(ann, item.pk, **body).status_code == 403
    assert rev.get(f"/api/items/{item.pk}/revisions/").status_code == 200
    # Only an accepted item: one still being labeled is a 409.
    assert (
        import_file(sup, "o.jsonl", jsonl([{"id": "o1", "premise": "پ", "hypothesis": "ف"}]), fmt="jsonl").status_code
        == 201
    )
    open_item = Item.objects.get(external_id="o1")
    refused = edit(sup, open_item.pk, **body)
    assert refused.status_code == 409 and refused.json()["errors"][0]["field"] == "status"
    # A kind that names no editable text refuses the edit, naming the kind.
    root = django_user_model.objects.get(username="root")
    project_create(actor=root, slug="heq-x", name="HeQ", kind="qa_authoring", language="he")
    other = client_for(root)
    other.post(
        "/api/projects/heq-x/import/",
        {"file": _upload(jsonl([{"id": "p", "context": "פסקה קצרה", "title": "t"}])), "format": "jsonl"},
        format="multipart",
    )
    paragraph = Item.objects.get(project__slug="heq-x")
    refused = edit(other, paragraph.pk, **body)
    assert refused.status_code == 400 and refused.json()["errors"][0]["field"] == "kind"


def _upload(data: str):
    import io

    handle = io.BytesIO(data.encode())
    handle.name = "p.jsonl"
    return handle
