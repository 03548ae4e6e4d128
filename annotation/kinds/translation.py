"""`translation_rating`: blind side-by-side rating of machine translations (LCHAIM §2.2).

Import
------
* `jsonl` (API.md): `{"id", "source": {"premise", "hypothesis", "label"}, "candidates":
  [{"system", "premise", "hypothesis", "back_translation"?: {"premise", "hypothesis"}}],
  "group"?, "split"?}`; `csv` with the same columns, `source` and `candidates` holding JSON.
  `label` is e/n/c or entailment/neutral/contradiction: kept as given in the payload, its
  long form is the item's reference label.
* The seeds' own files (ConTRoL JSONL as the source, one LCHAIM-style JSON array per
  translation system, joined by `uid`) arrive through `POST /api/projects/{slug}/import-lchaim/`
  (api/views_lchaim.py), a combined multipart upload: `split`, `source` (ConTRoL JSONL),
  `system` + `translation` (repeated, aligned by order) and optional `back_translation`
  files aligned with the systems. `lchaim_records` below turns them into the JSONL records
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
"""

from __future__ import annotations

import json
import random
import re
from collections import defaultdict
from typing import Any

from annotation import safe_json
from annotation.errors import FieldError, InvalidInput
from annotation.metrics.text import bidi_control
from annotation.rows import ItemRow, RowProblems, read_jsonl_objects, require_text

from .base import Kind
from .nli.labels import LABELS, canonical_label

SCORE_CRITERIA = ("accuracy", "fluency", "cultural_fit")
BINARY_CRITERION = "label_valid"
CRITERIA = (*SCORE_CRITERIA, BINARY_CRITERION)
SCORE_MIN, SCORE_MAX = 1, 5
MAX_CANDIDATES = 20
LOW_BACK_TRANSLATION_FLAG = "low_back_translation"
_ASCII_INDEX = re.compile(r"\A(0|[1-9][0-9]{0,2})\Z")


def candidate_order(item) -> list[int]:
    """Display position → candidate index for `item`. The stored order when it is a
    permutation of the item's candidates, else the one derived from its shuffle key."""
    n = len(item.payload.get("candidates") or [])
    stored = (item.computed or {}).get("candidate_order") if isinstance(item.computed, dict) else None
    if isinstance(stored, list) and sorted(x for x in stored if isinstance(x, int) and not isinstance(x, bool)) == list(range(n)) and len(stored) == n:
        return list(stored)
    return derived_order(item.shuffle_key, n)


def derived_order(shuffle_key: float, n: int) -> list[int]:
    """A random permutation of range(n) seeded by the item's stored random shuffle key
    (uniform over permutations; independent between items)."""
    order = list(range(n))
    random.Random(f"mashov.candidate-order:{shuffle_key!r}").shuffle(order)
    return order


def _score(value: Any, field: str) -> int:
    # bool is an int in Python; JSON true is not a score.
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.strip() and all(ch.isdecimal() for ch in value.strip()):
            raise InvalidInput(
                f"must be a JSON integer from {SCORE_MIN} to {SCORE_MAX}, not the string {value!r} (digit strings, "
                "Persian and Arabic-Indic ones included, are refused)",
                field=field,
            )
        raise InvalidInput(f"must be an integer from {SCORE_MIN} to {SCORE_MAX}", field=field)
    if not SCORE_MIN <= value <= SCORE_MAX:
        raise InvalidInput(f"must be an integer from {SCORE_MIN} to {SCORE_MAX}", field=field)
    return value


def _text_pair(record: Any, name: str, problems: RowProblems) -> dict | None:
    """A {"premise", "hypothesis"} object, texts unchanged."""
    if not isinstance(record, dict):
        problems.add(name, "must be an object with premise and hypothesis")
        return None
    inner = RowProblems(problems.row)
    premise = require_text(record, "premise", inner)
    hypothesis = require_text(record, "hypothesis", inner)
    for error in inner.errors:
        problems.add(f"{name}.{error.field}", error.message)
    return None if inner.errors else {"premise": premise, "hypothesis": hypothesis}


