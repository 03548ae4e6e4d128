"""LCHAIM Table 2 for `label_test` projects: how well each annotator, and the group of
annotators, recover the hidden gold label (LCHAIM §3.2 "Additional Experiments" and
Table 2: accuracy, F1, and per-class precision / recall / F1).

Definitions (scikit-learn does the arithmetic):

* Gold: `Item.reference_label` (hidden from annotators). Items without one are ignored.
  Only each item's current round counts.
* Per annotator: every item they labeled. `accuracy` = share of their labels equal to the
  gold; per class `precision`, `recall`, `f1` and `support` (gold count) from
  `precision_recall_fscore_support(labels=LABELS, zero_division=0)`; `f1` overall is the
  macro average over the three classes (Table 2's "F1").
* Group: per item, the label most of its annotators gave. When the top labels tie (1-1 of
  2 annotators, 1-1-1 of 3 …) the group has no answer for that item: it counts as wrong for
  accuracy and for the gold class's recall, and as no prediction for any class's
  precision. `ties` says how many items that was.

Reads: two queries, whatever the number of items or annotators.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from django.db.models import F
from django.db.models.fields.json import KT

from annotation.kinds.nli.labels import LABELS
from annotation.models import Annotation, Item

NO_ANSWER = "(tie)"


def scores(y_true: list[str], y_pred: list[str]) -> dict:
    """Accuracy, macro F1 and per-class P/R/F1 over the three NLI labels."""
    from sklearn.metrics import accuracy_score, precision_recall_fscore_support

    if not y_true:
        return {"n": 0, "accuracy": None, "f1": None, "per_class": {}}
    precision, recall, f1, support = precision_recall_fscore_support(
        y_true, y_pred, labels=list(LABELS), zero_division=0
    )
    per_class = {
        label: {"precision": float(p), "recall": float(r), "f1": float(f), "support": int(s)}
        for label, p, r, f, s in zip(LABELS, precision, recall, f1, support)
    }
    return {
        "n": len(y_true),
        "accuracy": float(accuracy_score(y_true, y_pred)),
        "f1": float(f1.mean()),
        "per_class": per_class,
    }


def label_test_results_for_project(project) -> dict:
    gold = dict(
        Item.objects.filter(project=project, probe_of__isnull=True)
        .exclude(reference_label="")
        .values_list("pk", "reference_label")
    )
    rows = (
        Annotation.objects.filter(item__project=project, round=F("item__round"))
        .annotate(label=KT("value__label"))
        .order_by("item_id", "id")
        .values_list("item_id", "annotator__username", "label")
    )
    per_annotator: dict[str, tuple[list, list]] = defaultdict(lambda: ([], []))
    per_item: dict[int, list[str]] = defaultdict(list)
    for item_id, username, label in rows:
        if item_id not in gold or not label:
            continue
        truth, pred = per_annotator[username]
        truth.append(gold[item_id])
        pred.append(label)
        per_item[item_id].append(label)
    group_true, group_pred, ties = [], [], 0
    for item_id in sorted(per_item):
        counts = Counter(per_item[item_id]).most_common()
        if len(counts) > 1 and counts[0][1] == counts[1][1]:
            ties += 1
            answer = NO_ANSWER
        else:
            answer = counts[0][0]
        group_true.append(gold[item_id])
        group_pred.append(answer)
    group = scores(group_true, group_pred)
    group["ties"] = ties
    return {
        "labels": list(LABELS),
        "items_with_gold": len(gold),
        "annotators": [{"annotator": name, **scores(*per_annotator[name])} for name in sorted(per_annotator)],
        "group": group,
    }


TABLE2_CLASS_FIELDS = ("precision", "recall", "f1")


def table2_csv_rows(results: dict) -> list[list]:
    """Table 2 as CSV rows: who, n, accuracy, F1, then P/R/F1 per class (fractions 0-1)."""
    header = ["annotator", "n", "accuracy", "f1"] + [f"{label}_{field}" for label in results["labels"] for field in TABLE2_CLASS_FIELDS]
    out = [header]
    for name, row in [*((r["annotator"], r) for r in results["annotators"]), ("(group)", results["group"])]:
        line = [name, row["n"], row["accuracy"], row["f1"]]
        for label in results["labels"]:
            cell = row["per_class"].get(label, {})
            line += [cell.get(field) for field in TABLE2_CLASS_FIELDS]
        out.append(line)
    return out
