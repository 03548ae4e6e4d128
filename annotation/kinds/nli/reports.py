"""The figures of an `nli_relabel` project for `GET /api/projects/{slug}/report/` and the
consensus dashboard (FarsTail §3): outcomes per round, how often the consensus changed the
intended label, the intended × consensus confusion, the stored alpha reports and live
agreement per annotator, in a bounded number of queries."""

from django.db.models import Count

from annotation.models import Item
from annotation.selectors.reports import agreement_reports_for_project, outcomes_per_round, per_annotator_for_project

from .labels import LABELS


def consensus_sections_for_project(project) -> dict:
    """The report's consensus sections, in the order the report gives them (the alpha
    reports among them). Four queries."""
    rounds = outcomes_per_round(project)
    return {
        "outcomes_per_round": rounds,
        "label_changed": sum(row["label_changed"] for row in rounds),
        "confusion": confusion_for_project(project),
        "agreement": agreement_reports_for_project(project),
        "per_annotator": per_annotator_for_project(project),
    }


def confusion_for_project(project) -> dict:
    """Intended (reference) label × consensus gold over accepted items, every cell of the
    3 × 3 NLI matrix present (zeros included); labels outside the three go to extra rows
    or columns. Accepted items without an intended label are counted apart."""
    rows = (
        Item.objects.filter(project=project, status=Item.Status.ACCEPTED)
        .order_by()
        .values_list("reference_label", "gold_label")
        .annotate(n=Count("pk"))
    )
    cells: dict[tuple[str, str], int] = {}
    without_intended = 0
    for intended, gold, n in rows:
        if not intended:
            without_intended += n
            continue
        cells[(intended, gold)] = cells.get((intended, gold), 0) + n
    labels = list(LABELS) + sorted({x for pair in cells for x in pair} - set(LABELS))
    matrix = [[cells.get((intended, gold), 0) for gold in labels] for intended in labels]
    return {
        "labels": labels,
        "rows": "intended",
        "columns": "consensus",
        "matrix": matrix,
        "total": sum(map(sum, matrix)),
        "agree": sum(matrix[i][i] for i in range(len(labels))),
        "without_intended": without_intended,
    }