class TranslationRatingKind(Kind):
    name = "translation_rating"
    title = "Translation rating"
    template = "annotation/annotate_translation.html"
    default_settings = {"raters_per_item": 2, "alpha_level_scores": "ordinal", "back_translation_threshold": 0.75}
    csv_json_fields = ("source", "candidates")
    computes_agreement = True
    page_urls = ("annotation.urls_lchaim",)
    api_urls = ("api.urls_lchaim",)
    job_handlers = {"back_translation": "annotation.services.back_translation.back_translation_compute_job"}

    def check_settings(self, settings: dict) -> None:
        if not 1 <= settings["raters_per_item"] <= 50:
            raise InvalidInput("must be between 1 and 50", field="settings.raters_per_item")
        if settings["alpha_level_scores"] not in ("ordinal", "interval"):
            raise InvalidInput("must be ordinal or interval", field="settings.alpha_level_scores")
        if not 0.0 <= settings["back_translation_threshold"] <= 1.0:
            raise InvalidInput("must be between 0 and 1", field="settings.back_translation_threshold")

    # --- import ------------------------------------------------------------------------------

    def parse_record(self, record: dict, row: int) -> tuple[ItemRow | None, list[FieldError]]:
        problems = RowProblems(row)
        common = self.common_fields(record, problems)
        source = record.get("source")
        label = ""
        source_payload = None
        if not isinstance(source, dict):
            problems.add("source", "must be an object with premise, hypothesis and label")
        else:
            source_payload = _text_pair(source, "source", problems)
            label = canonical_label(source.get("label")) or ""
            if not label:
                problems.add("source.label", f"must be one of {', '.join(LABELS)} (or e, n, c)")
        candidates = record.get("candidates")
        stored_candidates = []
        if not isinstance(candidates, list) or not candidates:
            problems.add("candidates", "must be a non-empty list")
        elif len(candidates) > MAX_CANDIDATES:
            problems.add("candidates", f"at most {MAX_CANDIDATES} candidates")
        else:
            seen: dict[str, int] = {}
            for index, candidate in enumerate(candidates):
                where = f"candidates[{index}]"
                if not isinstance(candidate, dict):
                    problems.add(where, "must be an object with system, premise and hypothesis")
                    continue
                unknown = set(candidate) - {"system", "premise", "hypothesis", "back_translation"}
                if unknown:
                    problems.add(where, f"unknown field(s): {', '.join(sorted(unknown))}")
                    continue
                inner = RowProblems(row)
                system = require_text(candidate, "system", inner, identifier=True)
                pair = _text_pair(candidate, where, problems)
                for error in inner.errors:
                    problems.add(f"{where}.{error.field}", error.message)
                if system and system in seen:
                    problems.add(f"{where}.system", f"system {system!r} appears twice (first in candidates[{seen[system]}])")
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

    def votes_needed(self, item, settings: dict) -> int:
        return settings["raters_per_item"]

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
            raise InvalidInput('must be an object like {"ratings": {"0": {...}}}', field="value")
        unknown = set(value) - {"ratings"}
        if unknown:
            raise InvalidInput(f"unknown field(s): {', '.join(sorted(unknown))}", field="value")
        ratings = value.get("ratings")
        if not isinstance(ratings, dict):
            raise InvalidInput("must be an object keyed by candidate index", field="value.ratings")
        order = candidate_order(item)
        n = len(order)
        errors: list[FieldError] = []
        cleaned: dict[str, dict] = {}
        for key in ratings:
            if not isinstance(key, str) or not _ASCII_INDEX.match(key) or int(key) >= n:
                errors.append(FieldError(f"value.ratings.{key}", f"no such candidate: indices are 0 to {n - 1} (ASCII digits)"))
        for display in range(n):
            key = str(display)
            field = f"value.ratings.{key}"
            scores = ratings.get(key)
            if scores is None:
                errors.append(FieldError(field, "every candidate must be rated"))
                continue
            if not isinstance(scores, dict):
                errors.append(FieldError(field, f"must be an object with {', '.join(CRITERIA)}"))
                continue
            extra = set(scores) - set(CRITERIA)
            if extra:
                errors.append(FieldError(field, f"unknown criteria: {', '.join(sorted(map(str, extra)))}"))
            row = {}
            for criterion in SCORE_CRITERIA:
                if criterion not in scores:
                    errors.append(FieldError(f"{field}.{criterion}", "is required"))
                    continue
                try:
                    row[criterion] = _score(scores[criterion], f"{field}.{criterion}")
                except InvalidInput as exc:
                    errors.extend(exc.errors)
            valid = scores.get(BINARY_CRITERION)
            if not isinstance(valid, bool):
                errors.append(FieldError(f"{field}.{BINARY_CRITERION}", "is required: true or false"))
            else:
                row[BINARY_CRITERION] = valid
            cleaned[str(order[display])] = row
        if errors:
            raise InvalidInput("invalid ratings; nothing was stored", errors=errors)
        return {"ratings": dict(sorted(cleaned.items(), key=lambda kv: int(kv[0]))), "display_order": order}

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
        """`table1`: LCHAIM's Table 1 from the stored reports (one query)."""
        return {"table1": translation_table1(project)}

    # --- export --------------------------------------------------------------------------------

    def export_record(self, item, facts) -> dict:
        """One record per item: the source, and per candidate (import order) its system,
        texts, each rater's scores (pseudonymous rater ids, the order they were stored in)
        and the means over raters."""
        per_candidate = candidate_ratings(item, facts.annotations)
        source = item.payload.get("source", {})
        return {
            "id": item.external_id,
            "source": {"premise": source.get("premise", ""), "hypothesis": source.get("hypothesis", ""), "label": source.get("label")},
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

    def export_csv_columns(self) -> tuple[str, ...]:
        return ("id", "source", "reference_label", "group", "split", "status", "n", "flags", "annotators", "candidates")


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
        means = {criterion: (sum(v) / len(v) if v else None) for criterion, v in ((c, sums.get(c, [])) for c in CRITERIA)}
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


# --- the seeds' own files ---------------------------------------------------------------------


def _json_lines(text: str, field: str) -> list[tuple[int, Any]]:
    rows = []
    for number, value, error, member in read_jsonl_objects(text):
        if error is not None:
            value = FieldError(f"{field}.{member}" if member else field, error, number)
        rows.append((number, value))
    return rows


def _uid_records(rows, field: str, errors: list[FieldError]) -> dict[str, dict]:
    """uid → {premise, hypothesis, label?} with a row number; bad rows go to `errors`."""
    out: dict[str, dict] = {}
    for number, record in rows:
        if isinstance(record, FieldError):
            errors.append(record)
            continue
        if not isinstance(record, dict):
            errors.append(FieldError(field, "must be a JSON object", number))
            continue
        uid = record.get("uid")
        if not isinstance(uid, str) or not uid or bidi_control(uid) or len(uid) > 150:
            errors.append(FieldError(f"{field}.uid", "must be a non-empty string without bidi controls", number))
            continue
        if uid in out:
            errors.append(FieldError(f"{field}.uid", f"duplicate uid {uid!r} (first in row {out[uid]['_row']})", number))
            continue
        out[uid] = {**record, "_row": number}
    return out


def _read_translation(text: str, field: str, errors: list[FieldError]) -> dict[str, dict]:
    try:
        data = safe_json.loads(text)
    except safe_json.UnsafeJSON as exc:
        errors.append(FieldError(field, str(exc)))
        return {}
    if not isinstance(data, list):
        errors.append(FieldError(field, "must be a JSON array of {uid, premise, hypothesis, label} records"))
        return {}
    return _uid_records(list(enumerate(data, start=1)), field, errors)


def lchaim_records(
    *, split: str, source_text: str | None, systems: list[str], translations: list[str], back_translations: list[str]
) -> tuple[list[dict], list[dict], list[FieldError]]:
    """Join ConTRoL source lines and LCHAIM-style translations by uid.

    Returns (records for new items in the JSONL shape, candidate lists for existing items as
    [{"id", "candidates": [...]}] when no source is given, errors). With a source, every
    source uid needs a translation from every system; a translation uid without a source
    line is an error (a typo would otherwise drop data silently)."""
    errors: list[FieldError] = []
    if not isinstance(split, str) or not split or bidi_control(split) or len(split) > 32:
        errors.append(FieldError("split", "is required (the split the files come from, e.g. dev): uids restart in every split"))
    if len(systems) != len(translations):
        errors.append(FieldError("system", f"{len(systems)} system name(s) for {len(translations)} translation file(s)"))
    if back_translations and len(back_translations) != len(translations):
        errors.append(FieldError("back_translation", "give one back-translation file per system, in the same order, or none"))
    seen_systems = set()
    for position, system in enumerate(systems):
        if not system or bidi_control(system) or len(system) > 200:
            errors.append(FieldError(f"system[{position}]", "must be a non-empty name without bidi controls"))
        elif system in seen_systems:
            errors.append(FieldError(f"system[{position}]", f"system {system!r} is given twice"))
        seen_systems.add(system)
    if not translations and source_text is None:
        errors.append(FieldError("translation", "give a source file, translation files, or both"))
    if errors:
        return [], [], errors
    by_system = [_read_translation(text, f"translation[{i}]", errors) for i, text in enumerate(translations)]
    backs = [_read_translation(text, f"back_translation[{i}]", errors) for i, text in enumerate(back_translations)]

    def candidate(i: int, uid: str) -> dict:
        record = by_system[i][uid]
        out = {"system": systems[i], "premise": record.get("premise"), "hypothesis": record.get("hypothesis")}
        if backs and uid in backs[i]:
            out["back_translation"] = {"premise": backs[i][uid].get("premise"), "hypothesis": backs[i][uid].get("hypothesis")}
        return out

    if source_text is None:
        updates: dict[str, list] = {}
        uids = list(dict.fromkeys(uid for table in by_system for uid in table))
        for uid in uids:
            missing = [systems[i] for i, table in enumerate(by_system) if uid not in table]
            if missing:
                errors.append(FieldError("translation", f"uid {uid!r} has no translation from {', '.join(missing)}"))
                continue
            updates[f"{split}:{uid}"] = [candidate(i, uid) for i in range(len(systems))]
        return [], [{"id": key, "candidates": value} for key, value in updates.items()], errors

    source = _uid_records(_json_lines(source_text, "source"), "source", errors)
    records = []
    previous_premise, group_number = None, 0
    for uid, line in source.items():
        premise = line.get("premise")
        if premise != previous_premise:
            group_number += 1
            previous_premise = premise
        missing = [systems[i] for i, table in enumerate(by_system) if uid not in table]
        if missing:
            errors.append(FieldError("translation", f"uid {uid!r} has no translation from {', '.join(missing)}", line["_row"]))
            continue
        records.append(
            {
                "id": f"{split}:{uid}",
                "source": {"premise": premise, "hypothesis": line.get("hypothesis"), "label": line.get("label")},
                "candidates": [candidate(i, uid) for i in range(len(systems))],
                "group": f"{split}:g{group_number}",
                "split": split,
                "_row": line["_row"],
            }
        )
    for i, table in enumerate(by_system):
        for uid, record in table.items():
            if uid not in source:
                errors.append(FieldError(f"translation[{i}]", f"uid {uid!r} is not in the source file", record["_row"]))
    return records, [], errors


# --- agreement per system × criterion (LCHAIM §2.2, Table 1) -----------------------------------

# (item, candidate) packed in one int64: candidates per item stay below 64.
_UNIT_STRIDE = 64


def _level(criterion: str, settings: dict) -> str:
    return "nominal" if criterion == BINARY_CRITERION else settings["alpha_level_scores"]


def translation_values(project) -> tuple[dict, dict]:
    """Every rating of the project as arrays per (system, criterion): unit keys
    (item × candidate), rater ids and values (scores 1-5; label_valid as 1.0/0.0), plus
    the item → systems mapping. Two queries; no payload texts are read."""
    import numpy as np

    from annotation.models import Annotation, Item

    systems_of: dict[int, list] = {}
    for pk, candidates in Item.objects.filter(project=project, probe_of__isnull=True).values_list("pk", "payload__candidates").iterator(chunk_size=5000):
        systems_of[pk] = [c.get("system") if isinstance(c, dict) else None for c in (candidates or [])]
    columns: dict[tuple[str, str], tuple[list, list, list]] = {}
    rows = Annotation.objects.filter(item__project=project).values_list("item_id", "annotator_id", "value__ratings")
    for item_id, annotator_id, ratings in rows.iterator(chunk_size=5000):
        systems = systems_of.get(item_id)
        if systems is None or not isinstance(ratings, dict):
            continue
        for key, scores in ratings.items():
            index = int(key)
            if index >= len(systems) or not isinstance(scores, dict):
                continue
            unit = item_id * _UNIT_STRIDE + index
            for criterion in CRITERIA:
                value = scores.get(criterion)
                if value is None:
                    continue
                units, coders, values = columns.setdefault((systems[index], criterion), ([], [], []))
                units.append(unit)
                coders.append(annotator_id)
                values.append(float(value))
    arrays = {
        scope: (np.asarray(u, dtype=np.int64), np.asarray(c, dtype=np.int64), np.asarray(v, dtype=np.float64))
        for scope, (u, c, v) in columns.items()
    }
    return arrays, systems_of


def scope_figures(units, coders, values, level: str) -> dict:
    """Alpha with a bootstrap CI, and the mean with a t interval, for one system × criterion.

    The mean is over rated candidates (units), each the mean of its raters' values; its CI
    is Student's t over those unit means (scipy.stats.t), undefined below 2 units. For
    label_valid the values are 1 (holds) / 0, so the mean is the share of "label still
    holds"; `share` is the same share over individual ratings."""
    import numpy as np

    from annotation.metrics.agreement import REASON_NO_PAIRABLE, slot_matrix
    from annotation.metrics.intervals import mean_t_interval
    from annotation.services.agreement import alpha_with_ci, bootstrap_details, report_figures

    uniq, unit_index = np.unique(units, return_inverse=True)
    n_units = int(uniq.size)
    matrix = slot_matrix(unit_index, values, n_units)
    point, boot, reason = alpha_with_ci(matrix, level)
    counts = np.bincount(unit_index, minlength=n_units)
    unit_means = np.bincount(unit_index, weights=values, minlength=n_units) / np.maximum(counts, 1)
    interval = mean_t_interval(unit_means.tolist())
    mean, ci_low, ci_high = interval["mean"], interval["ci_low"], interval["ci_high"]
    pairable = counts[unit_index] >= 2
    if point.alpha is None and not pairable.any() and np.unique(coders).size >= 2:
        # The slot matrix has one row when no unit has two values; say why in the
        # coders' terms, not the matrix's.
        reason = REASON_NO_PAIRABLE
    return {
        **report_figures(point, boot, reason, int(np.unique(coders[pairable]).size)),
        "details": {
            "mean": mean,
            "mean_ci_low": ci_low,
            "mean_ci_high": ci_high,
            "units_total": n_units,
            "ratings": int(values.size),
            "share": float(values.mean()) if values.size else None,
            "pairable_values": point.pairable_values,
            "bootstrap": bootstrap_details(boot),
        },
    }


def translation_agreement_compute(project, job, settings: dict) -> dict:
    """The "agreement" job for translation_rating: one AgreementReport per system ×
    criterion (`scope = {"system", "criterion"}`), ordinal (or interval, per the setting)
    for the 1-5 criteria and nominal for label_valid. Upserted in one transaction; scopes
    that no longer have ratings are deleted. Idempotent."""
    from django.utils import timezone

    from annotation.models import AgreementReport
    from annotation.services.agreement import agreement_reports_replace, scope_key
    from annotation.services.jobs import job_set_progress

    arrays, _systems = translation_values(project)
    if job is not None:
        job_set_progress(job.pk, 0.3)
    now = timezone.now()
    reports = []
    scopes = sorted(arrays, key=lambda sc: (str(sc[0]), CRITERIA.index(sc[1])))
    for position, (system, criterion) in enumerate(scopes, start=1):
        level = _level(criterion, settings)
        figures = scope_figures(*arrays[(system, criterion)], level)
        scope = {"system": system, "criterion": criterion}
        reports.append(
            AgreementReport(project=project, scope=scope, scope_key=scope_key(scope), level=level, job=job, computed_at=now, **figures)
        )
        if job is not None:
            job_set_progress(job.pk, 0.3 + 0.6 * position / len(scopes))
    # A changed level setting or a system without ratings leaves stale rows: they go.
    return agreement_reports_replace(reports, AgreementReport.objects.filter(project=project, scope__has_key="system"))


def translation_table1(project) -> dict:
    """LCHAIM Table 1 from the stored reports: a row per system, a cell per criterion
    (mean with its 95% t interval, alpha with its bootstrap CI and level). The winner of a
    criterion (highest mean) is named only when its mean CI lies wholly above the
    runner-up's; otherwise `winners[criterion]` is null. One query."""
    from annotation.models import AgreementReport

    cells: dict[str, dict[str, dict]] = defaultdict(dict)
    computed_at = None
    for report in AgreementReport.objects.filter(project=project, scope__has_key="system").order_by("scope_key"):
        scope = report.scope if isinstance(report.scope, dict) else {}
        system, criterion = scope.get("system"), scope.get("criterion")
        if criterion not in CRITERIA:
            continue
        details = report.details or {}
        cells[system][criterion] = {
            "mean": details.get("mean"),
            "mean_ci_low": details.get("mean_ci_low"),
            "mean_ci_high": details.get("mean_ci_high"),
            "alpha": report.alpha,
            "alpha_ci_low": report.ci_low,
            "alpha_ci_high": report.ci_high,
            "level": report.level,
            "units": report.units,
            "coders": report.coders,
            "ratings": details.get("ratings"),
            "reason": report.reason or None,
        }
        computed_at = max(computed_at, report.computed_at) if computed_at else report.computed_at
    systems = sorted(cells, key=str)
    winners = {}
    for criterion in CRITERIA:
        ranked = sorted(
            (s for s in systems if cells[s].get(criterion, {}).get("mean") is not None),
            key=lambda s: cells[s][criterion]["mean"],
            reverse=True,
        )
        winner = None
        if len(ranked) >= 2:
            best, runner = cells[ranked[0]][criterion], cells[ranked[1]][criterion]
            if best["mean_ci_low"] is not None and runner["mean_ci_high"] is not None and best["mean_ci_low"] > runner["mean_ci_high"]:
                winner = ranked[0]
        winners[criterion] = winner
    return {
        "criteria": list(CRITERIA),
        "systems": systems,
        "rows": [{"system": s, "cells": {c: cells[s].get(c) for c in CRITERIA}} for s in systems],
        "winners": winners,
        "computed_at": computed_at,
    }


TABLE1_CSV_FIELDS = ("mean", "mean_ci_low", "mean_ci_high", "alpha", "alpha_ci_low", "alpha_ci_high", "level", "units")


def table1_csv_rows(table: dict) -> list[list]:
    """Table 1 as CSV rows: system, then per criterion the fields above and `winner`."""
    header = ["system"]
    for criterion in table["criteria"]:
        header += [f"{criterion}_{field}" for field in TABLE1_CSV_FIELDS] + [f"{criterion}_winner"]
    rows = [header]
    for row in table["rows"]:
        line = [row["system"]]
        for criterion in table["criteria"]:
            cell = row["cells"].get(criterion) or {}
            line += [cell.get(field) for field in TABLE1_CSV_FIELDS] + [table["winners"].get(criterion) == row["system"]]
        rows.append(line)
    return rows


# --- the LCHAIM import (POST /api/projects/{slug}/import-lchaim/) ----------------------------


def translation_import_lchaim(
    *, project, split, source: bytes | None, systems: list[str], translations: list[bytes], back_translations: list[bytes]
) -> dict:
    """Import the seeds' own files, all or nothing (see the module docstring and
    `lchaim_records`). With `source`, new items are created (rows already present with the
    same content are skipped, as for every import). Without it, the systems' candidates
    are appended to existing items `<split>:<uid>`; that is refused (409) for an item that
    already has ratings, and a system an item already has is refused (400). The candidate
    order of every new or changed item is stored at once."""
    from django.db import transaction

    from annotation.errors import Conflict
    from annotation.models import Annotation, Item, Project
    from annotation.services.imports import MAX_LISTED_ERRORS, decode_upload, store_rows, validate_rows

    if project.kind != "translation_rating":
        raise InvalidInput("the LCHAIM import is for translation_rating projects", field="kind")
    kind = TranslationRatingKind()

    def text(data: bytes, field: str) -> str:
        try:
            return decode_upload(data)
        except InvalidInput as exc:
            raise InvalidInput(exc.message, field=field) from None

    records, updates, errors = lchaim_records(
        split=split,
        source_text=text(source, "source") if source is not None else None,
        systems=systems,
        translations=[text(data, f"translation[{i}]") for i, data in enumerate(translations)],
        back_translations=[text(data, f"back_translation[{i}]") for i, data in enumerate(back_translations)],
    )
    if errors:
        raise InvalidInput("the files do not match; nothing was imported", errors=errors[:MAX_LISTED_ERRORS])

    if records:
        rows, errors = validate_rows(project, kind, ((record.pop("_row"), record) for record in records))
        if errors:
            raise InvalidInput("the files have invalid rows; nothing was imported", errors=errors[:MAX_LISTED_ERRORS])
        with transaction.atomic():
            result = store_rows(project, rows)
            fresh = list(Item.objects.filter(project=project, external_id__in=[row.external_id for row in rows]).only("pk", "payload", "computed", "shuffle_key"))
            for item in fresh:
                item.computed = {**(item.computed or {}), "candidate_order": candidate_order(item)}
            Item.objects.bulk_update(fresh, ["computed"], batch_size=1000)
        return {"created": result.created, "skipped": result.skipped, "updated": 0}

    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).first()
        wanted = {update["id"]: update["candidates"] for update in updates}
        items = {item.external_id: item for item in Item.objects.select_for_update().filter(project=project, external_id__in=list(wanted))}
        missing = [key for key in wanted if key not in items]
        errors = [FieldError("translation", f"no item {key!r} in this project: import the source first") for key in missing]
        rated = set(
            Annotation.objects.filter(item__in=list(items.values())).values_list("item__external_id", flat=True).distinct()
        )
        if rated:
            raise Conflict(f"{len(rated)} item(s) already have ratings; their candidates can no longer change, e.g. {sorted(rated)[0]!r}", field="system")
        changed = []
        for position, (key, new_candidates) in enumerate(wanted.items(), start=1):
            item = items.get(key)
            if item is None:
                continue
            have = {c.get("system") for c in item.payload.get("candidates") or []}
            clash = [c["system"] for c in new_candidates if c["system"] in have]
            if clash:
                errors.append(FieldError("system", f"item {key!r} already has a candidate from {', '.join(clash)}", position))
                continue
            record = {"id": key, "source": item.payload.get("source"), "candidates": [*item.payload.get("candidates", []), *new_candidates]}
            row, row_errors = kind.parse_record(record, position)
            if row_errors:
                errors.extend(row_errors)
                continue
            item.payload = row.payload
            item.computed = {**(item.computed or {}), "candidate_order": derived_order(item.shuffle_key, len(row.payload["candidates"]))}
            changed.append(item)
        if errors:
            raise InvalidInput("the files do not match the project's items; nothing was imported", errors=errors[:MAX_LISTED_ERRORS])
        Item.objects.bulk_update(changed, ["payload", "computed"], batch_size=1000)
    return {"created": 0, "skipped": 0, "updated": len(changed)}


