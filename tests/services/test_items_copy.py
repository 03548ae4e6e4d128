"""Imported items are written with COPY on PostgreSQL: text with the characters COPY's
text format escapes (backslash, TAB, LF, CR) and JSON come back exactly as in the file."""

import json

import pytest

pytestmark = pytest.mark.django_db

TRICKY = "a\\tb\\\\n\tc\nd\re \\N ש\u200f"


def test_copied_items_keep_their_text_exactly(nli_project, make_user):
    from annotation.models import Item
    from annotation.services.imports import items_import

    rows = [
        {
            "id": f"r{i}",
            "premise": TRICKY + str(i),
            "hypothesis": "h\\",
            "label": "neutral",
            "group": "g\t1",
            "extra_note": {"k": [1, None]},
        }
        for i in range(3)
    ]
    data = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()
    result = items_import(project=nli_project, data=data, fmt="jsonl", filename="t.jsonl")
    assert result.created == 3
    stored = {item.external_id: item for item in Item.objects.filter(project=nli_project)}
    for i in range(3):
        item = stored[f"r{i}"]
        assert item.payload["premise"] == TRICKY + str(i)
        assert item.payload["hypothesis"] == "h\\"
        assert item.group == "g\t1" and item.reference_label == "neutral" and item.status == "open" and item.round == 1
        assert item.in_sample is True and item.computed == {} and item.flags == [] and item.created_at is not None
    assert [item.position for item in sorted(stored.values(), key=lambda item: item.external_id)] == [1, 2, 3]
