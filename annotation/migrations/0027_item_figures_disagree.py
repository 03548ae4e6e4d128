from django.db import migrations, models

DISAGREE = models.Index(
    condition=models.Q(("value__contains", {"x": 1})), fields=["project"], name="item_figures_disagree"
)


def add_on_postgresql(apps, schema_editor):
    # A JSON containment condition: PostgreSQL's alone. On the embedded SQLite default the
    # index is left out; the comparison it serves then reads the project's few shares.
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.add_index(apps.get_model("annotation", "ItemFigures"), DISAGREE)


def remove_on_postgresql(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.remove_index(apps.get_model("annotation", "ItemFigures"), DISAGREE)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0026_item_text_revisions"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.AddIndex(model_name="itemfigures", index=DISAGREE)],
            database_operations=[migrations.RunPython(add_on_postgresql, remove_on_postgresql)],
        ),
    ]
