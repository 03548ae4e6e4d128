"""The candidates of a translation_rating item: the criteria they are rated on, the blind
order an annotator sees them in, and their ratings gathered per candidate (the kind, the
results and the exports all read these)."""

from __future__ import annotations

import random
from collections import defaultdict

SCORE_CRITERIA = ("accuracy", "fluency", "cultural_fit")
BINARY_CRITERION = "label_valid"
CRITERIA = (*SCORE_CRITERIA, BINARY_CRITERION)
SCORE_MIN, SCORE_MAX = 1, 5
MAX_CANDIDATES = 20
LOW_BACK_TRANSLATION_FLAG = "low_back_translation"


def candidate_order(item) -> list[int]:
    """Display position → candidate index for `item`. The stored order when it is a
    permutation of the item's candidates, else the one derived from its shuffle key."""
    n = len(item.payload.get("candidates") or [])
    stored = (item.computed or {}).get("candidate_order") if isinstance(item.computed, dict) else None
    if (
        isinstance(stored, list)
        and sorted(x for x in stored if isinstance(x, int) and not isinstance(x, bool)) == list(range(n))
        and len(stored) == n
    ):
        return list(stored)
    return derived_order(item.shuffle_key, n)


def derived_order(shuffle_key: float, n: int) -> list[int]:
    """A random permutation of range(n) seeded by the item's stored random shuffle key
    (uniform over permutations; independent between items)."""
    order = list(range(n))
    random.Random(f"mashov.candidate-order:{shuffle_key!r}").shuffle(order)
    return order


def candidate_ratings(item, annotations) -> list[dict]:
    """Per candidate of `item` (import order): system, texts, [{rater, scores…}], means.
    `annotations` are (pseudonymous rater id, stored value) pairs."""
    candidates = item.payload.get("candidates") or []
    out = []
    for index, candidate in enumerate(candidates):
        raters = []
        sums: dict[str, list] = defaultdict(list)
        for rater, value in annotations:
            scores = ((value or {}).get("ratings") or {}).get(str(index)) if isinstance(value, dict) else None
            if not isinstance(scores, dict):
                continue
            raters.append({"rater": rater, **{c: scores.get(c) for c in CRITERIA}})
            for criterion in CRITERIA:
                if isinstance(scores.get(criterion), (int, bool)):
                    sums[criterion].append(float(scores[criterion]))
        means = {
            criterion: (sum(v) / len(v) if v else None) for criterion, v in ((c, sums.get(c, [])) for c in CRITERIA)
        }
        out.append(
            {
                "index": index,
                "system": candidate.get("system"),
                "premise": candidate.get("premise"),
                "hypothesis": candidate.get("hypothesis"),
                "ratings": raters,
                "means": means,
            }
        )
    return out


# Members of an exported candidate that are figures, not content (the JSONL/CSV import
# passes over them).
EXPORTED_FIGURES = ("index", "ratings", "means")


def exported_candidates(item, per_candidate: list[dict]) -> list[dict]:
    """`candidate_ratings` as the JSONL/CSV export writes them: each candidate with its
    imported back-translation (`{premise, hypothesis}`) after its texts where it has one,
    so that the export imports back to the same candidates."""
    candidates = item.payload.get("candidates") or []
    out = []
    for entry in per_candidate:
        back = candidates[entry["index"]].get("back_translation") if entry["index"] < len(candidates) else None
        if isinstance(back, dict):
            entry = {**{k: v for k, v in entry.items() if k not in ("ratings", "means")}, "back_translation": back,
                     "ratings": entry["ratings"], "means": entry["means"]}  # fmt: skip
        out.append(entry)
    return out
