"""The kept counts of items per status (annotation.models.ItemStatusCount): PostgreSQL's
triggers append a row per change, and the periodic sweep folds each (project, status,
probe)'s rows into one, so that a read sums a few rows however busy the project was."""

from django.db import connection

# Rows of counts held by more than one row: summed into one (rows of a deleted project, or
# summing to zero, are dropped). Rows appended by a transaction still open are not seen by
# the DELETE and stay as they are; two sweeps at once delete each row once.
FOLD = """
WITH folded AS (
    DELETE FROM annotation_itemstatuscount
    WHERE (project_id, status, probe) IN (
        SELECT project_id, status, probe FROM annotation_itemstatuscount
        GROUP BY 1, 2, 3 HAVING count(*) > 1 OR sum(items) = 0
    ) OR project_id NOT IN (SELECT id FROM annotation_project)
    RETURNING project_id, status, probe, items
)
INSERT INTO annotation_itemstatuscount (project_id, status, probe, items)
SELECT project_id, status, probe, sum(items) FROM folded
WHERE project_id IN (SELECT id FROM annotation_project)
GROUP BY 1, 2, 3 HAVING sum(items) <> 0
"""


def item_counts_fold() -> int:
    """Periodic (the jobs' sweep): fold the appended counts; how many rows were written."""
    if connection.vendor != "postgresql":
        return 0  # not kept there (the model's docstring)
    with connection.cursor() as cursor:
        cursor.execute(FOLD)
        return cursor.rowcount
