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
* Group (Table 2's "Human (Hebrew)" row: "four educated testees" who each labeled all 200
  items, reported as their *mean* accuracy and F1): the unweighted mean over annotators of
  each annotator's own accuracy, macro F1 and per-class P/R/F1. `testers` is how many
  annotators that is, `n` the items any of them labeled, per-class `support` the gold count
  over those items.
* Majority (an extra line, not the paper's figure): per item, the label most of its
  annotators gave, scored like one annotator. When the top labels tie (1-1 of 2
  annotators, 1-1-1 of 3 …) it has no answer for that item: it counts as wrong for accuracy
  and for the gold class's recall, and as no prediction for any class's precision. `ties`
  says how many items that was.

Reads: two queries, whatever the number of items or annotators.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np
from django.db.models import F
from django.db.models.fields.json import KT

from annotation.kinds.base import item_slice_attributes
from annotation.kinds.nli.evaluation import pair_slice_attributes, pair_tokens
from annotation.kinds.nli.labels import LABELS
from annotation.metrics.evaluation import masked_means_statistic
from annotation.metrics.lexical import jaccard_by_class
from annotation.metrics.slices import slice_figures
from annotation.models import Annotation, Item

NO_ANSWER = "(tie)"
TABLE2_CLASS_FIELDS = ("precision", "recall", "f1")


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
    gold, payloads = {}, {}
    for pk, label, payload in (
        Item.objects.filter(project=project, probe_of__isnull=True)
        .exclude(reference_label="")
        .values_list("pk", "reference_label", "payload")
    ):
        gold[pk], payloads[pk] = label, payload
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
    annotators = [{"annotator": name, **scores(*per_annotator[name])} for name in sorted(per_annotator)]
    majority_true, majority_pred, ties = [], [], 0
    for item_id in sorted(per_item):
        counts = Counter(per_item[item_id]).most_common()
        if len(counts) > 1 and counts[0][1] == counts[1][1]:
            ties += 1
            answer = NO_ANSWER
        else:
            answer = counts[0][0]
        majority_true.append(gold[item_id])
        majority_pred.append(answer)
    majority = scores(majority_true, majority_pred)
    majority["ties"] = ties
    return {
        "labels": list(LABELS),
        "items_with_gold": len(gold),
        "annotators": annotators,
        "group": testers_mean(annotators, Counter(majority_true)),
        "majority": majority,
        "jaccard_by_class": pair_jaccard_by_class(gold, payloads),
        "slices": testers_by_slice(gold, payloads, per_item),
    }


def pair_jaccard_by_class(gold: dict, payloads: dict) -> dict:
    """LCHAIM §2: the mean Jaccard overlap of premise and hypothesis words per gold class."""
    pairs = [pair_tokens(payloads[pk]) for pk in gold]
    return jaccard_by_class([p for p, _ in pairs], [h for _, h in pairs], list(gold.values()))


def testers_by_slice(gold: dict, payloads: dict, per_item: dict) -> dict:
    """LCHAIM §5.1-5.2 for the human baseline: the testers' accuracy by TTR bin and by each
    field of the items' `extra` (ConTRoL's reasoning type), {attribute: {value: {"items",
    "accuracy", "ci"}}}. An item's accuracy is the share of its testers' labels equal to the
    gold; a slice's is their mean, with a seeded bootstrap interval over its items."""
    labelled = [pk for pk in sorted(per_item) if per_item[pk]]
    if not labelled:
        return {}
    right = np.array([sum(label == gold[pk] for label in per_item[pk]) / len(per_item[pk]) for pk in labelled])
    statistic = masked_means_statistic({"accuracy": right})
    attributes = [{**item_slice_attributes("", payloads[pk]), **pair_slice_attributes(payloads[pk])} for pk in labelled]
    names = sorted(set().union(*attributes) - {"split"})
    return {name: slice_figures(statistic, [row.get(name, "") for row in attributes], ["accuracy"]) for name in names}


def testers_mean(annotators: list[dict], gold_counts: Counter) -> dict:
    """The unweighted mean of the annotators' own figures (see the module docstring);
    `gold_counts` is the gold label count over the items any of them labeled."""
    k = len(annotators)

    def mean(values: list[float]) -> float | None:
        return sum(values) / k if k else None

    per_class = (
        {
            label: {
                **{field: mean([a["per_class"][label][field] for a in annotators]) for field in TABLE2_CLASS_FIELDS},
                "support": gold_counts.get(label, 0),
            }
            for label in LABELS
        }
        if k
        else {}
    )
    return {
        "testers": k,
        "n": sum(gold_counts.values()),
        "accuracy": mean([a["accuracy"] for a in annotators]),
        "f1": mean([a["f1"] for a in annotators]),
        "per_class": per_class,
    }


def table2_csv_rows(results: dict) -> list[list]:
    """Table 2 as CSV rows: who, n, accuracy, F1, then P/R/F1 per class (fractions 0-1);
    the testers one by one, then their mean (the paper's row), then the majority line."""
    header = ["annotator", "n", "accuracy", "f1"] + [
        f"{label}_{field}" for label in results["labels"] for field in TABLE2_CLASS_FIELDS
    ]
    out = [header]
    for name, row in [
        *((r["annotator"], r) for r in results["annotators"]),
        ("(mean of testers)", results["group"]),
        ("(majority)", results["majority"]),
    ]:
        line = [name, row["n"], row["accuracy"], row["f1"]]
        for label in results["labels"]:
            cell = row["per_class"].get(label, {})
            line += [cell.get(field) for field in TABLE2_CLASS_FIELDS]
        out.append(line)
    return out
