"""Model evaluation of the NLI kinds (FarsTail §4.3, Table 5): accuracy, macro F1,
per-class P/R/F1 and the confusion matrix against the gold label, and the accuracy on the
easy and hard test items of each biased model.

An item's hard/easy flag of a biased model comes from one of two places, kept apart: the
column its FarsTail file carried (payload extra `hard(...)`, "1"/"0") and the bias
analysis's computed one (`item.computed["computed_hard(...)"]`, booleans). The evaluation
request's `hard_flags` chooses: `file` (the default) takes the file's flag where the item
has one and the computed one elsewhere, `computed` takes only the computed ones. An item
with neither counts in neither subset. A subset is reported once some item of the split
has a flag."""

from annotation.metrics.bias import computed_column, parse_flag
from annotation.metrics.evaluation import stratum_codes
from annotation.metrics.lexical import ttr_bin, type_token_ratio
from annotation.metrics.overlap import words
from annotation.release.evaluation_scorers import ClassificationScorer

from .formats import FARSTAIL_EXTRA_COLUMNS
from .labels import canonical_label

# The biased models of FarsTail §4.3, by the name of their flag column.
BIAS_FLAGS = FARSTAIL_EXTRA_COLUMNS
HARD_FLAG_SOURCES = ("file", "computed")


def hard_flag(computed, extra, name: str, source: str = "file") -> bool | None:
    """The item's flag for biased model `name` from `source` (see the module), or None.

    >>> hard_flag({"computed_hard(overlap)": False}, {"hard(overlap)": "1"}, "hard(overlap)")
    True
    >>> hard_flag({"computed_hard(overlap)": False}, {"hard(overlap)": "1"}, "hard(overlap)", "computed")
    False
    >>> hard_flag({"computed_hard(overlap)": True}, {}, "hard(overlap)"), hard_flag(None, None, "hard(overlap)")
    (True, None)
    """
    if source == "file":
        imported = parse_flag(extra.get(name)) if isinstance(extra, dict) else None
        if imported is not None:
            return imported
    value = computed.get(computed_column(name)) if isinstance(computed, dict) else None
    return value if isinstance(value, bool) else None


def pair_tokens(payload) -> tuple[list[str], list[str]]:
    """The premise's and the hypothesis's words (annotation.metrics.overlap.words)."""
    payload = payload if isinstance(payload, dict) else {}
    premise, hypothesis = payload.get("premise"), payload.get("hypothesis")
    return (
        words(premise) if isinstance(premise, str) else [],
        words(hypothesis) if isinstance(hypothesis, str) else [],
    )


def pair_slice_attributes(payload) -> dict[str, str]:
    """`ttr_bin`: the bin of the pair's type-token ratio, premise and hypothesis together
    (LCHAIM §5.1; annotation/metrics/lexical.py says how it differs from the paper's).

    >>> pair_slice_attributes({"premise": "a b c", "hypothesis": "a d"})
    {'ttr_bin': '0.8-0.9'}
    """
    premise, hypothesis = pair_tokens(payload)
    return {"ttr_bin": ttr_bin(type_token_ratio(premise + hypothesis))}


class NliScorer(ClassificationScorer):
    gold_columns = ("computed", "payload__extra")
    columns = (
        "accuracy",
        "macro_f1",
        *(f"subsets.{name}.{subset}" for name in BIAS_FLAGS for subset in ("easy", "hard")),
    )
    options = {"hard_flags": HARD_FLAG_SOURCES}

    def __init__(self, labels, gold_field: str = "gold_label"):
        super().__init__(labels, canonical_label, (gold_field,))

    def gold_extra(self, computed, extra) -> tuple:
        source = self.chosen("hard_flags")
        return tuple(hard_flag(computed, extra, name, source) for name in BIAS_FLAGS)

    def slice_more(self, payload) -> dict[str, str]:
        return pair_slice_attributes(payload)

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
