"""Items the back-translation filter scored before it stored the holders of each shared
instance (`computed["back_translation_holders"]`) get them from their stored scores and
texts, as the filter's run stores them (kinds/translation/back_translation.py
`_instance_holders`): the report, now kept item by item, counts a premise shared by
several items once, as it did when it read every item's texts. Written out here, not
imported, so that the migration keeps meaning what it meant when the code moves on."""

import json

from django.db import migrations

HOLDERS = "back_translation_holders"
PARTS = ("premise", "hypothesis")
CHUNK = 2000


def _instances(payload: dict, record: dict):
    """(candidate index, part, system, source text, back-translation) of each instance the
    record holds a score of."""
    source = payload.get("source") or {}
    candidates = payload.get("candidates") or []
    for index, row in enumerate(record.get("candidates") or []):
        if index >= len(candidates) or not isinstance(row, dict):
            continue
        back = candidates[index].get("back_translation")
        if not isinstance(back, dict):
            continue
        for part in PARTS:
            if row.get(part) is not None and isinstance(back.get(part), str) and isinstance(source.get(part), str):
                yield index, part, candidates[index].get("system"), source[part], back[part]


def holders_from_scores(apps, schema_editor):
    Project = apps.get_model("annotation", "Project")
    Item = apps.get_model("annotation", "Item")
    for project_id in Project.objects.filter(kind="translation_rating").values_list("pk", flat=True).iterator():
        scored = Item.objects.filter(
            project_id=project_id, probe_of__isnull=True, computed__has_key="back_translation"
        ).exclude(computed__back_translation=None)
        if not scored.exclude(computed__has_key=HOLDERS).exists():
            continue
        places: dict[tuple, list[tuple[int, int]]] = {}
        for pk, payload, computed in scored.order_by("pk").values_list("pk", "payload", "computed").iterator(CHUNK):
            record = computed.get("back_translation")
            if isinstance(record, dict) and isinstance(payload, dict):
                for index, part, system, source, back in _instances(payload, record):
                    places.setdefault((json.dumps(system, sort_keys=True), part, source, back), []).append((pk, index))
        holders: dict[int, dict[str, dict[str, list[int]]]] = {}
        for (_system, part, _source, _back), held in places.items():
            if len(held) < 2:
                continue
            pks = sorted({pk for pk, _index in held})
            for pk, index in held:
                holders.setdefault(pk, {}).setdefault(str(index), {})[part] = pks
        # The ids first, then a chunk read and written at a time: no update while a read
        # of the same table is open (SQLite's results would be undefined).
        ids = list(scored.order_by("pk").values_list("pk", flat=True))
        for start in range(0, len(ids), CHUNK):
            batch = list(Item.objects.filter(pk__in=ids[start : start + CHUNK]).only("pk", "computed"))
            for item in batch:
                item.computed = {**item.computed, HOLDERS: holders.get(item.pk, {})}
            Item.objects.bulk_update(batch, ["computed"])


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0035_queue_counts"),
    ]

    operations = [
        migrations.RunPython(holders_from_scores, migrations.RunPython.noop, elidable=True),
    ]
