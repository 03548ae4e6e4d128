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

import random
import re
from typing import Any

from django.utils.crypto import salted_hmac
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from annotation.errors import FieldError, InvalidInput
from annotation.kinds.base import ProjectLink, release_texts_of
from annotation.kinds.rating import RatingKind
from annotation.kinds.settings import RATING_OVERLAP_SETTINGS, between, check_range
from annotation.kinds.summary.filters import MIN_REFERENCE_WORDS, MIN_REFERENCE_WORDS_RANGE, summary_hold_out
from annotation.kinds.summary.formats import (
    MAX_TAG_LENGTH,
    parse_summary_record,
    summary_csv_columns,
    summary_export_record,
)
from annotation.kinds.summary.guide import summary_guide
from annotation.kinds.summary.ratings import (
    CRITERIA,
    DEFAULT_ERROR_TAGS,
    ERROR_TAG_HINTS,
    ERROR_TAG_NAMES,
    MAX_SCORE,
    MIN_SCORE,
    tag_name,
)
from annotation.metrics.text import bidi_control, forbidden_character
from annotation.rows import ItemRow, RowProblems
from annotation.wording import fault_text, join_list

MAX_TAGS = 40
# The system name a HeSum-style import gives the dataset's own summary.
DEFAULT_REFERENCE_SYSTEM = "reference"

_TAG_RE = re.compile(r"^[\w.-]+$")
CONFIDENCE = 0.95


def display_order(project_id: int, external_id: str, n: int) -> list[int]:
    """The permutation shown to annotators: a shuffle of range(n) seeded by a keyed HMAC
    (secret per project) of the item's external id, the same in every process."""
    digest = salted_hmac(f"mashov.summary_rating.display-order:{project_id}", external_id, algorithm="sha256").digest()
    order = list(range(n))
    random.Random(int.from_bytes(digest[:16], "big")).shuffle(order)
    return order


