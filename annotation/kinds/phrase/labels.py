"""The seven labels of fine-grained-nli-coherence appendix A.1 as PhrasIS spells them, and
how the labels cast on one pair decide its gold (docs/kinds.md "The kinds").

Gold: the majority label of the annotations of the item's current round; on a tie, the
imported label if it is one of the tied labels, else no gold (`tie: true` in exports);
when nobody labeled, the imported label (`gold_source: "imported"`)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from annotation.metrics.coherence import LABELS

# PhrasIS's label codes (dataset README) ↔ the seven labels of appendix A.1.
CODES = {
    "EQUI": "EQUIVALENT",
    "FORW": "FORWARD",
    "BACK": "BACKWARD",
    "OPPO": "OPPOSITION",
    "SIMI": "SIMILAR",
    "REL": "RELATED",
    "UNR": "UNRELATED",
}
LABEL_TO_CODE = {label: code for code, label in CODES.items()}


def canonical_label(value: Any) -> str | None:
    """One of LABELS for a label or PhrasIS code (surrounding whitespace ignored), else None."""
    if not isinstance(value, str):
        return None
    key = value.strip()
    if key in LABELS:
        return key
    return CODES.get(key)


def majority_gold(labels: list[str], imported: str = "") -> tuple[str | None, str | None, bool]:
    """(gold, how it was decided, tie) from the labels cast on one item.

    The most frequent label; a tie for the top is broken by the imported label when it is
    one of the tied ones, and otherwise leaves no gold. Without any label the imported one
    stands. `how` is "majority", "majority_tiebreak_imported", "imported" or None.

    >>> majority_gold(["FORWARD", "FORWARD", "SIMILAR"])
    ('FORWARD', 'majority', False)
    >>> majority_gold(["FORWARD", "SIMILAR"], "SIMILAR")
    ('SIMILAR', 'majority_tiebreak_imported', True)
    >>> majority_gold(["FORWARD", "SIMILAR"])
    (None, None, True)
    >>> majority_gold([], "RELATED")
    ('RELATED', 'imported', False)
    """
    counts = Counter(label for label in labels if isinstance(label, str))
    if not counts:
        return (imported or None), ("imported" if imported else None), False
    top = max(counts.values())
    leaders = [label for label, n in counts.items() if n == top]
    if len(leaders) == 1:
        return leaders[0], "majority", False
    if imported in leaders:
        return imported, "majority_tiebreak_imported", True
    return None, None, True
