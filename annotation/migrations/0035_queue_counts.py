from django.db import migrations, models

# The adjudication queue of an adjudicator who does not supervise, kept by PostgreSQL
# (annotation.models.QueueCount, AdjudicationReason.waiting and .voters).
#
# A stored reason's row keeps its item's state: `waiting` (the item exists, its status is
# not open, no adjudication in its round) and `voters` (its round's annotators). Each change
# to one of those — an item's status or round, an adjudication, a vote, an item deleted —
# recomputes the rows of the items it touched, and a reason's row is computed as it is
# inserted. The counts are then appended from the rows' own old and new states alone.
#
# Exact under concurrent changes: whoever recomputes a row reads the item's votes and
# adjudications in a statement that starts after it locked what the others hold while they
# write, so that the last one to commit read every change committed before it:
# - a change to a vote or an adjudication first holds its item's key lock (FOR KEY SHARE;
#   Django's foreign keys are checked only at commit), an item's update its row;
# - then the item's reason row is locked (FOR UPDATE) before it is recomputed: changes that
#   do not exclude one another on the item (a status change and a vote) wait for one another
#   there;
# - a reason's row being inserted (the figures run, for an item entering the queue) locks
#   its item FOR UPDATE, which waits for both of those and makes them wait: until it commits
#   nobody else can see the row to recompute it.
TRIGGERS = """
CREATE FUNCTION annotation_queue_refresh(item_ids bigint[], lock_items boolean) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF lock_items THEN
        PERFORM 1 FROM annotation_item WHERE id = ANY(item_ids) ORDER BY id FOR KEY SHARE;
    END IF;
    PERFORM 1 FROM annotation_item i
        JOIN annotation_adjudicationreason r ON r.project_id = i.project_id AND r.item_id = i.id
        WHERE i.id = ANY(item_ids) ORDER BY r.id FOR UPDATE OF r;
    UPDATE annotation_adjudicationreason r SET waiting = s.waiting, voters = s.voters
    FROM (
        SELECT reason.id,
               i.status <> 'open' AND NOT EXISTS (
                   SELECT 1 FROM annotation_adjudication a WHERE a.item_id = i.id AND a.round = i.round
               ) AS waiting,
               COALESCE((
                   SELECT jsonb_agg(v.annotator_id ORDER BY v.annotator_id) FROM annotation_annotation v
                   WHERE v.item_id = i.id AND v.round = i.round
               ), '[]'::jsonb) AS voters
        FROM annotation_item i
        JOIN annotation_adjudicationreason reason ON reason.project_id = i.project_id AND reason.item_id = i.id
        WHERE i.id = ANY(item_ids)
    ) s
    WHERE r.id = s.id AND (r.waiting IS DISTINCT FROM s.waiting OR r.voters IS DISTINCT FROM s.voters);
END $$;

-- Votes and adjudications, per statement (an import or a deletion recomputes each item once).
CREATE FUNCTION annotation_queue_votes_statement() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM annotation_queue_refresh(ARRAY(SELECT DISTINCT item_id FROM changed_rows), true);
    ELSE
        PERFORM annotation_queue_refresh(ARRAY(SELECT DISTINCT item_id FROM gone_rows), true);
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION annotation_queue_votes_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM annotation_queue_refresh(ARRAY[OLD.item_id, NEW.item_id], true);
    RETURN NULL;
END $$;

CREATE FUNCTION annotation_queue_item_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM annotation_queue_refresh(ARRAY[NEW.id], false);
    RETURN NULL;
END $$;

CREATE FUNCTION annotation_queue_items_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM annotation_adjudicationreason r USING gone_rows o
    WHERE r.project_id = o.project_id AND r.item_id = o.id;
    RETURN NULL;
END $$;

CREATE FUNCTION annotation_queue_reason_insert() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    item_status text;
    item_round integer;
BEGIN
    SELECT status, round INTO item_status, item_round FROM annotation_item
    WHERE id = NEW.item_id AND project_id = NEW.project_id FOR UPDATE;
    IF NOT FOUND THEN
        NEW.waiting := false;
        NEW.voters := '[]'::jsonb;
        RETURN NEW;
    END IF;
    NEW.waiting := item_status <> 'open' AND NOT EXISTS (
        SELECT 1 FROM annotation_adjudication WHERE item_id = NEW.item_id AND round = item_round
    );
    NEW.voters := COALESCE((
        SELECT jsonb_agg(annotator_id ORDER BY annotator_id) FROM annotation_annotation
        WHERE item_id = NEW.item_id AND round = item_round
    ), '[]'::jsonb);
    RETURN NEW;
END $$;

"""


