"""`summary_rating`: rate system summaries of an article, blind and shuffled (HeSum §4).

Import rows (JSONL, or CSV whose `summaries` column holds a JSON list):
`id, article, summaries: [{system, text, scores?}], group?, split?`.

- `article` and every summary `text`: non-blank strings, stored exactly as given.
- `system`: an identifier (no bidi controls, at most 200 characters), unique within the row.
- `scores` (optional): automatic scores of that summary, `{"rouge1": 0.13, "bertscore": 0.77}`,
  names are identifiers, values finite numbers. The report correlates them with the human
  ratings (HeSum §4: Pearson and Kendall tau).
- 1 to MAX_SUMMARIES summaries per row; unknown keys inside a summary are refused (a typo such
  as `score` would otherwise be lost silently).

Display order. At import every item gets `payload["order"]`, a permutation of the summaries
seeded by an HMAC of the item's external id under a key derived from Django's SECRET_KEY and
the project's id: a rater, who sees the external id, cannot compute it, and two projects
holding the same items show them in different orders. The order is stored, not recomputed,
so items imported before keep theirs (and their ratings keep their meaning); it is not
content, so re-importing the same file skips the items as unchanged. The annotator sees
`summaries[order[0]]`, `summaries[order[1]]`, ... as summaries 0, 1, ... with text only: no
system name, no scores, never the order.

The stored value uses DISPLAY indices: `{"ratings": {"<display index>": {"coherence": 1-5,
"completeness": 1-5, "errors": [tag, ...]}}}`, exactly the indices the annotator saw and
submitted, so the submit response echoes nothing that would reveal the permutation. Reports
and exports map a display index `d` to the stored summary `payload["summaries"][order[d]]`.

Value rules (every problem listed at once, each naming its field, nothing stored):
- every summary is rated (`value.ratings.<d>` "is required"); no other keys;
- `coherence` and `completeness` are JSON integers 1-5. Not floats (4.0 is refused), not
  booleans and not strings: "4", and Persian or Arabic-Indic digits such as "۴" or "٤", are
  refused as strings (the page sends numbers whatever the keyboard layout);
- `errors` (optional, default []) lists tags of the project's `error_tags` setting, each at
  most once; an unknown tag is refused naming `value.ratings.<d>.errors`.

Settings: `raters_per_item` (default 3, the votes an item needs) and `error_tags` (default
HeSum Table 4's eight phenomena, as stable snake_case ids; `ERROR_TAG_NAMES` holds their
display names). A project may list its own ids: strings of letters, digits, `_`, `.` or `-`
(any script), at most 64 characters, no bidi controls, no duplicates.

Results (`report_sections`, `compute_agreement`, export): see those methods."""

import math
import random
import re
from collections import defaultdict
from typing import Any

from django.utils.crypto import salted_hmac
from django.utils.translation import gettext_lazy as _

from annotation.errors import FieldError, InvalidInput
from annotation.kinds.base import RATING_OVERLAP_SETTINGS, Kind, check_overlap_settings
from annotation.kinds.summary.guide import summary_guide
from annotation.kinds.summary.ratings import (
    CRITERIA,
    DEFAULT_ERROR_TAGS,
    ERROR_TAG_HINTS,
    ERROR_TAG_NAMES,
    MAX_SCORE,
    MIN_SCORE,
    stored_ratings,
    tag_name,
)
from annotation.metrics.text import bidi_control, forbidden_character
from annotation.rows import ItemRow, RowProblems, require_text

MAX_SUMMARIES = 8
MAX_TEXT_LENGTH = 200_000
MAX_TAG_LENGTH = 64
MAX_TAGS = 40

_TAG_RE = re.compile(r"^[\w.-]+$")
_SUMMARY_KEYS = ("system", "text", "scores")
CONFIDENCE = 0.95


