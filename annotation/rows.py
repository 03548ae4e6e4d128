"""Import rows: the records of an uploaded file (CSV, TSV, JSONL) read strictly, and the
field checks every kind applies to them. Imports no kind: the import service and the kinds'
own readers both build on it."""

import csv
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext

from annotation import safe_json
from annotation.errors import FieldError, InvalidInput
from annotation.metrics.text import bidi_control, forbidden_character
from annotation.upload_text import FileText, text_lines
from annotation.wording import fault_text


@dataclass(frozen=True)
class ItemRow:
    """One parsed import row, ready to store."""

    external_id: str
    payload: dict
    reference_label: str = ""
    group: str = ""
    split: str = ""
    author: str = ""  # username
    position: int = 0


@dataclass
class RowProblems:
    row: int
    errors: list[FieldError] = field(default_factory=list)

    def add(self, field_name: str | None, message: str) -> None:
        self.errors.append(FieldError(field_name, message, self.row))


# Longest comment a reviewer or an adjudicator may leave.
MAX_COMMENT_LENGTH = 5_000


def clean_comment(comment, errors: list[FieldError]) -> str:
    """A free-text comment (a review's, an adjudication's) kept exactly as typed; None is
    no comment. A problem is appended to `errors` naming `comment`."""
    if comment is None:
        return ""
    if not isinstance(comment, str):
        errors.append(FieldError("comment", gettext("must be a string")))
    elif fault := forbidden_character(comment):
        errors.append(FieldError("comment", fault_text(fault)))
    elif len(comment) > MAX_COMMENT_LENGTH:
        errors.append(FieldError("comment", gettext("is longer than %(n)s characters") % {"n": MAX_COMMENT_LENGTH}))
    return comment


def require_text(
    record: dict, name: str, problems: RowProblems, *, required: bool = True, identifier: bool = False
) -> str:
    """A string field of an import row or a submitted value, unchanged. Identifiers
    (ids, labels, groups, splits, usernames) must not carry bidi controls."""
    value = record.get(name)
    if value is None or value == "":
        if required:
            problems.add(name, gettext("is required"))
        return ""
    if isinstance(value, (int,)) and not isinstance(value, bool) and identifier:
        value = str(value)
    if not isinstance(value, str):
        problems.add(name, gettext("must be a string"))
        return ""
    reason = forbidden_character(value)
    if reason:
        problems.add(name, fault_text(reason))
        return ""
    if identifier:
        reason = bidi_control(value)
        if reason:
            problems.add(name, fault_text(reason))
            return ""
        if len(value) > 200:
            problems.add(name, gettext("is longer than %(n)s characters") % {"n": 200})
            return ""
    return value


MAX_ITEM_IDS = 10_000


def check_item_ids(value: Any, *, field: str) -> list[int]:
    """A request's non-empty list of at most 10,000 item ids (64-bit, positive), or a 400
    naming the list or each bad entry (`field[i]`); nothing is looked up here."""
    if not isinstance(value, list) or not value:
        raise InvalidInput(gettext("must be a non-empty list of item ids"), field=field)
    if len(value) > MAX_ITEM_IDS:
        raise InvalidInput(gettext("at most %(n)s items at a time") % {"n": MAX_ITEM_IDS}, field=field)
    errors = [
        FieldError(f"{field}[{i}]", gettext("must be an item id"))
        for i, entry in enumerate(value)
        if isinstance(entry, bool) or not isinstance(entry, int) or not 0 < entry < 2**63
    ]
    if errors:
        raise InvalidInput(gettext("invalid item ids; nothing was changed"), errors=errors)
    return value


