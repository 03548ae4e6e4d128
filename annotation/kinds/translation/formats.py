"""The dataset's own files: the seeds' ConTRoL source and LCHAIM-style translations joined
by uid (`POST /api/projects/{slug}/import-lchaim/`, see kind.py), and the ratings export,
one row per item × candidate (`GET /api/projects/{slug}/ratings-export/`)."""

from __future__ import annotations

import json
from typing import Any

from django.utils.translation import gettext

from annotation import safe_json
from annotation.errors import FieldError, InvalidInput
from annotation.metrics.text import bidi_control
from annotation.rows import read_jsonl_objects
from annotation.wording import join_list

from .candidates import CRITERIA, LOW_BACK_TRANSLATION_FLAG, candidate_order, candidate_ratings, derived_order
from .kind import TranslationRatingKind


def _no_translation(uid: str, missing: list[str]) -> str:
    return gettext("uid “%(uid)s” has no translation from %(systems)s") % {"uid": uid, "systems": join_list(missing)}


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
            errors.append(FieldError(field, gettext("must be a JSON object"), number))
            continue
        uid = record.get("uid")
        if not isinstance(uid, str) or not uid or bidi_control(uid) or len(uid) > 150:
            errors.append(
                FieldError(f"{field}.uid", gettext("must be a non-empty string without bidi controls"), number)
            )
            continue
        if uid in out:
            errors.append(
                FieldError(
                    f"{field}.uid",
                    gettext("duplicate uid “%(uid)s” (first in row %(row)s)") % {"uid": uid, "row": out[uid]["_row"]},
                    number,
                )
            )
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
        errors.append(
            FieldError(field, gettext("must be a JSON array of records with uid, premise, hypothesis and label"))
        )
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
        errors.append(
            FieldError(
                "split",
                gettext("is required (the split the files come from, for example dev): uids restart in every split"),
            )
        )
    if len(systems) != len(translations):
        errors.append(
            FieldError(
                "system",
                gettext("%(systems)s system name(s) for %(files)s translation file(s)")
                % {"systems": len(systems), "files": len(translations)},
            )
        )
    if back_translations and len(back_translations) != len(translations):
        errors.append(
            FieldError(
                "back_translation", gettext("give one back-translation file per system, in the same order, or none")
            )
        )
    seen_systems = set()
    for position, system in enumerate(systems):
        if not system or bidi_control(system) or len(system) > 200:
            errors.append(FieldError(f"system[{position}]", gettext("must be a non-empty name without bidi controls")))
        elif system in seen_systems:
            errors.append(
                FieldError(f"system[{position}]", gettext("system “%(system)s” is given twice") % {"system": system})
            )
        seen_systems.add(system)
    if not translations and source_text is None:
        errors.append(FieldError("translation", gettext("give a source file, translation files, or both")))
    if errors:
        return [], [], errors
    by_system = [_read_translation(text, f"translation[{i}]", errors) for i, text in enumerate(translations)]
    backs = [_read_translation(text, f"back_translation[{i}]", errors) for i, text in enumerate(back_translations)]

    def candidate(i: int, uid: str) -> dict:
        record = by_system[i][uid]
        out = {"system": systems[i], "premise": record.get("premise"), "hypothesis": record.get("hypothesis")}
        if backs and uid in backs[i]:
            out["back_translation"] = {
                "premise": backs[i][uid].get("premise"),
                "hypothesis": backs[i][uid].get("hypothesis"),
            }
        return out

    if source_text is None:
        updates: dict[str, list] = {}
        uids = list(dict.fromkeys(uid for table in by_system for uid in table))
        for uid in uids:
            missing = [systems[i] for i, table in enumerate(by_system) if uid not in table]
            if missing:
                errors.append(FieldError("translation", _no_translation(uid, missing)))
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
            errors.append(FieldError("translation", _no_translation(uid, missing), line["_row"]))
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
                errors.append(
                    FieldError(
                        f"translation[{i}]",
                        gettext("uid “%(uid)s” is not in the source file") % {"uid": uid},
                        record["_row"],
                    )
                )
    return records, [], errors


# --- the LCHAIM import (POST /api/projects/{slug}/import-lchaim/) ----------------------------


