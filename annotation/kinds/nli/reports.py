"""The figures of an `nli_relabel` project for `GET /api/projects/{slug}/report/` and the
consensus dashboard (FarsTail §3): outcomes per round, how often the consensus changed the
intended label, the intended × consensus confusion, the stored alpha reports and live
agreement per annotator, in a bounded number of queries."""

from collections import defaultdict

from django.contrib.auth import get_user_model
from django.db.models import Count
from django.db.models.fields.json import KT

from annotation.models import Annotation, ConsensusOutcome, Item
from annotation.selectors.reports import agreement_reports_for_project, outcomes_per_round, per_annotator_for_project
from annotation.sql import column_in

from .labels import LABELS

# Keys of the kept counts (consensus_counts): "<round>\t<figure>", "<intended>\t<gold>",
# "<annotator id>\t<figure>".
SEPARATOR = "\t"


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
    return _confusion(
        Item.objects.filter(project=project, status=Item.Status.ACCEPTED)
        .order_by()
        .values_list("reference_label", "gold_label")
        .annotate(n=Count("pk"))
    )


def _confusion(rows) -> dict:
    """`confusion_for_project` from (intended, gold, items) rows."""
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


# The same sections kept up to date item by item on the worker (NliRelabelKind.report_counts,
# services.figures): each item's share of three counters, the sections computed from their
# sums over the project's items — the numbers the queries above give.
def consensus_counts(project, item_ids: list[int]) -> dict[int, dict[str, dict[str, int]]]:
    """{item id: {"outcomes": {"<round>\t<figure>": n}, "confusion": {"<intended>\t<gold>": 1},
    "per_annotator": {"<annotator id>\t<figure>": n}}} of the items: their outcomes per
    round, their cell of the confusion while accepted, and their votes in an accepted round
    counted against that round's gold. Three queries, whatever the number of ids."""
    shares: dict[int, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(dict))

    def add(item_id: int, counter: str, key: str) -> None:
        keys = shares[item_id][counter]
        keys[key] = keys.get(key, 0) + 1

    accepted_gold: dict[tuple[int, int], str] = {}
    for item_id, round_, outcome, gold, label_changed in ConsensusOutcome.objects.filter(
        column_in(ConsensusOutcome, "item_id", item_ids)
    ).values_list("item_id", "round", "outcome", "gold", "label_changed"):
        add(item_id, "outcomes", f"{round_}{SEPARATOR}rows")
        if outcome in (ConsensusOutcome.Outcome.ACCEPTED, ConsensusOutcome.Outcome.FAILED):
            add(item_id, "outcomes", f"{round_}{SEPARATOR}{outcome}")
        if outcome == ConsensusOutcome.Outcome.ACCEPTED:
            accepted_gold[(item_id, round_)] = gold
            if label_changed:
                add(item_id, "outcomes", f"{round_}{SEPARATOR}label_changed")
    for item_id, intended, gold in Item.objects.filter(
        column_in(Item, "id", item_ids), project=project, status=Item.Status.ACCEPTED
    ).values_list("pk", "reference_label", "gold_label"):
        add(item_id, "confusion", f"{intended}{SEPARATOR}{gold}")
    if accepted_gold:
        # The label as text, as per_annotator_for_project compares it.
        for item_id, annotator_id, round_, label in (
            Annotation.objects.filter(column_in(Annotation, "item_id", sorted({i for i, _r in accepted_gold})))
            .annotate(label=KT("value__label"))
            .order_by()
            .values_list("item_id", "annotator_id", "round", "label")
        ):
            round_gold = accepted_gold.get((item_id, round_))
            if round_gold is None:
                continue
            add(item_id, "per_annotator", f"{annotator_id}{SEPARATOR}total")
            if label == round_gold:
                add(item_id, "per_annotator", f"{annotator_id}{SEPARATOR}agree")
    return {item_id: {name: dict(keys) for name, keys in share.items()} for item_id, share in shares.items()}


def consensus_sections_from_counts(counts: dict[str, dict[str, int]]) -> dict:
    """`consensus_sections_for_project` from the items' `consensus_counts` summed, the alpha
    reports left as None (read live). One query, the annotators' usernames."""
    rounds: dict[int, dict[str, int]] = defaultdict(dict)
    for key, n in counts.get("outcomes", {}).items():
        round_, figure = key.split(SEPARATOR)
        rounds[int(round_)][figure] = n
    per_round = [
        {"round": round_, **{figure: figures.get(figure, 0) for figure in ("accepted", "failed", "label_changed")}}
        for round_, figures in sorted(rounds.items())
    ]
    cells = [(*key.split(SEPARATOR, 1), n) for key, n in counts.get("confusion", {}).items()]
    people: dict[int, dict[str, int]] = defaultdict(dict)
    for key, n in counts.get("per_annotator", {}).items():
        annotator, figure = key.split(SEPARATOR)
        people[int(annotator)][figure] = n
    # Ordered by username as the database orders them (its collation), as the live query.
    names = (
        get_user_model().objects.filter(pk__in=sorted(people)).order_by("username").values_list("pk", "username")
        if people
        else []
    )
    per_annotator = []
    for pk, username in names:
        total, agree = people[pk].get("total", 0), people[pk].get("agree", 0)
        per_annotator.append(
            {"annotator": username, "agree": agree, "total": total, "rate": agree / total if total else None}
        )
    return {
        "outcomes_per_round": per_round,
        "label_changed": sum(row["label_changed"] for row in per_round),
        "confusion": _confusion(cells),
        "agreement": None,
        "per_annotator": per_annotator,
    }
