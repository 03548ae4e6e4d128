"""Lexical figures of NLI pairs (LCHAIM §2 and §5.1).

- Jaccard overlap of a premise and its hypothesis: |P ∩ H| / |P ∪ H| over their sets of
  words; per class, the mean over the class's pairs (LCHAIM §2: "Jaccard Similarity between
  premises and hypotheses in each class", 4.87 % for ENTAILMENT and 5.49 % for
  CONTRADICTION on ConTRoL/LCHAIM).
- Type-token ratio of a pair's words (premise and hypothesis together, §5.1): distinct
  words / words. The paper averages the TTR of part-of-speech tags and of lemmas from a
  morphological analyser; without one this is the surface-form TTR, which reads the same
  way (more diverse text, higher ratio) but is not the paper's number.
- TTR bins of fixed width (§5.1, Figure 2's x axis), named by their bounds.

>>> jaccard(["a", "b", "c"], ["b", "c", "d"])
0.5
>>> jaccard_by_class([["a", "b"], ["a"]], [["a"], ["b"]], ["entailment", "neutral"])
{'entailment': {'items': 1, 'jaccard': 0.5}, 'neutral': {'items': 1, 'jaccard': 0.0}}
>>> type_token_ratio(["a", "b", "a", "c"]), ttr_bin(0.75), ttr_bin(1.0)
(0.75, '0.7-0.8', '0.9-1.0')
"""

from __future__ import annotations

import math
from collections.abc import Sequence

TTR_BIN_WIDTH = 0.1


def jaccard(first: Sequence[str], second: Sequence[str]) -> float:
    """|A ∩ B| / |A ∪ B| of the two sets of words; 0 when both are empty."""
    a, b = set(first), set(second)
    union = a | b
    return len(a & b) / len(union) if union else 0.0


def jaccard_by_class(
    premises: Sequence[Sequence[str]], hypotheses: Sequence[Sequence[str]], labels: Sequence[str]
) -> dict[str, dict]:
    """{label: {"items", "jaccard": the mean pair overlap}}, labels in first-seen order."""
    sums: dict[str, list] = {}
    for premise, hypothesis, label in zip(premises, hypotheses, labels, strict=True):
        total = sums.setdefault(label, [0, 0.0])
        total[0] += 1
        total[1] += jaccard(premise, hypothesis)
    return {label: {"items": n, "jaccard": value / n} for label, (n, value) in sums.items()}


def type_token_ratio(tokens: Sequence[str]) -> float | None:
    """Distinct tokens / tokens; None for no token."""
    return len(set(tokens)) / len(tokens) if tokens else None


def ttr_bin(value: float | None, width: float = TTR_BIN_WIDTH) -> str:
    """The bin `value` falls in, "low-high" with one decimal; 1.0 joins the last bin; "" for None."""
    if value is None:
        return ""
    bins = round(1 / width)
    index = min(int(math.floor(value / width + 1e-9)), bins - 1)
    return f"{index * width:.1f}-{(index + 1) * width:.1f}"