# --- ratings export: one row per item × candidate ---------------------------------------------

RATINGS_CSV_COLUMNS = (
    "id", "split", "group", "status", "flags", "candidate", "system", "raters",
    *(f"{c}_scores" for c in CRITERIA), *(f"{c}_mean" for c in CRITERIA),
)  # fmt: skip


def ratings_export_rows(spec, *, exclude_flagged: bool):
    """(item, candidate record) pairs of the export `spec` (exports.export_prepare), in
    source order, reading annotations in bulk per chunk; items flagged by the
    back-translation filter are skipped when `exclude_flagged`."""
    from annotation.services.exports import chunks_with_facts, export_items_queryset

    items = export_items_queryset(spec)
    for chunk, facts in chunks_with_facts(spec.project, items):
        for item in chunk:
            if exclude_flagged and LOW_BACK_TRANSLATION_FLAG in (item.flags or []):
                continue
            for candidate in candidate_ratings(item, facts[item.pk].annotations):
                yield item, candidate


def ratings_export_stream(spec, *, exclude_flagged: bool):
    """JSONL (a record per item × candidate: ids, system, texts, each rater's scores, means)
    or CSV (UTF-8 BOM, formula cells neutralised; per criterion the raters' scores joined by
    spaces in rater order, and the mean)."""
    import csv
    import io

    from annotation.services.exports import UTF8_BOM, csv_neutralise

    if spec.fmt == "jsonl":
        for item, candidate in ratings_export_rows(spec, exclude_flagged=exclude_flagged):
            record = {"id": item.external_id, "split": item.split, "group": item.group, "status": item.status, "flags": list(item.flags or []), **candidate}
            line = json.dumps(record, ensure_ascii=False)
            yield (line.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").replace("\x85", "\\u0085") + "\n").encode("utf-8")
        return
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(RATINGS_CSV_COLUMNS)
    yield (UTF8_BOM + buffer.getvalue()).encode("utf-8")
    buffer.seek(0)
    buffer.truncate()

    def cell(value) -> str:
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        return repr(value) if isinstance(value, float) else str(value)

    for count, (item, candidate) in enumerate(ratings_export_rows(spec, exclude_flagged=exclude_flagged), start=1):

        row = [item.external_id, item.split, item.group, item.status, " ".join(item.flags or []), candidate["index"], candidate["system"], " ".join(r["rater"] or "" for r in candidate["ratings"])]
        row += [" ".join(cell(r.get(c)) for r in candidate["ratings"]) for c in CRITERIA]
        row += [cell(candidate["means"][c]) for c in CRITERIA]
        writer.writerow([csv_neutralise(cell(v)) for v in row])
        if count % 2000 == 0:
            yield buffer.getvalue().encode("utf-8")
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue().encode("utf-8")