def _counted(rows: str, sign: int) -> str:
    """What the reasons' rows of transition table `rows` count, each `sign` times: a waiting
    row 1 for every adjudicator (annotator 0) and 1 for each of its voters."""
    return f"""
            SELECT project_id, 0::bigint AS annotator_id, {sign} AS n FROM {rows} WHERE waiting
            UNION ALL
            SELECT project_id, voter::bigint, {sign} FROM {rows}, jsonb_array_elements_text(voters) AS voter
            WHERE waiting"""


def _appended(counted: str) -> str:
    return f"""
        INSERT INTO annotation_queuecount (project_id, annotator_id, items)
        SELECT project_id, annotator_id, sum(n) FROM ({counted}
        ) change GROUP BY 1, 2 HAVING sum(n) <> 0;"""


UNION = """
            UNION ALL"""

# The counts, from the reasons' rows alone (an update appends the difference). A statement's
# transition tables are those of its event only, so each event reads its own.
COUNTS = f"""
CREATE FUNCTION annotation_queue_counts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN{_appended(_counted("changed_rows", 1))}
    ELSIF TG_OP = 'DELETE' THEN{_appended(_counted("gone_rows", -1))}
    ELSE{_appended(_counted("changed_rows", 1) + UNION + _counted("gone_rows", -1))}
    END IF;
    RETURN NULL;
END $$;
"""

ATTACH = """
CREATE TRIGGER annotation_queue_votes_insert AFTER INSERT ON annotation_annotation
    REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION annotation_queue_votes_statement();
CREATE TRIGGER annotation_queue_votes_delete AFTER DELETE ON annotation_annotation
    REFERENCING OLD TABLE AS gone_rows FOR EACH STATEMENT EXECUTE FUNCTION annotation_queue_votes_statement();
CREATE TRIGGER annotation_queue_votes_update AFTER UPDATE OF item_id, round, annotator_id ON annotation_annotation
    FOR EACH ROW WHEN (OLD.item_id IS DISTINCT FROM NEW.item_id OR OLD.round IS DISTINCT FROM NEW.round
                       OR OLD.annotator_id IS DISTINCT FROM NEW.annotator_id)
    EXECUTE FUNCTION annotation_queue_votes_row();

CREATE TRIGGER annotation_queue_adjudications_insert AFTER INSERT ON annotation_adjudication
    REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION annotation_queue_votes_statement();
CREATE TRIGGER annotation_queue_adjudications_delete AFTER DELETE ON annotation_adjudication
    REFERENCING OLD TABLE AS gone_rows FOR EACH STATEMENT EXECUTE FUNCTION annotation_queue_votes_statement();
CREATE TRIGGER annotation_queue_adjudications_update AFTER UPDATE OF item_id, round ON annotation_adjudication
    FOR EACH ROW WHEN (OLD.item_id IS DISTINCT FROM NEW.item_id OR OLD.round IS DISTINCT FROM NEW.round)
    EXECUTE FUNCTION annotation_queue_votes_row();

-- An item's status opened or closed, or its round changed (a reopen, a revision); the
-- engine's other updates of an item call nothing.
CREATE TRIGGER annotation_queue_item_update AFTER UPDATE OF status, round ON annotation_item
    FOR EACH ROW WHEN ((OLD.status = 'open') IS DISTINCT FROM (NEW.status = 'open')
                       OR OLD.round IS DISTINCT FROM NEW.round)
    EXECUTE FUNCTION annotation_queue_item_row();
CREATE TRIGGER annotation_queue_items_delete AFTER DELETE ON annotation_item
    REFERENCING OLD TABLE AS gone_rows FOR EACH STATEMENT EXECUTE FUNCTION annotation_queue_items_deleted();

CREATE TRIGGER annotation_queue_reason_fill BEFORE INSERT ON annotation_adjudicationreason
    FOR EACH ROW EXECUTE FUNCTION annotation_queue_reason_insert();
CREATE TRIGGER annotation_queue_counts_insert AFTER INSERT ON annotation_adjudicationreason
    REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION annotation_queue_counts();
CREATE TRIGGER annotation_queue_counts_update AFTER UPDATE ON annotation_adjudicationreason
    REFERENCING OLD TABLE AS gone_rows NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION annotation_queue_counts();
CREATE TRIGGER annotation_queue_counts_delete AFTER DELETE ON annotation_adjudicationreason
    REFERENCING OLD TABLE AS gone_rows FOR EACH STATEMENT EXECUTE FUNCTION annotation_queue_counts();
"""

