"""The files of summary rating: the import rows (an article with its candidate summaries)
and the export records and CSV columns (every rating, per-criterion means, error-tag
counts). Items are JSONL or CSV rows (`summaries` a JSON list in CSV)."""

import math
from collections import Counter
from typing import Any

from django.utils.translation import gettext

from annotation.metrics.text import bidi_control, forbidden_character
from annotation.rows import ItemRow, RowProblems, require_text
from annotation.wording import fault_text, join_list

from .ratings import CRITERIA, stored_ratings

MAX_SUMMARIES = 8
MAX_TEXT_LENGTH = 200_000
# A score's or an error tag's name: at most this many characters.
MAX_TAG_LENGTH = 64
_SUMMARY_KEYS = ("system", "text", "scores")
# Members of an exported summary that are figures, not content: a re-imported export is
# rated and measured anew.
EXPORTED_FIGURES = ("index", "intrinsic", "ratings", "error_counts", *(f"{c}_mean" for c in CRITERIA))


def _mean(values: list[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def parse_summary_record(record: dict, row: int, problems: RowProblems, common: dict) -> tuple[ItemRow | None, list]:
    """One row of a summary-rating file: the article and its 1 to MAX_SUMMARIES summaries
    (system, text, optional automatic scores), or the row's problems."""
    article = require_text(record, "article", problems)
    if article and not article.strip():
        problems.add("article", gettext("is blank"))
    elif len(article) > MAX_TEXT_LENGTH:
        problems.add("article", gettext("is longer than %(n)s characters") % {"n": MAX_TEXT_LENGTH})
    summaries = record.get("summaries")
    cleaned: list[dict] = []
    if summaries is None or summaries == "":
        problems.add("summaries", gettext("is required"))
    elif not isinstance(summaries, list):
        problems.add(
            "summaries", gettext("must be a list of summaries, each with a system, a text and optional scores")
        )
    elif not 1 <= len(summaries) <= MAX_SUMMARIES:
        problems.add("summaries", gettext("must hold between 1 and %(n)s summaries") % {"n": MAX_SUMMARIES})
    else:
        systems: dict[str, int] = {}
        for index, summary in enumerate(summaries):
            entry = _parse_summary(summary, f"summaries[{index}]", problems)
            if entry is None:
                continue
            if entry["system"] in systems:
                problems.add(
                    f"summaries[{index}].system",
                    gettext("repeats the system of summary %(n)s") % {"n": systems[entry["system"]] + 1},
                )
                continue
            systems[entry["system"]] = index
            cleaned.append(entry)
    if problems.errors:
        return None, problems.errors
    payload = {"article": article, "summaries": cleaned}
    return ItemRow(payload=payload, position=row, **common), []


def _parse_summary(summary: Any, prefix: str, problems: RowProblems) -> dict | None:
    if not isinstance(summary, dict):
        problems.add(prefix, gettext("must be an object with a system, a text and optional scores"))
        return None
    before = len(problems.errors)
    for key in summary:
        # The export's figures (ratings, means, ...) are passed over: a re-imported export.
        if key not in _SUMMARY_KEYS and key not in EXPORTED_FIGURES:
            problems.add(
                f"{prefix}.{key}",
                gettext("is not a field of a summary; expected %(fields)s") % {"fields": join_list(_SUMMARY_KEYS)},
            )
    system = require_text(summary, "system", _Prefixed(problems, prefix), identifier=True)
    text = require_text(summary, "text", _Prefixed(problems, prefix))
    if text and not text.strip():
        problems.add(f"{prefix}.text", gettext("is blank"))
    elif len(text) > MAX_TEXT_LENGTH:
        problems.add(f"{prefix}.text", gettext("is longer than %(n)s characters") % {"n": MAX_TEXT_LENGTH})
    entry = {"system": system, "text": text}
    scores = summary.get("scores")
    if scores is not None:
        if not isinstance(scores, dict):
            problems.add(f"{prefix}.scores", gettext("must be an object of score names and numbers"))
        else:
            for name, score in scores.items():
                field = f"{prefix}.scores.{name}"
                reason = bidi_control(name) or forbidden_character(name)
                if reason or not name or len(name) > MAX_TAG_LENGTH:
                    problems.add(
                        f"{prefix}.scores",
                        gettext("a score name: %(reason)s")
                        % {
                            "reason": (fault_text(reason) if reason else None)
                            or gettext("must be 1 to %(n)s characters") % {"n": MAX_TAG_LENGTH}
                        },
                    )
                elif isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
                    problems.add(field, gettext("must be a finite number"))
            if len(problems.errors) == before:
                entry["scores"] = dict(scores)
    return entry if len(problems.errors) == before else None


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


def summary_csv_columns() -> tuple[str, ...]:
    """One row per item: the article and the summaries (JSON, as the CSV import reads
    them), and summary k's votes (file order, k < MAX_SUMMARIES) spread over
    `votes_<k>_*` columns. Rating lists are space-separated in the order of `annotators`."""
    columns = ["id", "article", "summaries", "n", "round", "group", "split", "status", "annotators"]
    for k in range(MAX_SUMMARIES):
        columns += [
            f"votes_{k}_system", f"votes_{k}_coherence", f"votes_{k}_completeness",
            f"votes_{k}_coherence_mean", f"votes_{k}_completeness_mean", f"votes_{k}_errors",
        ]  # fmt: skip
    return tuple(columns)


class _Prefixed:
    """RowProblems seen through a field prefix, for require_text on nested objects."""

    def __init__(self, problems: RowProblems, prefix: str):
        self.problems, self.prefix = problems, prefix

    def add(self, field_name: str | None, message: str) -> None:
        self.problems.add(f"{self.prefix}.{field_name}" if field_name else self.prefix, message)