def read_jsonl_objects(text: FileText) -> Iterator[tuple[int, Any, str | None, str | None]]:
    """(line number, parsed value, None, None) for every non-blank line of a JSONL file, or
    (line number, None, why, member) for a line that is not JSON or is JSON that safe_json
    refuses (too deep, NaN); `member` names the object's top-level member at fault, or is
    None when the fault is the line's. Splits on "\n" only: str.splitlines() would also
    break on U+2028/U+2029/U+0085, which are legal inside JSON strings. The lines are cut
    one at a time, so that reading a large file never holds a second copy of it (an
    upload, `UploadText`, is decoded line by line and never held whole)."""
    for number, line in enumerate(_lines(text), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        try:
            yield number, safe_json.loads(line), None, None
        except safe_json.UnsafeJSON as exc:
            member, reason = _member_refused(line) or (None, exc)
            yield number, None, str(reason), member


def _lines(text: FileText) -> Iterator[str]:
    """text.split("\n"), one piece at a time."""
    if not isinstance(text, str):
        for line in text.lines("\n"):
            yield line.removesuffix("\n")
        return
    start = 0
    while (end := text.find("\n", start)) >= 0:
        yield text[start:end]
        start = end + 1
    yield text[start:]


def read_jsonl_records(text: FileText) -> Iterator[tuple[int, dict]]:
    """(line number, record) for every non-blank line of a JSONL file of objects; a line that
    cannot be read, or holds something other than an object, is {"_error": why, "_field":
    the member at fault or None}."""
    for number, record, error, member in read_jsonl_objects(text):
        if error is None and not isinstance(record, dict):
            error = gettext("must be a JSON object")
        yield number, {"_error": error, "_field": member} if error else record


_JSON_WHITESPACE = re.compile(r"[ \t\n\r]*")


def _member_refused(line: str) -> tuple[str, safe_json.UnsafeJSON] | None:
    """For a line holding a JSON object that safe_json refuses: the first top-level member
    whose value it refuses or cannot read, and why. None when the line is not an object or
    its keys and separators are malformed (then the whole row is at fault)."""
    decoder = json.JSONDecoder()
    position = _JSON_WHITESPACE.match(line).end()
    if not line.startswith("{", position):
        return None
    separator = "{"
    while separator == "{" or separator == ",":
        key = None
        try:
            key, position = decoder.raw_decode(line, _JSON_WHITESPACE.match(line, position + 1).end())
            position = _JSON_WHITESPACE.match(line, position).end()
            if not isinstance(key, str) or not line.startswith(":", position):
                return None
            start = _JSON_WHITESPACE.match(line, position + 1).end()
            _, position = decoder.raw_decode(line, start)  # accepts NaN; too deep raises
            safe_json.loads(line[start:position])
        except safe_json.UnsafeJSON as exc:
            return key, exc
        except RecursionError:
            return key, safe_json.UnsafeJSON(
                gettext("nests deeper than %(levels)s levels") % {"levels": safe_json.MAX_DEPTH}
            )
        except ValueError:
            # A value Python cannot read (an integer of more than 4,300 digits) is its
            # member's fault; a malformed key, the row's.
            return (key, safe_json.UnsafeJSON(gettext("is not a value Mashov reads"))) if isinstance(key, str) else None
        position = _JSON_WHITESPACE.match(line, position).end()
        separator = line[position : position + 1]
    return None


def csv_field_size_limit() -> None:
    """Let a CSV cell be as long as the upload may be, as a JSONL string can. csv's default
    limit (131,072 characters) is process-wide; raising it to the upload cap changes no
    other reader's behaviour on input that cap already bounds."""
    from django.conf import settings

    if csv.field_size_limit() < settings.MASHOV_MAX_IMPORT_BYTES:
        csv.field_size_limit(settings.MASHOV_MAX_IMPORT_BYTES)


def read_csv_rows(text: FileText, *, delimiter: str = ",", skip_blank: bool = False) -> Iterator[tuple[int, list[str]]]:
    """(row number, cells) for every record of a CSV or TSV text, the header being row 0,
    whatever the line ends (CRLF, LF or CR alone); a blank line is a row of no cells, or is
    left out and not counted with skip_blank. Quoting is read strictly: a quoted cell never
    closed, or text after a closing quote, is a 400 for the file naming the row and the line
    where its record starts."""
    for row, _line, cells in read_csv_lines(text, delimiter=delimiter, skip_blank=skip_blank):
        yield row, cells


def read_csv_lines(
    text: FileText, *, delimiter: str = ",", skip_blank: bool = False
) -> Iterator[tuple[int, int, list[str]]]:
    """`read_csv_rows` with the line each record starts on (from 1): a quoted cell may hold
    line ends, so records and lines are counted apart."""
    csv_field_size_limit()
    lines = _LinesRead(text)
    reader = csv.reader(lines, delimiter=delimiter, strict=True)
    row = 0
    while True:
        line = reader.line_num + 1
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error:
            if lines.exhausted:
                message = gettext("row %(row)s (line %(line)s): a quoted cell opens here and is never closed") % {
                    "row": row,
                    "line": line,
                }
            else:
                message = gettext("row %(row)s (line %(line)s): the quoting is malformed") % {"row": row, "line": line}
            raise InvalidInput(message, errors=[FieldError("file", message, row)]) from None
        if cells or not skip_blank:
            yield row, line, cells
            row += 1


def delimited_cell(cell: str, delimiter: str, *, quote_any_quote: bool = True) -> str:
    r'''A cell of a delimited file (CSV, TSV) as csv.reader and pandas.read_csv read it back:
    quoted, with `"` doubled, when it holds the delimiter, a CR or an LF, or a `"` — anywhere
    with `quote_any_quote` (csv.writer's QUOTE_MINIMAL, which FarsTail's files follow), else
    only a leading one (a `"` inside an unquoted cell is read as it is: PhrasIS's files are
    written without quoting). Otherwise the cell is written exactly. csv.writer alone would
    leave a CR bare when the line ends with LF, and a reader would end the row there.

    >>> [delimited_cell(c, "\t") for c in ("a b", "a\tb", "a\rb", 'say "hi"')]
    ['a b', '"a\tb"', '"a\rb"', '"say ""hi"""']
    >>> [delimited_cell(c, "\t", quote_any_quote=False) for c in ('say "hi"', '"hi"')]
    ['say "hi"', '"""hi"""']
    '''
    special = (
        delimiter in cell or "\r" in cell or "\n" in cell or (cell.startswith('"') or (quote_any_quote and '"' in cell))
    )
    return '"' + cell.replace('"', '""') + '"' if special else cell


def delimited_line(cells: list[str], delimiter: str, lineterminator: str, *, quote_any_quote: bool = True) -> str:
    """One record of a delimited file (`delimited_cell` for each cell)."""
    return (
        delimiter.join(delimited_cell(cell, delimiter, quote_any_quote=quote_any_quote) for cell in cells)
        + lineterminator
    )


# A spreadsheet may run a cell as a formula when it begins with one of = + - @ (OWASP "CSV
# Injection"), their fullwidth forms, or TAB or CR, even after spaces, NBSP and the
# invisible direction and joining marks (LRM, RLM, ZWNJ) that spreadsheets skip. `'*` in
# front: a cell that already begins with the mark gets one more, so that reading the mark
# off again (`csv_restore`) gives back exactly the text written.
_FORMULA_CELL = re.compile("'*(?:[ \u00a0\u200e\u200f\u200c]*[=+@\uff1d\uff0b\uff0d\uff20-]|[\t\r])")


def csv_neutralise(cell: str) -> str:
    r"""A cell a spreadsheet could run as a formula, with a `'` in front (the spreadsheets'
    own mark of literal text); any other cell as it is.

    >>> [csv_neutralise(c) for c in ("=1+1", " \u200f@SUM(1)", "\uff1d1", "'=1", "a=1", "'a")]
    ["'=1+1", "' \u200f@SUM(1)", "'＝1", "''=1", 'a=1', "'a"]
    """
    return "'" + cell if _FORMULA_CELL.match(cell) else cell


def csv_restore(cell: str) -> str:
    r"""The text `csv_neutralise` marked, unmarked: a CSV cell read on import loses the `'`
    the CSV export put in front of it, so an exported file imports to the same text.

    >>> all(csv_restore(csv_neutralise(c)) == c for c in ("=1", "'=1", "''@x", "'a", "a", " -1"))
    True
    """
    return cell[1:] if cell.startswith("'") and _FORMULA_CELL.match(cell, 1) else cell


def read_csv_records(text: FileText, required: tuple[str, ...], missing: str) -> Iterator[tuple[int, dict]]:
    """(row number, {header name: cell}) for every non-blank row of a CSV file after its
    header, rows numbered from 1; a row with more cells than the header is {"_error"}. A
    header without every `required` name is a 400 for the file saying `missing`."""
    rows = read_csv_rows(text, skip_blank=True)
    _, header = next(rows, (0, []))
    if not all(name in header for name in required):
        raise InvalidInput(missing, field="file")
    for number, cells in rows:
        if len(cells) > len(header):
            yield number, {"_error": gettext("has more fields than the header")}
        else:
            yield number, dict(zip(header, cells))


class _LinesRead:
    """The lines of a text for csv.reader, noting when csv has asked past the last one (a
    quoted cell still open at the end of the file)."""

    def __init__(self, text: FileText):
        self._lines = text_lines(text, "")
        self.exhausted = False

    def __iter__(self):
        return self

    def __next__(self) -> str:
        line = next(self._lines, "")
        if line == "":
            self.exhausted = True
            raise StopIteration
        return line


def store_extra(payload: dict, extra: dict) -> None:
    """Keep an import row's `extra` columns in `payload`, with their order: jsonb keeps an
    object's keys in an order of its own (by length, then bytes), so the file's order is
    stored beside them and exports give the columns back as they came in (docs/text.md "Storing text")."""
    payload["extra"] = extra
    payload["extra_order"] = list(extra)


def extra_in_order(payload: dict, known_first: tuple[str, ...] = ()) -> dict:
    """An item's extra columns in the order they were imported in. Items stored without
    that order (or with one that no longer names the same columns) get one order on every
    database: the dataset's own `known_first` columns, then the others sorted."""
    extra = payload.get("extra")
    if not isinstance(extra, dict):
        return {}
    order = payload.get("extra_order")
    if isinstance(order, list) and len(order) == len(extra) and set(order) == set(extra):
        keys = order
    else:
        keys = [key for key in known_first if key in extra]
        keys += sorted(key for key in extra if key not in known_first)
    return {key: extra[key] for key in keys}
