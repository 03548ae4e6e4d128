"""Export a project's items with their outcomes: JSONL, CSV, or a kind's own layout
(`farstail` for the NLI kinds). docs/api.md "Results"; docs/text.md; docs/security.md "Output".

- Streamed in constant memory: items are read with `.iterator(chunk_size=CHUNK_SIZE)` (selectors/exports.py) and
  each chunk's outcomes and annotations are fetched in two bulk queries, so the number of
  queries grows with the number of chunks, never with the number of items.
- Text is written exactly as stored: no normalisation, no trimming (docs/text.md "Storing text"). JSONL
  keeps non-ASCII characters as they are (only U+0085, U+2028 and U+2029 are written as
  JSON escapes, so that line-splitting readers keep one record per line; the decoded
  text is unchanged).
- CSV begins with a UTF-8 BOM and neutralises every cell that begins with `=`, `+`, `-`,
  `@` (or their fullwidth forms, also after spaces, NBSP, LRM, RLM or ZWNJ), TAB or CR by
  prefixing `'` (docs/security.md "Output"; OWASP "CSV Injection"; rows.csv_neutralise); the CSV import
  takes that mark off again, so the file imports to the same text. Only CSV: JSONL and the
  kinds' own layouts carry the text unchanged, quoting a cell that holds a TAB, CR, LF or
  `"` as their readers expect (rows.delimited_cell), so every export imports back.
- JSONL leaves out an object member whose value is an empty object (`"extra": {}`, `"aggregates":
  {}`, at any depth): a typed reader (Arrow, the Hugging Face `datasets` library) would give
  such a column the type `struct<>`, which no later row with members can be cast to. Every
  import reads an absent member as an empty one, so the file imports to the same items.
- The split written, and the one `split=` selects, is the kind's computed split where it
  computes one (`Kind.export_splits`: the QA articles' split), else the stored `Item.split`.
- Annotators appear only as pseudonyms, stable within a project and not reversible to a
  user without the server's SECRET_KEY (`selectors.names.annotator_pseudonym`). The reads
  (items, and each chunk's facts in bulk) are `annotation/selectors/exports.py`."""

import csv
import io
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice

from django.db.models import QuerySet
from django.utils.translation import gettext

from annotation.errors import FieldError, InvalidInput
from annotation.kinds.base import ExportFacts, ExportSplits, Kind
from annotation.kinds.registry import get_kind, kind_title
from annotation.models import Item, Project
from annotation.replica import stream_from_replica
from annotation.rows import csv_neutralise, delimited_line
from annotation.selectors import exports as export_reads
from annotation.selectors.exports import chunked, chunks_with_facts, collector_paused, export_items_queryset
from annotation.wording import join_list