class SummaryRatingKind(RatingKind):
    name = "summary_rating"
    hub_task_category = "summarization"
    title = _("Summary rating")
    short_title = _("Summary rating")

    # What report_sections adds to the project's report, for the API's schema.
    report_keys = {
        "systems": "per system and criterion mean with 95% CI",
        "error_table": "error-tag counts per system (HeSum Table 4 layout)",
        "correlations": "Pearson and Kendall tau with automatic scores",
        "criteria": "the rated criteria",
        "scale": "the rating scale",
        "error_tags": "the project's error tags with display names",
        "intrinsic_status": "items with and without intrinsic measures",
        "profile": "per split: the articles' and each system's summaries' count, vocabulary and mean words and sentences, and with hspell (Hebrew projects) lemmas, anaphors, construct state and known words; `analyser` names it (HeSum Table 1)",
    }
    template = "summary/annotate.html"
    default_settings = {
        "raters_per_item": 3,
        "error_tags": DEFAULT_ERROR_TAGS,
        "reference_system": DEFAULT_REFERENCE_SYSTEM,
        # HeSum §3.1's import filters: articles not in the project's language, and
        # reference summaries of 10 or fewer words, are held out (0 / false: off).
        "hold_out_other_language": True,
        "min_reference_words": MIN_REFERENCE_WORDS,
        **RATING_OVERLAP_SETTINGS,
    }
    settings_help = {
        "raters_per_item": _("Raters of each article's summaries."),
        "reference_system": _(
            "The system whose summary is the article's reference (the dataset's own summary): the other summaries get "
            "ROUGE-1, ROUGE-2 and ROUGE-L against it (HeSum Table 3). Empty: no reference."
        ),
        "error_tags": _(
            "Error categories raters may tick (HeSum Table 4 by default); ids of lower-case letters, digits and underscores."
        ),
        "hold_out_other_language": _(
            "At import, hold out articles not written in the project's language (fewer than half their letters in its "
            "script), as HeSum did; the import lists them with the reason."
        ),
        "min_reference_words": _(
            "At import, hold out articles whose reference summary has fewer words than this (HeSum left out summaries "
            "of 10 words or fewer); articles without a reference summary are kept. 0: keep every article."
        ),
    }
    settings_labels = {
        "raters_per_item": _("Raters per article"),
        "error_tags": _("Error tags"),
        "reference_system": _("Reference system"),
        "hold_out_other_language": _("Hold out articles in another language"),
        "min_reference_words": _("Shortest reference summary"),
    }
    settings_units = {"raters_per_item": _("raters"), "min_reference_words": _("words")}
    settings_choices = {"error_tags": ERROR_TAG_NAMES}
    round_bound_settings = {
        "raters_per_item": _(
            "articles being rated would need a different number of raters than their ratings were collected for"
        ),
        "error_tags": _("ratings already given chose among the old tags, so tag counts would compare different lists"),
    }

    csv_json_fields = ("summaries",)
    computes_agreement = True
    urls = ("annotation.kinds.summary.urls",)
    job_handlers = {"summary_intrinsic": "annotation.kinds.summary.measures.summary_measures_job"}
    job_titles = {"summary_intrinsic": _("intrinsic measures")}

    def guide_sections(self, settings: dict) -> tuple:
        return summary_guide(settings["error_tags"])

    # --- settings -----------------------------------------------------------------------

    def check_settings(self, settings: dict) -> None:
        super().check_settings(settings)
        tags = settings["error_tags"]
        errors = []
        if len(tags) > MAX_TAGS:
            errors.append(FieldError("settings.error_tags", gettext("lists more than %(n)s tags") % {"n": MAX_TAGS}))
        seen = set()
        for index, tag in enumerate(tags):
            field = f"settings.error_tags[{index}]"
            if not isinstance(tag, str) or not tag:
                errors.append(FieldError(field, gettext("must be a non-empty string")))
            elif fault := bidi_control(tag) or forbidden_character(tag):
                errors.append(FieldError(field, fault_text(fault)))
            elif len(tag) > MAX_TAG_LENGTH or not _TAG_RE.match(tag):
                errors.append(
                    FieldError(
                        field,
                        gettext("must be an identifier: letters, digits, _ . - only, at most %(n)s characters")
                        % {"n": MAX_TAG_LENGTH},
                    )
                )
            elif tag in seen:
                errors.append(FieldError(field, gettext("%(tag)s is listed twice") % {"tag": repr(tag)}))
            else:
                seen.add(tag)
        check_range(settings, "min_reference_words", *MIN_REFERENCE_WORDS_RANGE)
        reference = settings["reference_system"]
        if reference and (len(reference) > MAX_TAG_LENGTH or not _TAG_RE.match(reference)):
            errors.append(
                FieldError(
                    "settings.reference_system",
                    gettext("must be empty or a system name: letters, digits, _ . - only, at most %(n)s characters")
                    % {"n": MAX_TAG_LENGTH},
                )
            )
        if errors:
            raise InvalidInput(gettext("invalid settings"), errors=errors)

    def after_settings_change(self, project, before: dict, after: dict) -> None:
        """A new reference system changes every item's ROUGE: measure every item again."""
        if before.get("reference_system") != after.get("reference_system"):
            from annotation.kinds.summary.measures import summary_measures_enqueue_on_commit

            summary_measures_enqueue_on_commit(project, remeasure=True)

    def error_tags(self, settings: dict) -> list[str]:
        return list(settings["error_tags"])

    # --- import -------------------------------------------------------------------------

    def parse_record(self, record: dict, row: int) -> tuple[ItemRow | None, list[FieldError]]:
        problems = RowProblems(row)
        return parse_summary_record(record, row, problems, self.common_fields(record, problems))

    def import_hold_out(self, project, row: ItemRow) -> str | None:
        """HeSum §3.1: an article not in the project's language, or whose reference summary
        (the `reference_system`'s) has fewer than `min_reference_words` whitespace-separated
        words, is held out, each filter unless its setting turns it off."""
        return summary_hold_out(row.payload, self.project_settings(project), project.language)

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
                gettext('must be an object like {"ratings": {"0": {"coherence": 4, "completeness": 3, "errors": []}}}'),
                field="value",
            )
        errors: list[FieldError] = []
        for key in sorted(set(value) - {"ratings"}, key=str):
            errors.append(_key_error("value", key, gettext("is not a field of summary_rating; expected ratings")))
        ratings = value.get("ratings")
        if not isinstance(ratings, dict):
            errors.append(
                FieldError("value.ratings", gettext('is required: an object keyed by summary index ("0", "1", ...)'))
            )
            raise InvalidInput(gettext("invalid value"), errors=errors)
        n = len(item.payload["summaries"])
        known_tags = self.error_tags(self.settings_for(item.project.settings))
        indices = [str(d) for d in range(n)]
        for key in sorted(set(ratings) - set(indices), key=str):
            errors.append(
                _key_error(
                    "value.ratings", key, gettext("is not a summary index; expected 0 to %(last)s") % {"last": n - 1}
                )
            )
        cleaned: dict[str, dict] = {}
        for key in indices:
            field = f"value.ratings.{key}"
            rating = ratings.get(key)
            if rating is None:
                errors.append(FieldError(field, gettext("is required: every summary must be rated")))
                continue
            if not isinstance(rating, dict):
                errors.append(FieldError(field, gettext('must be an object {"coherence", "completeness", "errors"}')))
                continue
            for extra in sorted(set(rating) - {*CRITERIA, "errors"}, key=str):
                errors.append(
                    _key_error(
                        field, extra, gettext("is not a field of a rating; expected coherence, completeness, errors")
                    )
                )
            entry: dict[str, Any] = {}
            for criterion in CRITERIA:
                score = rating.get(criterion)
                if score is None:
                    errors.append(FieldError(f"{field}.{criterion}", gettext("is required")))
                elif isinstance(score, bool) or not isinstance(score, int):
                    errors.append(
                        FieldError(
                            f"{field}.{criterion}",
                            gettext("must be an integer from %(low)s to %(high)s (a JSON number, not a string)")
                            % {"low": MIN_SCORE, "high": MAX_SCORE},
                        )
                    )
                elif not MIN_SCORE <= score <= MAX_SCORE:
                    errors.append(FieldError(f"{field}.{criterion}", between(MIN_SCORE, MAX_SCORE)))
                else:
                    entry[criterion] = score
            tags = rating.get("errors", [])
            if not isinstance(tags, list):
                errors.append(FieldError(f"{field}.errors", gettext("must be a list of error tags")))
            else:
                seen: list[str] = []
                for tag in tags:
                    if not isinstance(tag, str) or forbidden_character(tag):
                        errors.append(FieldError(f"{field}.errors", gettext("must hold error tags (strings)")))
                    elif tag not in known_tags:
                        errors.append(
                            FieldError(
                                f"{field}.errors",
                                gettext("unknown error tag %(tag)s; known: %(known)s")
                                % {"tag": repr(tag), "known": join_list(known_tags)},
                            )
                        )
                    elif tag in seen:
                        errors.append(
                            FieldError(f"{field}.errors", gettext("lists %(tag)s twice") % {"tag": repr(tag)})
                        )
                    else:
                        seen.append(tag)
                entry["errors"] = seen
            cleaned[key] = entry
        if errors:
            raise InvalidInput(gettext("invalid value"), errors=errors)
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

    # The report is kept by the changed items on the worker (counts.summary_counts): its
    # sums as counts, its means as exact integer sums, its intervals and correlations from
    # the multisets of mean ratings and (rating, score) pairs.
    report_counted = True
    report_counts_version = "summary-1"

    def report_counts(self, project, item_ids: list[int]) -> dict[int, dict[str, dict[str, int]]]:
        from annotation.kinds.summary.counts import summary_counts

        return summary_counts(project, item_ids)

    def report_sections_from_counts(self, project, counts: dict[str, dict[str, int]]) -> dict:
        from annotation.kinds.summary.counts import summary_sections_from_counts

        return summary_sections_from_counts(project, self.settings_for(project.settings), counts)

    # --- export -------------------------------------------------------------------------

    def release_texts(self, payload: dict) -> dict[str, list[str]]:
        summaries = [s.get("text") for s in payload.get("summaries") or [] if isinstance(s, dict)]
        texts = {"article": [payload.get("article")], "summary": summaries}
        return release_texts_of(texts)

    def export_record(self, item, facts) -> dict:
        """See `formats.summary_export_record`."""
        return summary_export_record(item, facts)

    def export_csv_columns(self) -> tuple[str, ...]:
        return summary_csv_columns()

    # --- pages and review ------------------------------------------------------------

    def project_links(self, project) -> list[ProjectLink]:
        return [ProjectLink("summary-results", _("Summary results"))]


def _key_error(parent: str, key: Any, message: str) -> FieldError:
    reason = forbidden_character(key) if isinstance(key, str) else None
    if reason:
        # Never echo a key that cannot be encoded back (a lone surrogate would 500).
        return FieldError(parent, gettext("a key %(reason)s") % {"reason": fault_text(reason)})
    return FieldError(f"{parent}.{key}", message)
