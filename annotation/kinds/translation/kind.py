"""`translation_rating`: blind side-by-side rating of machine translations (LCHAIM §2.2).

Import
------
* `jsonl` (docs/api.md "Items"): `{"id", "source": {"premise", "hypothesis", "label"}, "candidates":
  [{"system", "premise", "hypothesis", "back_translation"?: {"premise", "hypothesis"}}],
  "group"?, "split"?}`; `csv` with the same columns, `source` and `candidates` holding JSON.
  `label` is e/n/c or entailment/neutral/contradiction: kept as given in the payload, its
  long form is the item's reference label.
* The seeds' own files (ConTRoL JSONL as the source, one LCHAIM-style JSON array per
  translation system, joined by `uid`) arrive through `POST /api/projects/{slug}/import-lchaim/`
  (api.py), a combined multipart upload: `split`, `source` (ConTRoL JSONL),
  `system` + `translation` (repeated, aligned by order) and optional `back_translation`
  files aligned with the systems. `lchaim_records` (formats.py) turns them into the JSONL records
  above: the external id is `<split>:<uid>` (ConTRoL uids restart in every split) and a run
  of consecutive records with the same English premise is one group.

Blind, shuffled candidates
--------------------------
The candidates keep their import order in the payload (the *candidate index*). An
annotator sees them in a per-item random order, without system names: display position
`d` shows candidate `candidate_order(item)[d]`. The order is stored in
`Item.computed["candidate_order"]` when the LCHAIM import or a submit touches the item; until
then it is derived from `Item.shuffle_key`, a random number stored with every item at
import, so the mapping never changes once the item exists.

Values
------
The annotator submits `{"ratings": {"<display index>": {"accuracy": 1-5, "fluency": 1-5,
"cultural_fit": 1-5, "label_valid": bool}}}`: every candidate on screen, every criterion.
Scores are JSON integers only: `5.0`, `"5"`, and Persian or Arabic-Indic digit strings
(`"۵"`, `"٥"`) are refused with a 400 naming the field — the page maps the Persian digit
keys to numbers itself, so the API never needs to guess. The *stored* value is keyed by
candidate index (import order), so it names a system through the payload, and keeps the
order the annotator saw: `{"ratings": {"<candidate index>": {...}}, "display_order": [...]}`.
The submit answer gives the annotator back the ratings keyed by display place, without the
order: candidate indices name systems through the import order, so nothing an annotator
reaches carries them (tests/kinds/translation/test_blind.py walks every route).
"""

from __future__ import annotations

import re
from typing import Any

from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from annotation.errors import FieldError, InvalidInput
from annotation.kinds.base import ProjectLink, ReleaseFile, release_texts_of
from annotation.kinds.lchaim.formats import control_jsonl, lchaim_json, lchaim_record, lchaim_uid, system_folder
from annotation.kinds.nli.labels import LABELS, canonical_label
from annotation.kinds.rating import RatingKind
from annotation.kinds.settings import RATING_OVERLAP_SETTINGS, between
from annotation.rows import ItemRow, RowProblems, require_text
from annotation.wording import join_list

from .candidates import (
    BINARY_CRITERION,
    CRITERIA,
    EXPORTED_FIGURES,
    MAX_CANDIDATES,
    SCORE_CRITERIA,
    SCORE_MAX,
    SCORE_MIN,
    candidate_order,
    candidate_ratings,
    exported_candidates,
)
from .guide import TRANSLATION_GUIDE
from .results import translation_agreement_compute, translation_table1

_ASCII_INDEX = re.compile(r"\A(0|[1-9][0-9]{0,2})\Z")


def _integer_from() -> str:
    return gettext("must be an integer from %(low)s to %(high)s") % {"low": SCORE_MIN, "high": SCORE_MAX}


