from django.db import migrations, models
from django.db.models import OuterRef, Subquery, Value
from django.db.models.functions import Coalesce


def reasons_positions(apps, schema_editor):
    """The stored reasons take their items' positions (a deleted item's row, dropped by the
    next figures run, keeps 0)."""
    Item = apps.get_model("annotation", "Item")
    AdjudicationReason = apps.get_model("annotation", "AdjudicationReason")
    position = Item.objects.filter(pk=OuterRef("item_id")).values("position")[:1]
    AdjudicationReason.objects.update(position=Coalesce(Subquery(position), Value(0)))


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0033_item_project_probes_idx"),
    ]

    operations = [
        migrations.AddField(
            model_name="adjudicationreason",
            name="position",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.RunPython(reasons_positions, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name="adjudicationreason",
            index=models.Index(fields=["project", "position", "item_id"], name="adjudication_reason_order"),
        ),
        migrations.AddIndex(
            model_name="item",
            index=models.Index(fields=["project", "status", "position", "id"], name="item_status_order_idx"),
        ),
    ]