# After the triggers (their creation locks the tables against writes until this migration
# commits): the rows stored before are computed as an insert computes them, which appends
# their counts.
FILL = """
UPDATE annotation_adjudicationreason r SET waiting = i.status <> 'open' AND NOT EXISTS (
        SELECT 1 FROM annotation_adjudication a WHERE a.item_id = i.id AND a.round = i.round
    ),
    voters = COALESCE((
        SELECT jsonb_agg(v.annotator_id ORDER BY v.annotator_id) FROM annotation_annotation v
        WHERE v.item_id = i.id AND v.round = i.round
    ), '[]'::jsonb)
FROM annotation_item i WHERE i.project_id = r.project_id AND i.id = r.item_id
"""

DROP = """
DROP TRIGGER IF EXISTS annotation_queue_votes_insert ON annotation_annotation;
DROP TRIGGER IF EXISTS annotation_queue_votes_delete ON annotation_annotation;
DROP TRIGGER IF EXISTS annotation_queue_votes_update ON annotation_annotation;
DROP TRIGGER IF EXISTS annotation_queue_adjudications_insert ON annotation_adjudication;
DROP TRIGGER IF EXISTS annotation_queue_adjudications_delete ON annotation_adjudication;
DROP TRIGGER IF EXISTS annotation_queue_adjudications_update ON annotation_adjudication;
DROP TRIGGER IF EXISTS annotation_queue_item_update ON annotation_item;
DROP TRIGGER IF EXISTS annotation_queue_items_delete ON annotation_item;
DROP TRIGGER IF EXISTS annotation_queue_reason_fill ON annotation_adjudicationreason;
DROP TRIGGER IF EXISTS annotation_queue_counts_insert ON annotation_adjudicationreason;
DROP TRIGGER IF EXISTS annotation_queue_counts_update ON annotation_adjudicationreason;
DROP TRIGGER IF EXISTS annotation_queue_counts_delete ON annotation_adjudicationreason;
DROP FUNCTION IF EXISTS annotation_queue_counts();
DROP FUNCTION IF EXISTS annotation_queue_reason_insert();
DROP FUNCTION IF EXISTS annotation_queue_items_deleted();
DROP FUNCTION IF EXISTS annotation_queue_item_row();
DROP FUNCTION IF EXISTS annotation_queue_votes_row();
DROP FUNCTION IF EXISTS annotation_queue_votes_statement();
DROP FUNCTION IF EXISTS annotation_queue_refresh(bigint[], boolean);
"""


def counts_kept(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(TRIGGERS)
        schema_editor.execute(COUNTS)
        schema_editor.execute(ATTACH)
        schema_editor.execute(FILL)


def counts_not_kept(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0034_queue_and_status_order"),
    ]

    operations = [
        migrations.AddField(
            model_name="adjudicationreason",
            name="waiting",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="adjudicationreason",
            name="voters",
            field=models.JSONField(default=list),
        ),
        migrations.CreateModel(
            name="QueueCount",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("project_id", models.BigIntegerField()),
                ("annotator_id", models.BigIntegerField()),
                ("items", models.BigIntegerField()),
            ],
            options={
                "indexes": [models.Index(fields=["project_id", "annotator_id"], name="queue_count_idx")],
            },
        ),
        migrations.RunPython(counts_kept, counts_not_kept),
    ]
