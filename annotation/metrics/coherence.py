"""Soft and hard causal coherence for fine-grained, direction-sensitive NLI.

Source: "Assessing Logical Coherence of LLMs via Fine-Grained NLI"
(fine-grained-nli-coherence.txt), section 3 (definitions), section 5 (how
reversed pairs get their gold label) and appendix A.1 (the labels, which are
PhrasIS's).

A phrase pair (a, b) is shown once as given and once reversed, (b, a). The
labels a judge (model or annotator) gives the two are coherent when the
label on the original equals ``Rev`` of the label on the reversed pair:
FORWARD entailment read backwards is BACKWARD entailment, and the other
five relations are symmetric.

>>> soft_coherence([("FORWARD", "BACKWARD"), ("SIMILAR", "RELATED")])
CoherenceResult(score=0.5, coherent=1, total=2)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Optional

__all__ = [
    "LABELS",
    "REVERSED_PAIR_LABELS",
    "CoherenceResult",
    "reverse_label",
    "soft_coherence",
    "hard_coherence",
]

# Appendix A.1 / Table 1 spelling; ENTAILMENT is split by direction (A.1,
# footnote 4) into FORWARD and BACKWARD.
LABELS: tuple[str, ...] = (
    "EQUIVALENT",
    "FORWARD",
    "BACKWARD",
    "OPPOSITION",
    "SIMILAR",
    "RELATED",
    "UNRELATED",
)

# Section 5: the relations whose pairs the paper duplicates in reversed order, each with
# its reversed gold stated (FORWARD and BACKWARD swap, EQUIVALENT stays). Rev is total on
# LABELS so that SC can score any prediction; reversed pairs are built from these only.
REVERSED_PAIR_LABELS: tuple[str, ...] = ("EQUIVALENT", "FORWARD", "BACKWARD")

_REVERSED = {"FORWARD": "BACKWARD", "BACKWARD": "FORWARD"}


@dataclass(frozen=True)
class CoherenceResult:
    """Share of coherent pairs.

    ``score`` is ``coherent / total`` in [0, 1], or None when ``total`` is 0
    (no pairs: undefined, not 0 and not 1).
    """

    score: Optional[float]
    coherent: int
    total: int


def reverse_label(label: str) -> str:
    """Return ``Rev(label)``: the label of the same pair read in reverse order.

    Section 3.1, footnote 2: directional labels swap (FORWARD <-> BACKWARD),
    symmetric ones stay. Labels are case-sensitive, spelled as in ``LABELS``.
    Raises ValueError for any other string.

    >>> reverse_label("FORWARD")
    'BACKWARD'
    >>> reverse_label("OPPOSITION")
    'OPPOSITION'
    """
    if label not in LABELS:
        raise ValueError(f"unknown label {label!r}; expected one of {LABELS}")
    return _REVERSED.get(label, label)


def _result(indicators: Iterable[bool]) -> CoherenceResult:
    flags = list(indicators)
    coherent = sum(flags)
    total = len(flags)
    return CoherenceResult(score=coherent / total if total else None, coherent=coherent, total=total)


def _coherent(label_original: str, label_reversed: str) -> bool:
    # SC indicator, section 3.1: f(x) = Rev(f(x_rev)). reverse_label also
    # validates label_reversed; check label_original explicitly.
    reverse_label(label_original)
    return label_original == reverse_label(label_reversed)


def soft_coherence(pairs: Sequence[tuple[str, str]]) -> CoherenceResult:
    """SoftCoh (section 3.1): share of pairs whose two labels are coherent.

    ``pairs`` holds ``(label_on_original, label_on_reversed)`` per phrase
    pair. Gold labels play no part: a judge that is consistently wrong in
    both directions is still soft-coherent (section 8 notes this).

        SC(x, x_rev) = 1 if f(x) = Rev(f(x_rev)) else 0
        SoftCoh = (1/N) * sum of SC

    Raises ValueError on a label not in ``LABELS``.

    >>> soft_coherence([("EQUIVALENT", "EQUIVALENT"), ("FORWARD", "FORWARD")])
    CoherenceResult(score=0.5, coherent=1, total=2)
    >>> soft_coherence([])
    CoherenceResult(score=None, coherent=0, total=0)
    """
    return _result(_coherent(original, reversed_) for original, reversed_ in pairs)


def hard_coherence(items: Sequence[tuple[str, ...]]) -> CoherenceResult:
    """HardCoh (section 3.2): coherent and correct in both directions.

    Each item is ``(label_original, label_reversed, gold_original)`` or
    ``(label_original, label_reversed, gold_original, gold_reversed)``::

        HC = 1 if f(x) = Rev(f(x_rev)) and f(x) = y and f(x_rev) = y_rev
        HardCoh = (1/N) * sum of HC

    The paper's data carry both gold labels ``y`` and ``y_rev``. When only
    ``y`` is given, ``y_rev = Rev(y)``, which is how section 5 builds the
    reversed pairs. With that default the condition reduces to "coherent
    and ``f(x) = y``", because ``Rev`` is its own inverse. Given an explicit
    ``y_rev`` that is not ``Rev(y)`` (an inconsistent gold), no item can be
    hard-coherent.

    Raises ValueError on a label not in ``LABELS`` or an item of another
    length.

    >>> hard_coherence([
    ...     ("FORWARD", "BACKWARD", "FORWARD"),   # coherent and correct
    ...     ("BACKWARD", "FORWARD", "FORWARD"),   # coherent, wrong
    ...     ("FORWARD", "FORWARD", "FORWARD"),    # correct on x only
    ... ])
    CoherenceResult(score=0.3333333333333333, coherent=1, total=3)
    """

    def indicator(item: tuple[str, ...]) -> bool:
        if len(item) == 3:
            original, reversed_, gold = item
            gold_reversed = reverse_label(gold)
        elif len(item) == 4:
            original, reversed_, gold, gold_reversed = item
            reverse_label(gold)
            reverse_label(gold_reversed)
        else:
            raise ValueError(f"expected (label, label_reversed, gold[, gold_reversed]), got {item!r}")
        return _coherent(original, reversed_) and original == gold and reversed_ == gold_reversed

    return _result(indicator(item) for item in items)