def translation_import_lchaim(
    *,
    project,
    split,
    source: bytes | None,
    systems: list[str],
    translations: list[bytes],
    back_translations: list[bytes],
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
    from annotation.services.imports import MAX_LISTED_ERRORS, store_rows, validate_rows
    from annotation.upload_text import UploadText

    if project.kind != "translation_rating":
        raise InvalidInput(gettext("the LCHAIM import is for translation rating projects"), field="kind")
    kind = TranslationRatingKind()

    def text(data: bytes, field: str) -> str:
        try:
            return UploadText.checked(data).read()
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
        raise InvalidInput(gettext("the files do not match; nothing was imported"), errors=errors[:MAX_LISTED_ERRORS])

    if records:
        rows, errors = validate_rows(project, kind, ((record.pop("_row"), record) for record in records))
        if errors:
            raise InvalidInput(
                gettext("the files have invalid rows; nothing was imported"), errors=errors[:MAX_LISTED_ERRORS]
            )
        with transaction.atomic():
            result = store_rows(project, rows)
            fresh = list(
                Item.objects.filter(project=project, external_id__in=[row.external_id for row in rows]).only(
                    "pk", "payload", "computed", "shuffle_key"
                )
            )
            for item in fresh:
                item.computed = {**(item.computed or {}), "candidate_order": candidate_order(item)}
            Item.objects.bulk_update(fresh, ["computed"], batch_size=1000)
        return {"created": result.created, "skipped": result.skipped, "updated": 0}

    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).first()
        wanted = {update["id"]: update["candidates"] for update in updates}
        items = {
            item.external_id: item
            for item in Item.objects.select_for_update().filter(project=project, external_id__in=list(wanted))
        }
        missing = [key for key in wanted if key not in items]
        errors = [
            FieldError(
                "translation", gettext("no item “%(id)s” in this project: import the source first") % {"id": key}
            )
            for key in missing
        ]
        rated = set(
            Annotation.objects.filter(item__in=list(items.values()))
            .values_list("item__external_id", flat=True)
            .distinct()
        )
        if rated:
            raise Conflict(
                gettext(
                    "%(n)s item(s) already have ratings; their candidates can no longer change, for example “%(id)s”"
                )
                % {"n": len(rated), "id": sorted(rated)[0]},
                field="system",
            )
        changed = []
        for position, (key, new_candidates) in enumerate(wanted.items(), start=1):
            item = items.get(key)
            if item is None:
                continue
            have = {c.get("system") for c in item.payload.get("candidates") or []}
            clash = [c["system"] for c in new_candidates if c["system"] in have]
            if clash:
                errors.append(
                    FieldError(
                        "system",
                        gettext("item “%(id)s” already has a candidate from %(systems)s")
                        % {"id": key, "systems": join_list(clash)},
                        position,
                    )
                )
                continue
            record = {
                "id": key,
                "source": item.payload.get("source"),
                "candidates": [*item.payload.get("candidates", []), *new_candidates],
            }
            row, row_errors = kind.parse_record(record, position)
            if row_errors:
                errors.extend(row_errors)
                continue
            item.payload = row.payload
            item.computed = {
                **(item.computed or {}),
                "candidate_order": derived_order(item.shuffle_key, len(row.payload["candidates"])),
            }
            changed.append(item)
        if errors:
            raise InvalidInput(
                gettext("the files do not match the project's items; nothing was imported"),
                errors=errors[:MAX_LISTED_ERRORS],
            )
        Item.objects.bulk_update(changed, ["payload", "computed"], batch_size=1000)
    return {"created": 0, "skipped": 0, "updated": len(changed)}


# --- ratings export: one row per item × candidate ---------------------------------------------

RATINGS_CSV_COLUMNS = (
    "id", "split", "group", "status", "flags", "candidate", "system", "raters",
    *(f"{c}_scores" for c in CRITERIA), *(f"{c}_mean" for c in CRITERIA),
)  # fmt: skip


def ratings_export_rows(spec, *, exclude_flagged: bool, exclude_removed: bool = False):
    """(item, candidate record) pairs of the export `spec` (exports.export_prepare), in
    source order, reading annotations in bulk per chunk; items flagged by the
    back-translation filter are skipped when `exclude_flagged`, removed ones when
    `exclude_removed`."""
    from annotation.models import Item
    from annotation.selectors.exports import chunks_with_facts, export_items_queryset

    items = export_items_queryset(spec)
    if exclude_removed:
        items = items.exclude(status=Item.Status.REMOVED)
    for chunk, facts in chunks_with_facts(spec.project, items):
        for item in chunk:
            if exclude_flagged and LOW_BACK_TRANSLATION_FLAG in (item.flags or []):
                continue
            for candidate in candidate_ratings(item, facts[item.pk].annotations):
                yield item, candidate


def ratings_export_stream(spec, *, exclude_flagged: bool, exclude_removed: bool = False):
    """JSONL (a record per item × candidate: ids, system, texts, each rater's scores, means)
    or CSV (UTF-8 BOM, formula cells neutralised; per criterion the raters' scores joined by
    spaces in rater order, and the mean)."""
    import csv
    import io

    from annotation.services.exports import UTF8_BOM, csv_neutralise

    if spec.fmt == "jsonl":
        for item, candidate in ratings_export_rows(
            spec, exclude_flagged=exclude_flagged, exclude_removed=exclude_removed
        ):
            record = {
                "id": item.external_id,
                "split": item.split,
                "group": item.group,
                "status": item.status,
                "flags": list(item.flags or []),
                **candidate,
            }
            line = json.dumps(record, ensure_ascii=False)
            yield (
                line.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").replace("\x85", "\\u0085") + "\n"
            ).encode("utf-8")
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

    for count, (item, candidate) in enumerate(
        ratings_export_rows(spec, exclude_flagged=exclude_flagged, exclude_removed=exclude_removed), start=1
    ):
        row = [
            item.external_id,
            item.split,
            item.group,
            item.status,
            " ".join(item.flags or []),
            candidate["index"],
            candidate["system"],
            " ".join(r["rater"] or "" for r in candidate["ratings"]),
        ]
        row += [" ".join(cell(r.get(c)) for r in candidate["ratings"]) for c in CRITERIA]
        row += [cell(candidate["means"][c]) for c in CRITERIA]
        writer.writerow([csv_neutralise(cell(v)) for v in row])
        if count % 2000 == 0:
            yield buffer.getvalue().encode("utf-8")
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue().encode("utf-8")
