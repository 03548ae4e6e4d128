"""FarsTail's own TSV: read on import (format `farstail`) and written back on export, byte for
byte for the upstream files."""

import json
from collections.abc import Iterator
from pathlib import PurePath

from django.utils.translation import gettext

from annotation.errors import InvalidInput
from annotation.metrics.bias import computed_column
from annotation.rows import extra_in_order, read_csv_rows
from annotation.upload_text import FileText

from .labels import LONG_TO_SHORT

# FarsTail's TSV columns, and its optional ones in the dataset's order (the stored payload
# may not keep key order: PostgreSQL's jsonb sorts keys).
FARSTAIL_COLUMNS = ("premise", "hypothesis", "label")
FARSTAIL_EXTRA_COLUMNS = ("hard(hypothesis)", "hard(overlap)")
# FarsTail's own layout: csv.writer(delimiter="\t", lineterminator="\n"), QUOTE_MINIMAL,
# which writes the upstream files back byte for byte.
FARSTAIL_EXPORT = {
    "content_type": "text/tab-separated-values; charset=utf-8",
    "extension": "tsv",
    "delimiter": "\t",
    "lineterminator": "\n",
}


def read_farstail(text: FileText, filename: str) -> Iterator[tuple[int, dict]]:
    """FarsTail's own TSV (premise, hypothesis, label[, hard(hypothesis), hard(overlap)]):
    CSV-style quoting with tabs inside quoted fields, e/c/n labels, no id column. A question
    is a run of consecutive rows with the same premise, which becomes the group. External
    ids are `<file stem>-<row>` so that re-importing the same file skips every row."""
    stem = PurePath(filename or "farstail").stem or "farstail"
    rows = read_csv_rows(text, delimiter="\t")
    _, header = next(rows, (0, None))
    if header is None or header[:3] != ["premise", "hypothesis", "label"]:
        raise InvalidInput(
            gettext("a FarsTail file starts with the header %(columns)s") % {"columns": "premise, hypothesis, label"},
            field="file",
        )
    extra_columns = header[3:]
    previous_premise, group_number = None, 0
    for row_number, fields in rows:
        if len(fields) != len(header):
            yield (
                row_number,
                {
                    "_error": gettext("has %(fields)s fields, the header has %(header)s")
                    % {"fields": len(fields), "header": len(header)}
                },
            )
            continue
        premise, hypothesis, label = fields[:3]
        if premise != previous_premise:
            group_number += 1
            previous_premise = premise
        record = {
            "id": f"{stem}-{row_number}",
            "premise": premise,
            "hypothesis": hypothesis,
            "label": label,
            "group": f"{stem}-q{group_number}",
        }
        if extra_columns:
            record["extra"] = dict(zip(extra_columns, fields[3:]))
        yield row_number, record


def with_computed_flags(extra, computed) -> dict:
    """An item's extra columns (as imported, in order), then the bias analysis's computed
    flags (annotation/release/bias.py) under their own names, `computed_hard(hypothesis)` and
    `computed_hard(overlap)`, as "1"/"0": the file's `hard(...)` cells are kept apart and
    never filled or replaced. For the JSONL and CSV records' `extra`.

    >>> with_computed_flags({"hard(overlap)": "1"}, {"computed_hard(overlap)": False})
    {'hard(overlap)': '1', 'computed_hard(overlap)': '0'}
    """
    filled = dict(extra) if isinstance(extra, dict) else {}
    if isinstance(computed, dict):
        for column in FARSTAIL_EXTRA_COLUMNS:
            value = computed.get(computed_column(column))
            if isinstance(value, bool):
                filled[computed_column(column)] = "1" if value else "0"
    return filled


def farstail_header(items) -> list[str]:
    """premise, hypothesis, label, then the extra columns the items were imported with, in
    the order they were imported in and first met. A FarsTail file carries what it came
    with and nothing Mashov computed: a split whose file had no `hard(...)` columns is
    written without them. One query over the exported items finds them (constant memory)."""
    seen: dict[str, None] = {}
    for extra, order in items.values_list("payload__extra", "payload__extra_order").iterator(chunk_size=2000):
        for key in extra_in_order({"extra": extra, "extra_order": order}, FARSTAIL_EXTRA_COLUMNS):
            if key not in FARSTAIL_COLUMNS:
                seen.setdefault(key, None)
    return [*FARSTAIL_COLUMNS, *seen]


def farstail_row(item, header: list[str]) -> list[str]:
    """The gold label for an accepted item, else its reference (author's or original)
    label, as FarsTail's single letter; extra cells as stored (empty when missing)."""
    label = item.gold_label if item.status == "accepted" else item.reference_label
    extra = item.payload.get("extra")
    row = [item.payload.get("premise", ""), item.payload.get("hypothesis", ""), LONG_TO_SHORT.get(label, label)]
    for key in header[len(FARSTAIL_COLUMNS) :]:
        value = extra.get(key, "") if isinstance(extra, dict) else ""
        row.append(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
    return row
