from django.db import migrations, models

# The item table's changes to the counts of items per status, appended by PostgreSQL in
# the transaction that makes them (annotation.models.ItemStatusCount). Inserts and deletes
# are counted per statement from their transition tables (an import or a project's
# deletion appends a few rows, not one per item); a status change per row, and only when
# the status, the project or being a probe changed (the engine's other updates of an item,
# its priority or vote target, call nothing).
TRIGGERS = """
CREATE FUNCTION annotation_item_counts_statement() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO annotation_itemstatuscount (project_id, status, probe, items)
        SELECT project_id, status, probe_of_id IS NOT NULL, count(*) FROM new_items GROUP BY 1, 2, 3;
    ELSE
        INSERT INTO annotation_itemstatuscount (project_id, status, probe, items)
        SELECT project_id, status, probe_of_id IS NOT NULL, -count(*) FROM old_items GROUP BY 1, 2, 3;
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION annotation_item_counts_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO annotation_itemstatuscount (project_id, status, probe, items) VALUES
        (OLD.project_id, OLD.status, OLD.probe_of_id IS NOT NULL, -1),
        (NEW.project_id, NEW.status, NEW.probe_of_id IS NOT NULL, 1);
    RETURN NULL;
END $$;

CREATE TRIGGER annotation_item_counts_insert AFTER INSERT ON annotation_item
    REFERENCING NEW TABLE AS new_items FOR EACH STATEMENT EXECUTE FUNCTION annotation_item_counts_statement();
CREATE TRIGGER annotation_item_counts_delete AFTER DELETE ON annotation_item
    REFERENCING OLD TABLE AS old_items FOR EACH STATEMENT EXECUTE FUNCTION annotation_item_counts_statement();
CREATE TRIGGER annotation_item_counts_update AFTER UPDATE OF status, project_id, probe_of_id ON annotation_item
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.project_id IS DISTINCT FROM NEW.project_id
                       OR (OLD.probe_of_id IS NULL) IS DISTINCT FROM (NEW.probe_of_id IS NULL))
    EXECUTE FUNCTION annotation_item_counts_row();
"""

# After the triggers: creating them locks the table against writes until this migration
# commits, so the items counted here are all there are, and every later change is appended.
COUNT_EXISTING = """
INSERT INTO annotation_itemstatuscount (project_id, status, probe, items)
SELECT project_id, status, probe_of_id IS NOT NULL, count(*) FROM annotation_item GROUP BY 1, 2, 3
"""

DROP = """
DROP TRIGGER IF EXISTS annotation_item_counts_insert ON annotation_item;
DROP TRIGGER IF EXISTS annotation_item_counts_delete ON annotation_item;
DROP TRIGGER IF EXISTS annotation_item_counts_update ON annotation_item;
DROP FUNCTION IF EXISTS annotation_item_counts_statement();
DROP FUNCTION IF EXISTS annotation_item_counts_row();
"""


def counts_kept(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(TRIGGERS)
        schema_editor.execute(COUNT_EXISTING)


def counts_not_kept(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0031_item_figures_disagree_position"),
    ]

    operations = [
        migrations.CreateModel(
            name="ItemStatusCount",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("project_id", models.BigIntegerField()),
                ("status", models.CharField(max_length=16)),
                ("probe", models.BooleanField()),
                ("items", models.BigIntegerField()),
            ],
            options={
                "indexes": [models.Index(fields=["project_id", "status", "probe"], name="item_status_count_idx")],
            },
        ),
        migrations.RunPython(counts_kept, counts_not_kept),
    ]