# `all` exports every item whatever its status; the others name Item.Status values.
EXPORT_STATUSES = ("accepted", "removed", "needs_revision", "open", "complete", "deciding", "all")
UTF8_BOM = "\ufeff"
COMMON_FORMATS = {
    "jsonl": {"content_type": "application/x-ndjson; charset=utf-8", "extension": "jsonl"},
    "csv": {"content_type": "text/csv; charset=utf-8", "extension": "csv"},
}
# Characters that json.dumps(ensure_ascii=False) leaves raw but str.splitlines() splits on.
_LINE_BREAKING = {"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_LINE_BREAKING_RE = re.compile("[\x85\u2028\u2029]")
# json.dumps(record, ensure_ascii=False), without building an encoder per record; records
# are trees of JSON values, never circular.
_JSON = json.JSONEncoder(ensure_ascii=False, check_circular=False)


@dataclass(frozen=True)
class ExportSpec:
    """A validated export request: what to write and how to name it."""

    project: Project
    kind: Kind
    fmt: str
    status: str
    split: str | None
    content_type: str
    filename: str
    # JSONL only: each record carries the item's whole decision history (`decisions`).
    history: bool = False
    # The kind's computed splits (Kind.export_splits), or None for the stored split.
    splits: ExportSplits | None = None


def export_prepare(
    *, project: Project, fmt: str | None, status: str | None = None, split: str | None = None, history=None
) -> ExportSpec:
    """Validate the parameters (every problem reported at once, naming `format`, `status`
    or `history`). `status` defaults to the kind's finished state (`accepted` where items go
    through consensus, `complete` where they are rated); an empty or missing `split`
    exports every split; `history` ("1"/"true", JSONL only) adds each item's decisions."""
    kind = get_kind(project.kind)
    status = status or kind.default_export_status
    errors = []
    streamed = fmt in kind.streamed_formats
    if fmt not in kind.export_formats and not streamed:
        known = (*kind.export_formats, *kind.streamed_formats)
        errors.append(
            FieldError(
                "format",
                gettext("must be one of %(choices)s for projects of the kind “%(kind)s”")
                % {"choices": join_list(known), "kind": kind_title(kind.name)},
            )
        )
    if status not in EXPORT_STATUSES:
        errors.append(
            FieldError("status", gettext("must be one of %(choices)s") % {"choices": join_list(EXPORT_STATUSES)})
        )
    with_history = history in ("1", "true")
    if history not in (None, "", "0", "false", "1", "true"):
        errors.append(FieldError("history", gettext("must be 1 or 0")))
    elif with_history and fmt != "jsonl":
        errors.append(FieldError("history", gettext("is available for the jsonl format only")))
    if errors or fmt is None:  # a missing format is among the errors
        raise InvalidInput(gettext("invalid export parameters"), errors=errors)
    if streamed:
        # A whole document the kind writes itself (SQuAD JSON is not a table of rows).
        options = {"content_type": "application/json; charset=utf-8", "extension": "json"}
    else:
        options = COMMON_FORMATS.get(fmt) or kind.export_extra_formats[fmt]
    parts = [project.slug, status]
    if split:
        parts.append(re.sub(r"[^\w.-]", "_", split))
    return ExportSpec(
        project=project,
        kind=kind,
        fmt=fmt,
        status=status,
        split=split or None,
        content_type=options["content_type"],
        filename=f"{'-'.join(parts)}.{options['extension']}",
        history=with_history,
        splits=None if streamed else kind.export_splits(project),
    )


def export_stream(spec: ExportSpec) -> Iterator[bytes]:
    """The file, as UTF-8 byte chunks (one per selectors.exports.CHUNK_SIZE items), read from
    the read replica when there is one (annotation.replica). A generator: nothing is read
    until the first chunk is asked for."""
    return stream_from_replica(collector_paused(_export_chunks(spec)))


def _export_chunks(spec: ExportSpec) -> Iterator[bytes]:
    if spec.fmt in spec.kind.streamed_formats:
        yield from spec.kind.export_stream(spec)
        return
    items = export_items_queryset(spec)
    if spec.fmt == "jsonl":
        yield from _jsonl(spec, items)
    elif spec.fmt == "csv":
        yield from _csv(spec, items)
    else:
        yield from _table(spec, items)


# --- writers ---------------------------------------------------------------------------------


def _jsonl(spec: ExportSpec, items: QuerySet[Item]) -> Iterator[bytes]:
    for chunk, facts in chunks_with_facts(spec.project, items, history=spec.history):
        lines = [_jsonl_line(_with_split(spec, item, record_of(spec.kind, item, facts[item.id]))) for item in chunk]
        lines.append("")
        text = "\n".join(lines)
        # Three substring searches: much faster than one character-class search over
        # non-ASCII text.
        if "\x85" in text or "\u2028" in text or "\u2029" in text:
            # Only inside strings: JSON's own punctuation and the line ends are ASCII.
            text = _LINE_BREAKING_RE.sub(lambda match: _LINE_BREAKING[match.group()], text)
        yield text.encode("utf-8")


def _jsonl_line(record: dict) -> str:
    """The record's JSON text, empty objects left out (`without_empty_objects`). The encoder
    writes every empty object as `{}`, so a text without `{}` has none to leave out and is
    already the line (most records: the walk over every member cost more than the encoding);
    a `{}` (or one inside a string) sends the record through the walk. A record's own empty
    members (a kind's `extra: {}` on every item without extra columns) are left out first,
    as the walk leaves them out, so that such a record is encoded once, not twice."""
    if any(isinstance(value, dict) and not value for value in record.values()):
        record = {key: value for key, value in record.items() if not isinstance(value, dict) or value}
    text = _JSON.encode(record)
    return text if "{}" not in text else _JSON.encode(without_empty_objects(record))


def _csv(spec: ExportSpec, items: QuerySet[Item]) -> Iterator[bytes]:
    columns = (*spec.kind.export_csv_columns(), *(("decided_by",) if spec.kind.labels else ()))
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow([csv_neutralise(column) for column in columns])
    yield (UTF8_BOM + _drain(buffer)).encode("utf-8")
    for chunk, facts in chunks_with_facts(spec.project, items):
        for item in chunk:
            record = _with_split(spec, item, record_of(spec.kind, item, facts[item.id]))
            writer.writerow(_csv_cells(record, columns, spec.kind.csv_json_fields))
        yield _drain(buffer).encode("utf-8")


def record_of(kind: Kind, item: Item, facts: ExportFacts) -> dict:
    """The kind's export record, with the adjudicator's gold and flag where there is one;
    for kinds with labels, `decided_by` (the method of the round's effective decision, or
    null) and, when asked for, the item's decision history."""
    record = kind.export_record(item, facts)
    if facts.adjudication is not None:
        record = kind.adjudicated_record(record, facts.adjudication)
    if kind.labels:
        record["decided_by"] = facts.decision.method if facts.decision is not None else None
    if facts.history is not None:
        record["decisions"] = facts.history
    return record


def _with_split(spec: ExportSpec, item: Item, record: dict) -> dict:
    if spec.splits is not None and "split" in record:
        record["split"] = spec.splits.of(item)
    return record


def without_empty_objects(value):
    """`value` with every object member whose value is an empty object left out, at any
    depth (list entries are kept, whatever they hold).

    >>> without_empty_objects({"a": {}, "b": [{"c": {}, "d": 1}, {}], "e": {"f": {}}})
    {'b': [{'d': 1}, {}]}
    """
    if isinstance(value, dict):
        return _object_without_empty(value)
    if isinstance(value, list):
        return _list_without_empty(value)
    return value


def _object_without_empty(value: dict) -> dict:
    # Copy on write: `value` itself when nothing inside it is left out or changed (most
    # members are text and numbers); a new object from the first member that is.
    kept = None
    for index, (key, inner) in enumerate(value.items()):
        new: dict | list
        if isinstance(inner, dict):
            new = _object_without_empty(inner) if inner else inner
            changed = not new or new is not inner
        elif isinstance(inner, list):
            new = _list_without_empty(inner)
            changed = new is not inner
        else:
            if kept is not None:
                kept[key] = inner
            continue
        if changed and kept is None:
            kept = dict(islice(value.items(), index))
        if kept is not None and (new or isinstance(new, list)):
            kept[key] = new
    return value if kept is None else kept


def _list_without_empty(value: list) -> list:
    if not any(isinstance(inner, (dict, list)) for inner in value):
        return value  # nothing inside to leave out (most lists: annotators, labels)
    return [without_empty_objects(inner) for inner in value]


def _table(spec: ExportSpec, items: QuerySet[Item]) -> Iterator[bytes]:
    """A kind's own layout, such as FarsTail's TSV. Written exactly: no BOM, no neutralising
    (the file must round-trip byte for byte); a cell holding the delimiter, a `"`, a CR or
    an LF is quoted as csv.writer's QUOTE_MINIMAL does, the CR included (rows.delimited_cell)."""
    options = spec.kind.export_extra_formats[spec.fmt]
    header = spec.kind.export_table_header(spec.fmt, items)
    delimiter, end = options["delimiter"], options["lineterminator"]
    yield delimited_line(header, delimiter, end).encode("utf-8")
    size = export_reads.CHUNK_SIZE  # read when called: one chunk size for every reader
    for chunk in chunked(export_reads.export_items(items, spec.project), size):
        rows = (delimited_line(spec.kind.export_table_row(spec.fmt, item, header), delimiter, end) for item in chunk)
        yield "".join(rows).encode("utf-8")


def _drain(buffer: io.StringIO) -> str:
    text = buffer.getvalue()
    buffer.seek(0)
    buffer.truncate()
    return text


def _csv_cells(record: dict, columns: Iterable[str], json_fields: Iterable[str] = ()) -> list[str]:
    """The row's cells; a column the kind's CSV import reads as JSON (`csv_json_fields`)
    is written as JSON (an empty object or a missing value as an empty cell)."""
    flat = dict(record)
    votes = flat.pop("votes", None)
    if isinstance(votes, dict):
        flat.update({f"votes_{label}": count for label, count in votes.items()})
    elif isinstance(votes, list):
        # Votes per entry (a summary's system): `votes_<k>_<member>` columns.
        for k, entry in enumerate(votes):
            if isinstance(entry, dict):
                flat.update({f"votes_{k}_{key}": value for key, value in entry.items()})
    cells = []
    for column in columns:
        value = flat.get(column)
        if column in json_fields and value is not None and value != {}:
            text = json.dumps(value, ensure_ascii=False)
        else:
            text = _csv_text(value)
        # A cell that is empty or begins with a letter or digit is never formula-like.
        cells.append(text if not text or text[0].isalnum() else csv_neutralise(text))
    return cells


def _csv_text(value) -> str:
    kind = type(value)
    if kind is str:
        return value
    if kind is int or kind is float:
        return repr(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return value
    if kind is list and all(type(inner) is str for inner in value):
        return " ".join(value)  # most lists: annotators' pseudonyms, labels
    if isinstance(value, list) and any(isinstance(inner, (dict, list)) for inner in value):
        # Objects in a list (candidates, summaries) stay JSON, as the CSV import reads them.
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return " ".join(_csv_text(inner) for inner in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False) if value else ""
    return str(value)
