import django.db.models.deletion
from django.db import migrations, models

# The first groups the item browser offers are read in Python's (code point) order: on
# PostgreSQL the "C" collation, which this index keeps; SQLite's default order is that one.
CODE_POINT_INDEX = (
    'CREATE INDEX item_value_count_code_point ON annotation_itemvaluecount (project_id, name, value COLLATE "C")'
)


def code_point_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CODE_POINT_INDEX)


def no_code_point_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS item_value_count_code_point")


def reasons_to_rows(apps, schema_editor):
    """The reasons a large project's last run stored as one figure become a row per item."""
    ProjectFigures = apps.get_model("annotation", "ProjectFigures")
    AdjudicationReason = apps.get_model("annotation", "AdjudicationReason")
    for figure in ProjectFigures.objects.filter(name="adjudication_reasons").iterator():
        AdjudicationReason.objects.bulk_create(
            [
                AdjudicationReason(project_id=figure.project_id, item_id=int(item_id), reasons=why)
                for item_id, why in (figure.value or {}).items()
                if why
            ],
            batch_size=5000,
        )
    ProjectFigures.objects.filter(name="adjudication_reasons").delete()


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0027_item_figures_disagree"),
    ]

    operations = [
        migrations.CreateModel(
            name="AdjudicationReason",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("item_id", models.BigIntegerField()),
                ("reasons", models.JSONField()),
                (
                    "project",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="adjudication_reasons",
                        to="annotation.project",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("project", "item_id"), name="adjudication_reason_unique_item")
                ],
            },
        ),
        migrations.CreateModel(
            name="ItemValueCount",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("name", models.CharField(max_length=8)),
                ("value", models.TextField()),
                ("items", models.PositiveIntegerField()),
                (
                    "project",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="item_value_counts",
                        to="annotation.project",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("project", "name", "value"), name="item_value_count_unique")
                ],
            },
        ),
        migrations.RunPython(code_point_index, no_code_point_index),
        migrations.RunPython(reasons_to_rows, migrations.RunPython.noop),
    ]
