"""The scorer of a project's kind (`Kind.evaluation_scorer`), and the one kinds with a closed
label set share (docs/api.md "Dataset release")."""

from __future__ import annotations

import numpy as np
from django.db.models import Q
from django.utils.translation import gettext as _

from annotation.errors import FieldError, InvalidInput
from annotation.kinds.base import EvaluationScorer
from annotation.kinds.registry import get_kind
from annotation.metrics import evaluation as metrics
from annotation.models import Item, Project
from annotation.wording import join_list


def scorer_for(project: Project) -> EvaluationScorer:
    scorer = get_kind(project.kind).evaluation_scorer()
    if scorer is None:
        raise InvalidInput(_("models cannot be evaluated on this kind of project"), field="kind")
    return scorer


class ClassificationScorer(EvaluationScorer):
    """A scorer for kinds whose gold is one label of a closed set (the NLI kinds, phrase
    pairs): gold from the items of the split, a prediction is one of the labels (the kind's
    `canonical` spelling), figures from metrics.classification_statistic. Subclasses add
    strata or figures of their own through `strata`, `more_arrays` and `more_statistics`."""

    primary = "accuracy"

    def __init__(self, labels: tuple[str, ...], canonical, gold_fields: tuple[str, ...] = ("gold_label",)):
        self.labels = tuple(labels)
        self.canonical = canonical
        # Item fields holding the gold, first non-empty one wins.
        self.gold_fields = tuple(gold_fields)

    # Item columns read with the gold, passed to `gold_extra`.
    gold_columns: tuple[str, ...] = ()

    def items(self, project, split: str | None):
        """The items scored: not removed, with a gold, of `split` (None: all)."""
        has_gold = Q()
        for field in self.gold_fields:
            has_gold |= ~Q(**{field: ""})
        items = Item.objects.filter(project=project).exclude(status=Item.Status.REMOVED).filter(has_gold)
        return items.filter(split=split) if split else items

    def gold(self, project, split: str | None) -> dict:
        index = {label: i for i, label in enumerate(self.labels)}
        out = {}
        width = len(self.gold_fields)
        rows = (
            self.items(project, split)
            .order_by("position", "id")
            .values_list("external_id", *self.gold_fields, *self.gold_columns)
        )
        for external_id, *columns in rows.iterator(chunk_size=5000):
            label = next((value for value in columns[:width] if value), "")
            if label in index:
                out[external_id] = (index[label], *self.gold_extra(*columns[width:]))
        return out

    def gold_extra(self, *columns) -> tuple:
        return ()

    # Distinct label spellings remembered (a file has a handful; a bad one may have many).
    MEMO_SIZE = 1024

    def label_of(self, value, field: str, row: int, required: bool = True) -> tuple[int | None, list[FieldError]]:
        if value is None and not required:
            return None, []
        if type(value) is str:
            memo = self.__dict__.setdefault("_memo", {})
            index = memo.get(value)
            if index is None:
                label = self.canonical(value)
                index = self.labels.index(label) if label in self.labels else -1
                if len(memo) < self.MEMO_SIZE:
                    memo[value] = index
            if index >= 0:
                return index, []
        label = self.canonical(value)
        if label not in self.labels:
            choices = join_list(self.labels)
            if value is None:
                message = _("must be one of %(choices)s; the value is missing") % {"choices": choices}
            elif isinstance(value, str):
                message = _("must be one of %(choices)s, not “%(value)s”") % {"choices": choices, "value": value}
            else:
                message = _("must be one of %(choices)s, not a %(type)s") % {
                    "choices": choices,
                    "type": type(value).__name__,
                }
            return None, [FieldError(field, message, row)]
        return self.labels.index(label), []

    def clean(self, record: dict, row: int):
        return self.label_of(record.get("prediction"), "prediction", row)

    def arrays(self, project, gold: dict, predictions: dict) -> dict:
        keys = list(gold)
        return {
            "gold": np.array([gold[key][0] for key in keys], dtype=np.int64),
            "predicted": np.array([self.prediction_label(predictions[key]) for key in keys], dtype=np.int64),
            **self.more_arrays(keys, gold, predictions),
        }

    def prediction_label(self, prediction) -> int:
        return prediction

    def more_arrays(self, keys: list, gold: dict, predictions: dict) -> dict:
        return {}

    def strata(self, arrays: dict) -> dict:
        return {}

    def more_statistics(self, arrays: dict) -> list:
        return []

    def statistic(self, arrays: dict):
        base = metrics.classification_statistic(arrays["gold"], arrays["predicted"], self.labels, self.strata(arrays))
        return metrics.combine(base, *self.more_statistics(arrays))

    def extras(self, arrays: dict) -> dict:
        point = metrics.classification_point(arrays["gold"], arrays["predicted"], self.labels)
        return {
            "confusion": {
                "labels": list(self.labels),
                "rows": "gold",
                "columns": "predicted",
                "matrix": point["confusion"],
            },
            "per_class": {label: {"support": figures["support"]} for label, figures in point["per_class"].items()},
        }
