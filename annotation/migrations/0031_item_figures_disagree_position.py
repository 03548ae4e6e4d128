from django.db import migrations, models

# 0027's index, PostgreSQL's alone (a JSON containment condition): dropped there.
DISAGREE = models.Index(
    condition=models.Q(("value__contains", {"x": 1})), fields=["project"], name="item_figures_disagree"
)


def remove_on_postgresql(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.remove_index(apps.get_model("annotation", "ItemFigures"), DISAGREE)


def add_on_postgresql(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.add_index(apps.get_model("annotation", "ItemFigures"), DISAGREE)


class Migration(migrations.Migration):
    # The shares stored before this hold no position: the next figures run reads every
    # item anew (services.figures: the sums stored before it lack the report counts).
    dependencies = [
        ("annotation", "0030_review_queue_and_suggestion_indexes"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.RemoveIndex(model_name="itemfigures", name="item_figures_disagree")],
            database_operations=[migrations.RunPython(remove_on_postgresql, add_on_postgresql)],
        ),
        migrations.AddField(
            model_name="itemfigures",
            name="disagree_position",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddIndex(
            model_name="itemfigures",
            index=models.Index(
                condition=models.Q(("disagree_position__isnull", False)),
                fields=["project", "disagree_position", "item_id"],
                name="item_figures_disagree_order",
            ),
        ),
    ]