def _score(value: Any, field: str) -> int:
    # bool is an int in Python; JSON true is not a score.
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.strip() and all(ch.isdecimal() for ch in value.strip()):
            raise InvalidInput(
                gettext(
                    "must be a JSON integer from %(low)s to %(high)s, not the string %(value)s (digit strings, "
                    "Persian and Arabic-Indic ones included, are refused)"
                )
                % {"low": SCORE_MIN, "high": SCORE_MAX, "value": repr(value)},
                field=field,
            )
        raise InvalidInput(_integer_from(), field=field)
    if not SCORE_MIN <= value <= SCORE_MAX:
        raise InvalidInput(_integer_from(), field=field)
    return value


def _text_pair(record: Any, name: str, problems: RowProblems) -> dict | None:
    """A {"premise", "hypothesis"} object, texts unchanged."""
    if not isinstance(record, dict):
        problems.add(name, gettext("must be an object with premise and hypothesis"))
        return None
    inner = RowProblems(problems.row)
    premise = require_text(record, "premise", inner)
    hypothesis = require_text(record, "hypothesis", inner)
    for error in inner.errors:
        problems.add(f"{name}.{error.field}", error.message)
    return None if inner.errors else {"premise": premise, "hypothesis": hypothesis}


class TranslationRatingKind(RatingKind):
    name = "translation_rating"
    hub_task_category = "translation"
    title = _("Translation rating")
    short_title = _("Translation rating")
    recompute_pages = ("lchaim-results",)

    # What report_sections adds to the project's report, for the API's schema.
    report_keys = {
        "table1": "per system and criterion mean with 95% CI and alpha (LCHAIM Table 1)",
    }
    template = "translation/annotate.html"
    # LCHAIM §2.2: two raters per sample, a stratified sample of 200, samples whose released
    # translation back-translates below 0.75 similarity removed. `released_system` names
    # that translation's system (LCHAIM chose Amazon Translate after Table 1); empty: none.
    default_settings = {
        "raters_per_item": 2,
        "alpha_level_scores": "ordinal",
        "back_translation_threshold": 0.75,
        "sample_size": 200,
        "released_system": "",
        **RATING_OVERLAP_SETTINGS,
    }
    settings_help = {
        "raters_per_item": _("Raters of each item (LCHAIM: two of the four)."),
        "alpha_level_scores": _("Level of measurement of the 1-5 scores in Krippendorff's alpha: ordinal or interval."),
        "back_translation_threshold": _(
            "Items whose back-translation similarity falls below this are filtered out (LCHAIM: 0.75)."
        ),
        "sample_size": _("Items drawn by stratified sampling for rating (LCHAIM: 200)."),
        "released_system": _("The system whose translation is released; staff only, as it would unblind raters."),
    }
    settings_labels = {
        "raters_per_item": _("Raters per item"),
        "alpha_level_scores": _("Level of the scores in alpha"),
        "back_translation_threshold": _("Back-translation similarity threshold"),
        "sample_size": _("Sample size"),
        "released_system": _("Released system"),
    }
    settings_units = {"raters_per_item": _("raters"), "sample_size": _("items")}
    settings_choices = {"alpha_level_scores": {"ordinal": _("ordinal"), "interval": _("interval")}}
    round_bound_settings = {
        "raters_per_item": _(
            "items being rated would need a different number of raters than their ratings were collected for"
        ),
    }

    staff_only_settings = ("released_system",)
    csv_json_fields = ("source", "candidates")
    export_pages = (
        (_("ratings (jsonl)"), "api-ratings-export", "format=jsonl&status=all"),
        (_("ratings (csv)"), "api-ratings-export", "format=csv&status=all"),
    )
    computes_agreement = True
    urls = ("annotation.kinds.translation.urls", "annotation.kinds.lchaim.urls")
    job_handlers = {"back_translation": "annotation.kinds.translation.back_translation.back_translation_compute_job"}
    job_titles = {"back_translation": _("back-translation")}

    def guide_sections(self, settings: dict) -> tuple:
        return TRANSLATION_GUIDE

    def check_settings(self, settings: dict) -> None:
        super().check_settings(settings)
        if settings["alpha_level_scores"] not in ("ordinal", "interval"):
            raise InvalidInput(gettext("must be ordinal or interval"), field="settings.alpha_level_scores")
        if not 0.0 <= settings["back_translation_threshold"] <= 1.0:
            raise InvalidInput(between(0, 1), field="settings.back_translation_threshold")
        if len(settings["released_system"]) > 200:
            raise InvalidInput(gettext("at most %(n)s characters") % {"n": 200}, field="settings.released_system")
        if not 1 <= settings["sample_size"] <= 1_000_000:
            raise InvalidInput(between(1, 1000000), field="settings.sample_size")

    # --- import ------------------------------------------------------------------------------

    def parse_record(self, record: dict, row: int) -> tuple[ItemRow | None, list[FieldError]]:
        problems = RowProblems(row)
        common = self.common_fields(record, problems)
        source = record.get("source")
        label = ""
        source_payload = None
        if not isinstance(source, dict):
            problems.add("source", gettext("must be an object with premise, hypothesis and label"))
        else:
            source_payload = _text_pair(source, "source", problems)
            label = canonical_label(source.get("label")) or ""
            if not label:
                problems.add(
                    "source.label", gettext("must be one of %(choices)s (or e, n, c)") % {"choices": join_list(LABELS)}
                )
        candidates = record.get("candidates")
        stored_candidates = []
        if not isinstance(candidates, list) or not candidates:
            problems.add("candidates", gettext("must be a non-empty list"))
        elif len(candidates) > MAX_CANDIDATES:
            problems.add("candidates", gettext("at most %(n)s candidates") % {"n": MAX_CANDIDATES})
        else:
            seen: dict[str, int] = {}
            for index, candidate in enumerate(candidates):
                where = f"candidates[{index}]"
                if not isinstance(candidate, dict):
                    problems.add(where, gettext("must be an object with system, premise and hypothesis"))
                    continue
                # The export's figures of a candidate (its index, ratings, means) are not
                # content: a re-imported export is rated anew.
                unknown = set(candidate) - {"system", "premise", "hypothesis", "back_translation", *EXPORTED_FIGURES}
                if unknown:
                    problems.add(
                        where, gettext("unknown field(s): %(unknown)s") % {"unknown": join_list(sorted(unknown))}
                    )
                    continue
                inner = RowProblems(row)
                system = require_text(candidate, "system", inner, identifier=True)
                pair = _text_pair(candidate, where, problems)
                for error in inner.errors:
                    problems.add(f"{where}.{error.field}", error.message)
                if system and system in seen:
                    problems.add(
                        f"{where}.system",
                        gettext("system “%(system)s” appears twice (first in candidate %(first)s)")
                        % {"system": system, "first": seen[system] + 1},
                    )
                elif system:
                    seen[system] = index
                stored = {"system": system, **(pair or {})}
                if candidate.get("back_translation") is not None:
                    back = _text_pair(candidate["back_translation"], f"{where}.back_translation", problems)
                    if back:
                        stored["back_translation"] = back
                stored_candidates.append(stored)
        if problems.errors:
            return None, problems.errors
        payload = {"source": {**source_payload, "label": source["label"]}, "candidates": stored_candidates}
        return ItemRow(payload=payload, reference_label=label, position=row, **common), []

    # --- annotating --------------------------------------------------------------------------

    def annotator_payload(self, item) -> dict:
        """The English source with its label (the rater judges whether it still holds) and
        the candidates' texts in the item's display order: no system names, no
        back-translations, no candidate indices."""
        source = item.payload["source"]
        candidates = item.payload["candidates"]
        return {
            "source": {
                "premise": source["premise"],
                "hypothesis": source["hypothesis"],
                "label": canonical_label(source.get("label")) or item.reference_label,
            },
            "candidates": [
                {"premise": candidates[index]["premise"], "hypothesis": candidates[index]["hypothesis"]}
                for index in candidate_order(item)
            ],
        }

    def clean_value(self, value: Any, item) -> dict:
        """Display indices in, candidate indices out (see the module docstring)."""
        if not isinstance(value, dict):
            raise InvalidInput(gettext('must be an object like {"ratings": {"0": {...}}}'), field="value")
        unknown = set(value) - {"ratings"}
        if unknown:
            raise InvalidInput(
                gettext("unknown field(s): %(unknown)s") % {"unknown": join_list(sorted(map(str, unknown)))},
                field="value",
            )
        ratings = value.get("ratings")
        if not isinstance(ratings, dict):
            raise InvalidInput(gettext("must be an object keyed by candidate index"), field="value.ratings")
        order = candidate_order(item)
        n = len(order)
        errors: list[FieldError] = []
        cleaned: dict[str, dict] = {}
        for key in ratings:
            if not isinstance(key, str) or not _ASCII_INDEX.match(key) or int(key) >= n:
                errors.append(
                    FieldError(
                        f"value.ratings.{key}",
                        gettext("no such candidate: indices are 0 to %(last)s (ASCII digits)") % {"last": n - 1},
                    )
                )
        for display in range(n):
            key = str(display)
            field = f"value.ratings.{key}"
            scores = ratings.get(key)
            if scores is None:
                errors.append(FieldError(field, gettext("every candidate must be rated")))
                continue
            if not isinstance(scores, dict):
                errors.append(
                    FieldError(
                        field, gettext("must be an object with %(criteria)s") % {"criteria": ", ".join(CRITERIA)}
                    )
                )
                continue
            extra = set(scores) - set(CRITERIA)
            if extra:
                errors.append(
                    FieldError(
                        field, gettext("unknown criteria: %(extra)s") % {"extra": ", ".join(sorted(map(str, extra)))}
                    )
                )
            row = {}
            for criterion in SCORE_CRITERIA:
                if criterion not in scores:
                    errors.append(FieldError(f"{field}.{criterion}", gettext("is required")))
                    continue
                try:
                    row[criterion] = _score(scores[criterion], f"{field}.{criterion}")
                except InvalidInput as exc:
                    errors.extend(exc.errors)
            valid = scores.get(BINARY_CRITERION)
            if not isinstance(valid, bool):
                errors.append(FieldError(f"{field}.{BINARY_CRITERION}", gettext("is required: true or false")))
            else:
                row[BINARY_CRITERION] = valid
            cleaned[str(order[display])] = row
        if errors:
            raise InvalidInput(gettext("invalid ratings; nothing was stored"), errors=errors)
        return {"ratings": dict(sorted(cleaned.items(), key=lambda kv: int(kv[0]))), "display_order": order}

    def annotator_value(self, value: dict, item) -> dict:
        """The ratings keyed by display place again, without the order: the candidate index
        names a system through the import order, so the annotator never sees it."""
        order = value.get("display_order") or candidate_order(item)
        ratings = value.get("ratings") or {}
        return {
            "ratings": {
                str(display): ratings[str(index)] for display, index in enumerate(order) if str(index) in ratings
            }
        }

    def after_submit(self, annotation, item, settings: dict) -> None:
        """Store the order the annotator saw on the item (locked by the caller), so that the
        mapping is on record even for items imported as plain JSONL."""
        computed = dict(item.computed or {})
        if computed.get("candidate_order") != annotation.value["display_order"]:
            computed["candidate_order"] = annotation.value["display_order"]
            item.computed = computed
            item.save(update_fields=["computed"])

    # --- agreement and report ----------------------------------------------------------------

    def compute_agreement(self, project, job) -> dict:
        return translation_agreement_compute(project, job, self.settings_for(project.settings))

    def report_sections(self, project) -> dict:
        """`table1`: LCHAIM's Table 1 from the stored reports (one query); `back_translation`:
        the filter's figures, read over every item (see back_translation.py)."""
        from .back_translation import back_translation_report

        return {"table1": translation_table1(project), "back_translation": back_translation_report(project)}

    # The back-translation figures are kept by the changed items on the worker (counts.py):
    # the instances each item is the first holder of, exact sums of their scores, and the
    # items removed and restored; Table 1 is read from the alpha reports.
    report_counted = True
    report_counts_version = "translation-1"

    def report_counts(self, project, item_ids: list[int]) -> dict[int, dict[str, dict[str, int]]]:
        from .counts import translation_counts

        return translation_counts(project, item_ids, self.settings_for(project.settings)["back_translation_threshold"])

    def report_related(self, project, item_ids: list[int]) -> list[int]:
        from .counts import translation_related

        return translation_related(project, item_ids)

    def report_sections_from_counts(self, project, counts: dict[str, dict[str, int]]) -> dict:
        from .counts import back_translation_from_counts

        return {
            "table1": translation_table1(project),
            "back_translation": back_translation_from_counts(self.settings_for(project.settings), counts),
        }

    def after_settings_change(self, project, before: dict, after: dict) -> None:
        """The report shows the threshold and the released system, and counts the scores
        below the threshold: a change of either reads every item again."""
        if any(before.get(key) != after.get(key) for key in ("back_translation_threshold", "released_system")):
            from annotation.services.aggregation import aggregation_request_on_commit

            aggregation_request_on_commit(project.pk, None)

    # --- export --------------------------------------------------------------------------------

    def export_record(self, item, facts) -> dict:
        """One record per item: the source, and per candidate (import order) its system,
        texts, each rater's scores (pseudonymous rater ids, the order they were stored in)
        and the means over raters."""
        per_candidate = exported_candidates(item, candidate_ratings(item, facts.annotations))
        source = item.payload.get("source", {})
        return {
            "id": item.external_id,
            "source": {
                "premise": source.get("premise", ""),
                "hypothesis": source.get("hypothesis", ""),
                "label": source.get("label"),
            },
            "reference_label": item.reference_label or None,
            "group": item.group,
            "split": item.split,
            "status": item.status,
            "n": len(facts.annotations),
            "flags": list(item.flags or []),
            "back_translation": (item.computed or {}).get("back_translation"),
            "annotators": [annotator for annotator, _ in facts.annotations],
            "candidates": per_candidate,
        }

    def release_files(self, project, split: str, items):
        """The split as the seeds publish it (annotation/kinds/lchaim/formats.py): the
        source as ConTRoL's JSONL (config `control`) and each system's translations as an
        LCHAIM JSON array (config `lchaim_<system>`), each record with the source's label.
        These are the files the LCHAIM import reads, so a release imports back."""
        sources: list[dict] = []
        by_system: dict[str, list[dict]] = {}
        for item in items.iterator(chunk_size=2000):
            uid = lchaim_uid(item)
            source = item.payload.get("source") or {}
            label = item.reference_label or source.get("label")
            sources.append(lchaim_record(uid, source.get("premise"), source.get("hypothesis"), label))
            for candidate in item.payload.get("candidates") or []:
                by_system.setdefault(candidate.get("system") or "", []).append(
                    lchaim_record(uid, candidate.get("premise"), candidate.get("hypothesis"), label)
                )
        yield ReleaseFile(f"control/{split}.jsonl", control_jsonl(sources), config="control")
        for system, records in by_system.items():
            folder = system_folder(system)
            yield ReleaseFile(f"lchaim/{folder}/{split}.json", lchaim_json(records), config=f"lchaim_{folder}")

    def duplicate_texts(self, payload: dict) -> tuple[str, str] | None:
        """The English source pair: near-duplicate sources give near-duplicate samples
        whatever the systems made of them, and the candidates (one per system, each
        system's wording) would let a copy hide behind a different translation."""
        source = payload.get("source")
        if not isinstance(source, dict):
            return None
        return source.get("premise") or "", source.get("hypothesis") or ""

    def release_texts(self, payload: dict) -> dict[str, list[str]]:
        source = payload.get("source") if isinstance(payload.get("source"), dict) else {}
        candidates = [c for c in payload.get("candidates") or [] if isinstance(c, dict)]
        texts = {f"source {part}": [source.get(part)] for part in ("premise", "hypothesis")}
        texts.update({f"translation {part}": [c.get(part) for c in candidates] for part in ("premise", "hypothesis")})
        return release_texts_of(texts)

    def export_csv_columns(self) -> tuple[str, ...]:
        return ("id", "source", "reference_label", "group", "split", "status", "n", "flags", "annotators", "candidates")

    # --- pages and review ------------------------------------------------------------

    def project_links(self, project) -> list[ProjectLink]:
        return [ProjectLink("lchaim-results", _("LCHAIM results"))]
