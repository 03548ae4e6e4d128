"""The files of `summary_rating`: the JSONL/CSV export record, which the JSONL/CSV import
reads back (kind.py: the export's figures of a summary are passed over, not refused)."""

from __future__ import annotations

import math
from collections import Counter

from .ratings import CRITERIA, stored_ratings

# Members of an exported summary that are figures, not content: a re-imported export is
# rated and measured anew.
EXPORTED_FIGURES = ("index", "intrinsic", "ratings", "error_counts", *(f"{c}_mean" for c in CRITERIA))


def _mean(values: list) -> float | None:
    return math.fsum(values) / len(values) if values else None


def tag_counts(ratings: list[dict]) -> list[dict]:
    """How many ratings ticked each error tag, as `[{"tag", "count"}]` by tag: a list of
    objects, so a typed reader gives it one type whatever tags the item's raters used.

    >>> tag_counts([{"errors": ["b", "a"]}, {"errors": ["b"]}, {}])
    [{'tag': 'a', 'count': 1}, {'tag': 'b', 'count': 2}]
    """
    counts = Counter(tag for rating in ratings for tag in rating.get("errors") or [])
    return [{"tag": tag, "count": count} for tag, count in sorted(counts.items())]


def summary_export_record(item, facts) -> dict:
    """One record per item. `summaries`, in the file's order: system, text, automatic
    scores (left out when there are none), intrinsic measures (null until computed), every
    rating with its annotator's pseudonym (in the order the annotations were stored), the
    mean per criterion and the error-tag counts. `votes` is one object per summary (file
    order): `system`, `coherence` and `completeness` (lists aligned with `annotators`, null
    where that annotator gave none), their means and `errors` (tag counts), so its shape
    does not depend on how many summaries an item has; CSV spreads it over `votes_<k>_*`
    columns. `n` is the number of raters; `agreement` is null (alpha is a project-level
    figure: GET .../agreement/)."""
    payload = item.payload
    summaries = payload["summaries"]
    order = payload["order"]
    measured = ((item.computed or {}).get("intrinsic") or {}).get("summaries") or []
    given = [dict(stored_ratings(value, order)) for _annotator, value in facts.annotations]
    per_summary: list[dict] = []
    votes: list[dict] = []
    for k, summary in enumerate(summaries):
        ratings = [
            {"annotator": annotator, **rated[k]}
            for (annotator, _value), rated in zip(facts.annotations, given)
            if rated.get(k) is not None
        ]
        columns = {c: [rated[k].get(c) if rated.get(k) else None for rated in given] for c in CRITERIA}
        means = {f"{c}_mean": _mean([x for x in columns[c] if isinstance(x, int)]) for c in CRITERIA}
        errors = tag_counts(ratings)
        entry = {"index": k, "system": summary["system"], "text": summary["text"]}
        if summary.get("scores"):
            entry["scores"] = summary["scores"]
        entry.update(intrinsic=measured[k] if k < len(measured) else None, ratings=ratings, error_counts=errors)
        entry.update(means)
        per_summary.append(entry)
        votes.append({"system": summary["system"], **columns, **means, "errors": errors})
    return {
        "id": item.external_id,
        "article": payload["article"],
        "summaries": per_summary,
        "votes": votes,
        "n": len(facts.annotations),
        "round": item.round,
        "group": item.group,
        "split": item.split,
        "status": item.status,
        "agreement": None,
        "annotators": [annotator for annotator, _value in facts.annotations],
    }
