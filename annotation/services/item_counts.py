"""The kept counts of items per status (annotation.models.ItemStatusCount) and of the
adjudication queue per adjudicator (QueueCount): PostgreSQL's triggers append a row per
change, and the periodic sweep folds each count's rows into one, so that a read sums a few
rows however busy the project was."""

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


# The same for the queue's counts, by (project, annotator).
QUEUE_FOLD = """
WITH folded AS (
    DELETE FROM annotation_queuecount
    WHERE (project_id, annotator_id) IN (
        SELECT project_id, annotator_id FROM annotation_queuecount
        GROUP BY 1, 2 HAVING count(*) > 1 OR sum(items) = 0
    ) OR project_id NOT IN (SELECT id FROM annotation_project)
    RETURNING project_id, annotator_id, items
)
INSERT INTO annotation_queuecount (project_id, annotator_id, items)
SELECT project_id, annotator_id, sum(items) FROM folded
WHERE project_id IN (SELECT id FROM annotation_project)
GROUP BY 1, 2 HAVING sum(items) <> 0
"""


def item_counts_fold() -> int:
    """Periodic (the jobs' sweep): fold the appended counts; how many rows were written."""
    if connection.vendor != "postgresql":
        return 0  # not kept there (the models' docstrings)
    written = 0
    with connection.cursor() as cursor:
        for fold in (FOLD, QUEUE_FOLD):
            cursor.execute(fold)
            written += cursor.rowcount
    return written
