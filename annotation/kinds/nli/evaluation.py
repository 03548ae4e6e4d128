"""Model evaluation of the NLI kinds (FarsTail §4.3, Table 5): accuracy, macro F1,
per-class P/R/F1 and the confusion matrix against the gold label, and the accuracy on the
easy and hard test items of each biased model.

An item's hard/easy flag of a biased model is the bias analysis's computed one
(`item.computed["hard(hypothesis)"]`, `["hard(overlap)"]`, booleans), else the column its
FarsTail file carried (payload extra `hard(...)`, "1"/"0"), else unknown: the item then
counts in neither subset. A subset is reported once some item of the split has a flag."""

from annotation.metrics.evaluation import stratum_codes
from annotation.release.evaluation_scorers import ClassificationScorer

from .formats import FARSTAIL_EXTRA_COLUMNS
from .labels import canonical_label

# The biased models of FarsTail §4.3, by the name of their flag column.
BIAS_FLAGS = FARSTAIL_EXTRA_COLUMNS
# (True and False are the keys 1 and 0 of a dict: JSON booleans read the same.)
_IMPORTED = {"1": True, "0": False, 1: True, 0: False}


def hard_flag(computed, extra, name: str) -> bool | None:
    """The item's flag for biased model `name`: computed first, else imported, else None.

    >>> hard_flag({"hard(overlap)": False}, {"hard(overlap)": "1"}, "hard(overlap)")
    False
    >>> hard_flag({}, {"hard(overlap)": "1"}, "hard(overlap)"), hard_flag(None, None, "hard(overlap)")
    (True, None)
    """
    value = computed.get(name) if isinstance(computed, dict) else None
    if isinstance(value, bool):
        return value
    value = extra.get(name) if isinstance(extra, dict) else None
    return _IMPORTED.get(value) if isinstance(value, (str, int)) else None


class NliScorer(ClassificationScorer):
    gold_columns = ("computed", "payload__extra")
    columns = (
        "accuracy",
        "macro_f1",
        *(f"subsets.{name}.{subset}" for name in BIAS_FLAGS for subset in ("easy", "hard")),
    )

    def __init__(self, labels, gold_field: str = "gold_label"):
        super().__init__(labels, canonical_label, (gold_field,))

    def gold_extra(self, computed, extra) -> tuple:
        return tuple(hard_flag(computed, extra, name) for name in BIAS_FLAGS)

    def more_arrays(self, keys: list, gold: dict, predictions: dict) -> dict:
        return {name: stratum_codes([gold[key][1 + i] for key in keys]) for i, name in enumerate(BIAS_FLAGS)}

    def strata(self, arrays: dict) -> dict:
        return {name: arrays[name] for name in BIAS_FLAGS if name in arrays and (arrays[name] != 2).any()}

    def extras(self, arrays: dict) -> dict:
        extras = super().extras(arrays)
        extras["subset_items"] = {
            name: {"easy": int((codes == 0).sum()), "hard": int((codes == 1).sum())}
            for name, codes in self.strata(arrays).items()
        }
        return extras
