"""The bias analysis's computed hard flags move from `computed["hard(...)"]` to
`computed["computed_hard(...)"]`, apart from the `hard(...)` columns a file brings."""

from django.db import migrations
from django.db.models import Q

COLUMNS = ("hard(hypothesis)", "hard(overlap)")


def rename(apps, names: dict[str, str]):
    Item = apps.get_model("annotation", "Item")
    flagged = Q()
    for old in names:
        flagged |= Q(computed__has_key=old)
    batch = []
    for item in Item.objects.filter(flagged).only("id", "computed").iterator(chunk_size=2000):
        item.computed = {names.get(key, key): value for key, value in item.computed.items()}
        batch.append(item)
        if len(batch) >= 1000:
            Item.objects.bulk_update(batch, ["computed"])
            batch = []
    Item.objects.bulk_update(batch, ["computed"])


def forwards(apps, schema_editor):
    rename(apps, {column: f"computed_{column}" for column in COLUMNS})


def backwards(apps, schema_editor):
    rename(apps, {f"computed_{column}": column for column in COLUMNS})


class Migration(migrations.Migration):
    dependencies = [("annotation", "0023_question_audit")]

    operations = [migrations.RunPython(forwards, backwards)]
