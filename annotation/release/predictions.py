"""Predictions files for model evaluation: read a file (JSONL, CSV, SQuAD's dict) and validate
it all or nothing against the gold of a split; one 400 lists every bad row by row and field."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import PurePath

import numpy as np
from django.conf import settings
from django.utils.translation import gettext as _

from annotation import safe_json
from annotation.errors import FieldError, InvalidInput
from annotation.kinds.base import EvaluationScorer
from annotation.metrics.text import first_forbidden_string
from annotation.models import Project
from annotation.rows import read_csv_records, read_jsonl_records
from annotation.upload_text import UploadText
from annotation.wording import fault_text, join_list

FORMATS = ("jsonl", "csv", "squad")
ALL_SPLITS = "all"
DEFAULT_SPLIT = "test"
MAX_LISTED_ERRORS = 1000
SPLIT_NAME = re.compile(r"^[\w-]{1,32}$")


def _format_of(text: str, filename: str, fmt: str, scorer: EvaluationScorer) -> str:
    if fmt:
        if fmt not in FORMATS or (fmt == "squad" and not scorer.accepts_squad_dict):
            allowed = [f for f in FORMATS if f != "squad" or scorer.accepts_squad_dict]
            raise InvalidInput(_("must be one of %(choices)s") % {"choices": join_list(allowed)}, field="format")
        return fmt
    suffix = PurePath(filename or "").suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix == ".json" and scorer.accepts_squad_dict:
        return "squad"
    first = text.lstrip().split("\n", 1)[0]
    if first.startswith("id,") or first.startswith('"id",'):
        return "csv"
    if (
        scorer.accepts_squad_dict
        and "\n" in text.strip()
        and text.lstrip().startswith("{")
        and not first.rstrip().endswith("}")
    ):
        return "squad"  # one JSON object over several lines: not JSONL
    if scorer.accepts_squad_dict and text.strip().count("\n") == 0:
        try:
            whole = json.loads(text)
        except (ValueError, RecursionError):
            return "jsonl"
        if isinstance(whole, dict) and not ({"id", "prediction"} <= set(whole)):
            return "squad"
    return "jsonl"


class _NotFinite:
    def __init__(self, text: str):
        self.text = text


def _squad_records(text: str) -> Iterator[tuple[int, dict]]:
    """SQuAD's predictions dict, one record per entry in file order (duplicate keys kept, to
    be refused as duplicates)."""
    try:
        pairs = json.loads(text, object_pairs_hook=lambda pairs: pairs, parse_constant=_NotFinite)
    except RecursionError:
        raise InvalidInput(_("the file nests too deep"), field="file") from None
    except ValueError:
        raise InvalidInput(_("the file is not a JSON object of question id → answer text"), field="file") from None
    if not isinstance(pairs, list) or not all(isinstance(pair, tuple) for pair in pairs):
        raise InvalidInput(_("a SQuAD predictions file is one JSON object {question id: answer text}"), field="file")
    for number, (key, value) in enumerate(pairs, start=1):
        if isinstance(value, _NotFinite):
            yield (
                number,
                {
                    "id": key,
                    "_error": _("%(name)s is not a JSON number") % {"name": value.text},
                    "_field": "prediction",
                },
            )
        elif isinstance(value, float) and not np.isfinite(value):
            yield number, {"id": key, "_error": _("is beyond the range of a float"), "_field": "prediction"}
        else:
            yield number, {"id": key, "prediction": value}


def _csv_records(text: str, scorer: EvaluationScorer, columns: tuple[str, ...]) -> Iterator[tuple[int, dict]]:
    for number, record in read_csv_records(
        text, columns, f"a CSV predictions file needs a header row naming {' and '.join(columns)}"
    ):
        # An empty optional cell is no value (a reversed pair not predicted).
        for name in scorer.fields[1:]:
            if record.get(name) == "":
                record.pop(name)
        yield number, record


def _jsonl_records(text: str) -> Iterable[tuple[int, dict]]:
    """JSONL rows as objects. The whole file is first parsed as one JSON array of its
    non-blank lines (one C-level parse instead of 100,000): when that gives one object per
    line — a line holding anything else, or a fault, breaks the array — the rows are those
    objects; otherwise every line is read on its own (read_jsonl_records) to name the bad ones."""
    numbered = [
        (number, line.removesuffix("\r")) for number, line in enumerate(text.split("\n"), start=1) if line.strip()
    ]
    try:
        values = json.loads(
            "[" + ",".join(line for _number, line in numbered) + "]",
            parse_constant=safe_json._refuse_constant,
            parse_float=safe_json._finite_float,
        )
    except (ValueError, RecursionError):
        values = None
    if values is not None and len(values) == len(numbered) and all(type(value) is dict for value in values):
        return zip((number for number, _line in numbered), values)
    return read_jsonl_records(text)


def read_predictions(
    data: bytes, filename: str, fmt: str, scorer: EvaluationScorer, *, columns: tuple[str, ...] = ("id", "prediction")
) -> Iterable[tuple[int, dict]]:
    """(row, record) of every prediction in the file; whole-file faults (empty, too large,
    not UTF-8, not the format) are a 400 naming the file. `columns`: what a CSV header must
    name."""
    if len(data) > settings.MASHOV_MAX_IMPORT_BYTES:
        raise InvalidInput(
            _("the file is larger than %(bytes)s bytes") % {"bytes": settings.MASHOV_MAX_IMPORT_BYTES}, field="file"
        )
    text = UploadText.checked(data).read()
    if not text.strip():
        raise InvalidInput(_("the file is empty"), field="file")
    fmt = _format_of(text, filename, fmt, scorer)
    if fmt == "squad":
        return _squad_records(text)
    if fmt == "csv":
        return _csv_records(text, scorer, columns)
    return _jsonl_records(text)


def _record_id(record: dict, row: int) -> tuple[str | None, FieldError | None]:
    value = record.get("id")
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value:
        return None, FieldError("id", _("is required: the item's id (a string)"), row)
    return value, None


def validate_predictions(
    records: Iterable[tuple[int, dict]],
    gold: dict,
    scorer: EvaluationScorer,
    split_label: str,
    *,
    check_strings: bool = True,
    complete: bool = True,
    unknown: str | None = None,
) -> dict:
    """{key: prediction} for every key of `gold`, or InvalidInput listing every bad row (at
    most MAX_LISTED_ERRORS, then how many more) and every gold key left without one.
    `check_strings=False` skips looking for NUL and lone surrogates in every record: right
    only for a file that cannot hold them (`may_hold_unstorable_text`). `complete=False`
    takes a file that predicts only some of the keys; `unknown` says why an id is refused
    (a translated text with `{where}` for the split; by default, no gold item there)."""
    if unknown is None:
        unknown = _("no gold item with this id in {where}")
    errors: list[FieldError] = []
    predictions: dict = {}
    first_row: dict[str, int] = {}
    for row, record in records:
        if "_error" in record:
            field = record.get("_field")
            errors.append(
                FieldError(field or "file", record["_error"], row)  # the row is named by `row`
            )
            continue
        found = first_forbidden_string(record) if check_strings else None
        if found:
            errors.append(FieldError(found[0] or "file", fault_text(found[1]), row))
            continue
        key, problem = _record_id(record, row)
        if problem:
            errors.append(problem)
            continue
        if key not in gold:
            errors.append(
                FieldError(
                    "id",
                    _("unknown id “%(id)s”: %(why)s") % {"id": key[:200], "why": unknown.format(where=split_label)},
                    row,
                )
            )
            continue
        if key in first_row:
            errors.append(
                FieldError(
                    "id",
                    _("duplicate id “%(id)s” (first in row %(row)s)") % {"id": key[:200], "row": first_row[key]},
                    row,
                )
            )
            continue
        first_row[key] = row
        value, problems = scorer.clean(record, row)
        if problems:
            errors.extend(problems)
            continue
        predictions[key] = value
    missing = [key for key in gold if key not in first_row] if complete else []
    errors.extend(
        FieldError("id", _("no prediction for id “%(id)s”") % {"id": key}) for key in missing[:MAX_LISTED_ERRORS]
    )
    if errors:
        listed = errors[:MAX_LISTED_ERRORS]
        if len(errors) > MAX_LISTED_ERRORS:
            listed.append(FieldError("file", _("and %(n)s more errors") % {"n": len(errors) - MAX_LISTED_ERRORS}))
        raise InvalidInput(
            _("%(n)s problems in the predictions file; nothing was stored") % {"n": len(errors)}, errors=listed
        )
    return predictions


def split_of(project: Project, split) -> str | None:
    """The split to score: `split` as given ("all": every split), DEFAULT_SPLIT when left
    out. None stands for every split."""
    if split in (None, ""):
        split = DEFAULT_SPLIT
    if not isinstance(split, str) or not SPLIT_NAME.match(split):
        raise InvalidInput(_("must be a split name (train, dev, test …) or all"), field="split")
    return None if split == ALL_SPLITS else split


def split_label(split: str | None) -> str:
    return _("split “%(split)s”") % {"split": split} if split else _("the project")


def predictions_template(project: Project, scorer: EvaluationScorer, split) -> bytes:
    """A predictions file to fill in: one JSONL line per gold id of `split` (as an upload
    names it: DEFAULT_SPLIT when left out, "all"), in scoring order, with an empty
    prediction ("") and the scorer's other fields null."""
    gold = gold_for(project, scorer, split_of(project, split))
    empty = {field: "" if field == "prediction" else None for field in scorer.fields}
    return "".join(json.dumps({"id": key, **empty}, ensure_ascii=False) + "\n" for key in gold).encode("utf-8")


def gold_for(project: Project, scorer: EvaluationScorer, split: str | None) -> dict:
    gold = scorer.gold(project, split)
    if not gold:
        raise InvalidInput(
            _("no gold-labelled items to score in %(split)s") % {"split": split_label(split)}, field="split"
        )
    return gold