def display_order(project_id: int, external_id: str, n: int) -> list[int]:
    """The permutation shown to annotators: a shuffle of range(n) seeded by a keyed HMAC
    (secret per project) of the item's external id, the same in every process."""
    digest = salted_hmac(f"mashov.summary_rating.display-order:{project_id}", external_id, algorithm="sha256").digest()
    order = list(range(n))
    random.Random(int.from_bytes(digest[:16], "big")).shuffle(order)
    return order


def _mean(values: list[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


class SummaryRatingKind(Kind):
    name = "summary_rating"
    title = _("Summary rating")
    template = "summary/annotate.html"
    default_settings = {"raters_per_item": 3, "error_tags": DEFAULT_ERROR_TAGS, **RATING_OVERLAP_SETTINGS}
    settings_help = {
        "raters_per_item": _("Raters of each article's summaries."),
        "error_tags": _(
            "Error categories raters may tick (HeSum Table 4 by default); ids of lower-case letters, digits and underscores."
        ),
    }
    settings_labels = {"raters_per_item": _("Raters per article"), "error_tags": _("Error tags")}
    settings_units = {"raters_per_item": _("raters")}
    settings_choices = {"error_tags": ERROR_TAG_NAMES}
    round_bound_settings = {
        "raters_per_item": _(
            "articles being rated would need a different number of raters than their ratings were collected for"
        ),
        "error_tags": _("ratings already given chose among the old tags, so tag counts would compare different lists"),
    }

    csv_json_fields = ("summaries",)
    computes_agreement = True
    page_urls = ("annotation.kinds.summary.urls",)
    api_urls = ("annotation.kinds.summary.api_urls",)
    job_handlers = {"summary_intrinsic": "annotation.kinds.summary.measures.summary_measures_job"}

    def guide_sections(self, settings: dict) -> tuple:
        return summary_guide(settings["error_tags"])

    # --- settings -----------------------------------------------------------------------

    def check_settings(self, settings: dict) -> None:
        if not 1 <= settings["raters_per_item"] <= 50:
            raise InvalidInput("must be between 1 and 50", field="settings.raters_per_item")
        check_overlap_settings(settings)
        tags = settings["error_tags"]
        errors = []
        if len(tags) > MAX_TAGS:
            errors.append(FieldError("settings.error_tags", f"lists more than {MAX_TAGS} tags"))
        seen = set()
        for index, tag in enumerate(tags):
            field = f"settings.error_tags[{index}]"
            if not isinstance(tag, str) or not tag:
                errors.append(FieldError(field, "must be a non-empty string"))
            elif bidi_control(tag) or forbidden_character(tag):
                errors.append(FieldError(field, bidi_control(tag) or forbidden_character(tag)))
            elif len(tag) > MAX_TAG_LENGTH or not _TAG_RE.match(tag):
                errors.append(
                    FieldError(
                        field,
                        f"must be an identifier: letters, digits, _ . - only, at most {MAX_TAG_LENGTH} characters",
                    )
                )
            elif tag in seen:
                errors.append(FieldError(field, f"{tag!r} is listed twice"))
            else:
                seen.add(tag)
        if errors:
            raise InvalidInput("invalid error tags", errors=errors)

    def error_tags(self, settings: dict) -> list[str]:
        return list(settings["error_tags"])

    # --- import -------------------------------------------------------------------------

    def parse_record(self, record: dict, row: int) -> tuple[ItemRow | None, list[FieldError]]:
        problems = RowProblems(row)
        common = self.common_fields(record, problems)
        article = require_text(record, "article", problems)
        if article and not article.strip():
            problems.add("article", "is blank")
        elif len(article) > MAX_TEXT_LENGTH:
            problems.add("article", f"is longer than {MAX_TEXT_LENGTH} characters")
        summaries = record.get("summaries")
        cleaned: list[dict] = []
        if summaries is None or summaries == "":
            problems.add("summaries", "is required")
        elif not isinstance(summaries, list):
            problems.add("summaries", "must be a list of {system, text, scores?} objects")
        elif not 1 <= len(summaries) <= MAX_SUMMARIES:
            problems.add("summaries", f"must hold between 1 and {MAX_SUMMARIES} summaries")
        else:
            systems: dict[str, int] = {}
            for index, summary in enumerate(summaries):
                entry = self._parse_summary(summary, f"summaries[{index}]", problems)
                if entry is None:
                    continue
                if entry["system"] in systems:
                    problems.add(
                        f"summaries[{index}].system", f"repeats the system of summaries[{systems[entry['system']]}]"
                    )
                    continue
                systems[entry["system"]] = index
                cleaned.append(entry)
        if problems.errors:
            return None, problems.errors
        payload = {"article": article, "summaries": cleaned}
        return ItemRow(payload=payload, position=row, **common), []

    def _parse_summary(self, summary: Any, prefix: str, problems: RowProblems) -> dict | None:
        if not isinstance(summary, dict):
            problems.add(prefix, "must be an object {system, text, scores?}")
            return None
        before = len(problems.errors)
        for key in summary:
            if key not in _SUMMARY_KEYS:
                problems.add(f"{prefix}.{key}", f"is not a field of a summary; expected {', '.join(_SUMMARY_KEYS)}")
        system = require_text(summary, "system", _Prefixed(problems, prefix), identifier=True)
        text = require_text(summary, "text", _Prefixed(problems, prefix))
        if text and not text.strip():
            problems.add(f"{prefix}.text", "is blank")
        elif len(text) > MAX_TEXT_LENGTH:
            problems.add(f"{prefix}.text", f"is longer than {MAX_TEXT_LENGTH} characters")
        entry = {"system": system, "text": text}
        scores = summary.get("scores")
        if scores is not None:
            if not isinstance(scores, dict):
                problems.add(f"{prefix}.scores", 'must be an object such as {"rouge1": 0.13}')
            else:
                for name, score in scores.items():
                    field = f"{prefix}.scores.{name}"
                    reason = bidi_control(name) or forbidden_character(name)
                    if reason or not name or len(name) > MAX_TAG_LENGTH:
                        problems.add(f"{prefix}.scores", f"a score name {reason or 'must be 1-64 characters'}")
                    elif isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
                        problems.add(field, "must be a finite number")
                if len(problems.errors) == before:
                    entry["scores"] = dict(scores)
        return entry if len(problems.errors) == before else None

    def stored_payload(self, project, row: ItemRow) -> dict:
        return {**row.payload, "order": display_order(project.pk, row.external_id, len(row.payload["summaries"]))}

    def same_content(self, stored: dict, parsed: dict) -> bool:
        return {key: value for key, value in stored.items() if key != "order"} == parsed

    def after_import(self, project, created: int) -> None:
        """Queue the intrinsic measures of the new items when the import commits. To be
        called by the import service inside its storing transaction (see the module
        docstring of annotation.kinds.summary.measures)."""
        if created:
            from annotation.kinds.summary.measures import summary_measures_enqueue_on_commit

            summary_measures_enqueue_on_commit(project)

    # --- annotating ---------------------------------------------------------------------

    def votes_needed(self, item, settings: dict) -> int:
        adaptive = self.adaptive_votes(item, settings)
        return settings["raters_per_item"] if adaptive is None else adaptive

    def wants_another_vote(self, item, settings: dict, submitted: int) -> bool:
        from annotation.services.aggregation import ratings_want_another_vote

        return ratings_want_another_vote(item, settings, submitted)

    def annotator_payload(self, item) -> dict:
        """The article and the summaries' texts in display order; the project's error tags
        with display names (the page draws its checkboxes from them). Never system names,
        automatic scores or the order."""
        settings = self.settings_for(item.project.settings)
        summaries = item.payload["summaries"]
        return {
            "article": item.payload["article"],
            "summaries": [{"text": summaries[stored]["text"]} for stored in item.payload["order"]],
            "error_tags": [
                {"id": tag, "name": tag_name(tag), "hint": str(ERROR_TAG_HINTS.get(tag, ""))}
                for tag in self.error_tags(settings)
            ],
        }

    def clean_value(self, value: Any, item) -> dict:
        if not isinstance(value, dict):
            raise InvalidInput(
                'must be an object like {"ratings": {"0": {"coherence": 4, "completeness": 3, "errors": []}}}',
                field="value",
            )
        errors: list[FieldError] = []
        for key in sorted(set(value) - {"ratings"}, key=str):
            errors.append(_key_error("value", key, "is not a field of summary_rating; expected ratings"))
        ratings = value.get("ratings")
        if not isinstance(ratings, dict):
            errors.append(FieldError("value.ratings", 'is required: an object keyed by summary index ("0", "1", ...)'))
            raise InvalidInput("invalid value", errors=errors)
        n = len(item.payload["summaries"])
        known_tags = self.error_tags(self.settings_for(item.project.settings))
        indices = [str(d) for d in range(n)]
        for key in sorted(set(ratings) - set(indices), key=str):
            errors.append(_key_error("value.ratings", key, f"is not a summary index; expected 0 to {n - 1}"))
        cleaned: dict[str, dict] = {}
        for key in indices:
            field = f"value.ratings.{key}"
            rating = ratings.get(key)
            if rating is None:
                errors.append(FieldError(field, "is required: every summary must be rated"))
                continue
            if not isinstance(rating, dict):
                errors.append(FieldError(field, 'must be an object {"coherence", "completeness", "errors"}'))
                continue
            for extra in sorted(set(rating) - {*CRITERIA, "errors"}, key=str):
                errors.append(
                    _key_error(field, extra, "is not a field of a rating; expected coherence, completeness, errors")
                )
            entry: dict[str, Any] = {}
            for criterion in CRITERIA:
                score = rating.get(criterion)
                if score is None:
                    errors.append(FieldError(f"{field}.{criterion}", "is required"))
                elif isinstance(score, bool) or not isinstance(score, int):
                    errors.append(
                        FieldError(
                            f"{field}.{criterion}",
                            f"must be an integer from {MIN_SCORE} to {MAX_SCORE} (a JSON number, not a string)",
                        )
                    )
                elif not MIN_SCORE <= score <= MAX_SCORE:
                    errors.append(FieldError(f"{field}.{criterion}", f"must be between {MIN_SCORE} and {MAX_SCORE}"))
                else:
                    entry[criterion] = score
            tags = rating.get("errors", [])
            if not isinstance(tags, list):
                errors.append(FieldError(f"{field}.errors", "must be a list of error tags"))
            else:
                seen: list[str] = []
                for tag in tags:
                    if not isinstance(tag, str) or forbidden_character(tag):
                        errors.append(FieldError(f"{field}.errors", "must hold error tags (strings)"))
                    elif tag not in known_tags:
                        errors.append(
                            FieldError(f"{field}.errors", f"unknown error tag {tag!r}; known: {', '.join(known_tags)}")
                        )
                    elif tag in seen:
                        errors.append(FieldError(f"{field}.errors", f"lists {tag!r} twice"))
                    else:
                        seen.append(tag)
                entry["errors"] = seen
            cleaned[key] = entry
        if errors:
            raise InvalidInput("invalid value", errors=errors)
        return {"ratings": cleaned}

    # --- results ------------------------------------------------------------------------

    def compute_agreement(self, project, job) -> dict:
        """Interval alpha per criterion and over all ratings, and the intrinsic measures of
        summaries not measured yet (see annotation.kinds.summary.results)."""
        from annotation.kinds.summary.results import summary_agreement_compute

        return summary_agreement_compute(project, job)

    def report_sections(self, project) -> dict:
        from annotation.kinds.summary.results import summary_report_sections

        return summary_report_sections(project, self.settings_for(project.settings))

    # --- export -------------------------------------------------------------------------

    def export_record(self, item, facts) -> dict:
        """One record per item. `summaries`, in the file's order: system, text, automatic
        scores, intrinsic measures (null until computed), every rating with its annotator's
        pseudonym (in the order the annotations were stored), the mean per criterion and
        the error-tag counts. `votes` is the same ratings flattened by summary k (file
        order): `<k>_system`, `<k>_coherence` and `<k>_completeness` (lists aligned with
        `annotators`), `<k>_coherence_mean`, `<k>_completeness_mean`, `<k>_errors` (tag →
        count); CSV spreads it over `votes_<k>_*` columns. `n` is the number of raters;
        `agreement` is null (alpha is a project-level figure: GET .../agreement/)."""
        payload = item.payload
        summaries = payload["summaries"]
        order = payload["order"]
        intrinsic = (item.computed or {}).get("intrinsic") or {}
        measured = intrinsic.get("summaries") or []
        per_summary: list[dict] = [
            {
                "index": stored,
                "system": summary["system"],
                "text": summary["text"],
                "scores": summary.get("scores") or {},
                "intrinsic": measured[stored] if stored < len(measured) else None,
                "ratings": [],
            }
            for stored, summary in enumerate(summaries)
        ]
        annotators = [annotator for annotator, _value in facts.annotations]
        columns: dict[int, dict[str, list]] = {k: {c: [] for c in CRITERIA} for k in range(len(summaries))}
        for annotator, value in facts.annotations:
            given = dict(stored_ratings(value, order))
            for k in range(len(summaries)):
                rating = given.get(k)
                for criterion in CRITERIA:
                    columns[k][criterion].append(rating.get(criterion) if rating else None)
                if rating is not None:
                    per_summary[k]["ratings"].append({"annotator": annotator, **rating})
        votes: dict[str, Any] = {}
        for k, entry in enumerate(per_summary):
            counts: dict[str, int] = defaultdict(int)
            for rating in entry["ratings"]:
                for tag in rating.get("errors") or []:
                    counts[tag] += 1
            entry["error_counts"] = dict(sorted(counts.items()))
            votes[f"{k}_system"] = entry["system"]
            for criterion in CRITERIA:
                cast = [x for x in columns[k][criterion] if isinstance(x, int)]
                entry[f"{criterion}_mean"] = _mean(cast)
                votes[f"{k}_{criterion}"] = columns[k][criterion]
                votes[f"{k}_{criterion}_mean"] = entry[f"{criterion}_mean"]
            votes[f"{k}_errors"] = entry["error_counts"]
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
            "annotators": annotators,
        }

    def export_csv_columns(self) -> tuple[str, ...]:
        """One row per item, without the texts (JSONL carries them); summary k (file order,
        k < MAX_SUMMARIES) spreads over `votes_<k>_*` columns. Rating lists are
        space-separated in the order of `annotators`."""
        columns = ["id", "n", "round", "group", "split", "status", "annotators"]
        for k in range(MAX_SUMMARIES):
            columns += [
                f"votes_{k}_system", f"votes_{k}_coherence", f"votes_{k}_completeness",
                f"votes_{k}_coherence_mean", f"votes_{k}_completeness_mean", f"votes_{k}_errors",
            ]  # fmt: skip
        return tuple(columns)


def _key_error(parent: str, key: Any, message: str) -> FieldError:
    reason = forbidden_character(key) if isinstance(key, str) else None
    if reason:
        # Never echo a key that cannot be encoded back (a lone surrogate would 500).
        return FieldError(parent, f"a key {reason}")
    return FieldError(f"{parent}.{key}", message)


class _Prefixed:
    """RowProblems seen through a field prefix, for require_text on nested objects."""

    def __init__(self, problems: RowProblems, prefix: str):
        self.problems, self.prefix = problems, prefix

    def add(self, field_name: str | None, message: str) -> None:
        self.problems.add(f"{self.prefix}.{field_name}" if field_name else self.prefix, message)
