"""The three NLI labels and FarsTail's single-letter codes for them."""

from typing import Any

LABELS = ("entailment", "neutral", "contradiction")
# FarsTail's single-letter codes, also accepted in JSONL and CSV.
SHORT_LABELS = {"e": "entailment", "n": "neutral", "c": "contradiction"}
LONG_TO_SHORT = {long: short for short, long in SHORT_LABELS.items()}


def canonical_label(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    if value in LABELS:
        return value
    return SHORT_LABELS.get(value)
