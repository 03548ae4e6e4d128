"""Import items into a project: all or nothing.

Every row is validated before anything is stored; one bad row means a 400 that lists
every bad row by number and field, and nothing is written. Text is stored exactly as it
arrives (docs/text.md "Storing text"): no normalisation, no trimming. A valid row the
kind's own filters keep out (`Kind.import_hold_out`: a dataset's rules of what belongs in
it) is not an error: it is left out and listed in the result with its reason."""

import contextlib
import dataclasses
import io
import itertools
import json
import operator
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePath

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import JSONField, Max
from django.utils import timezone
from django.utils.translation import gettext as _

from annotation import safe_json
from annotation.copy_stream import CopyStream, copy_available
from annotation.errors import FieldError, InvalidInput, PayloadTooLarge
from annotation.kinds.base import Kind
from annotation.kinds.registry import get_kind
from annotation.metrics.text import (
    bidi_control,
    first_forbidden_string,
    forbidden_character,
    may_hold_unstorable_text,
)
from annotation.models import Item, Job, Project
from annotation.rows import ItemRow, csv_restore, read_csv_records, read_jsonl_records
from annotation.selectors.exports import chunked
from annotation.selectors.names import AUTHOR_PSEUDONYM, is_pseudonym
from annotation.services.audit import audit_record
from annotation.services.decisions import imported_decisions_record, imported_outcome
from annotation.services.jobs import JobInput, job_create, job_set_progress
from annotation.services.priorities import item_priorities_refresh
from annotation.services.webhooks import webhook_event_on_commit
from annotation.sql import column_in
from annotation.upload_text import FileText, Readable, UploadText
from annotation.wording import fault_text, join_list

MAX_LISTED_ERRORS = 1000
BATCH_SIZE = 2000


@dataclass(frozen=True)
class HeldOut:
    """A valid row the project's kind kept out (`Kind.import_hold_out`), and why."""

    row: int
    id: str
    reason: str

    def as_dict(self) -> dict:
        return {"row": self.row, "id": self.id, "reason": self.reason}


@dataclass(frozen=True)
class ImportResult:
    created: int
    skipped: int
    job: int | None = None
    # Rows held out by the kind's filters: how many, and the first MAX_LISTED_ERRORS of them.
    held_out: int = 0
    held_out_rows: tuple[HeldOut, ...] = ()

    def as_dict(self) -> dict:
        return {
            "created": self.created,
            "skipped": self.skipped,
            "job": self.job,
            "held_out": self.held_out,
            "held_out_rows": [held.as_dict() for held in self.held_out_rows],
        }


@dataclass(frozen=True)
class ImportOptions:
    """Form fields for published datasets (docs/api.md "Dataset release"): `split` given to every
    row of the file, and `labels_final`: the file's labels are gold as published, so its
    items arrive decided (accepted, gold label set) and are never relabeled."""

    split: str = ""
    labels_final: bool = False


# FarsTail's files are named Train-*, Val-*, Test-*.
SPLIT_OF_FILE_NAME = {"train": "train", "val": "dev", "test": "test"}
_SPLIT_FILE_NAME = re.compile(r"^(train|val|test)(?=$|[-_. ])", re.IGNORECASE)
SPLIT_LENGTH = 32  # Item.split
_TRUE, _FALSE = ("true", "1", "on", "yes"), ("false", "0", "off", "no", "")


def import_options_clean(split, labels_final) -> ImportOptions:
    """The form's `split` and `labels_final`, checked: 400 naming the field."""
    split = "" if split is None else split
    if not isinstance(split, str):
        raise InvalidInput(_("must be a string"), field="split")
    reason = forbidden_character(split) or bidi_control(split)
    if reason:
        raise InvalidInput(fault_text(reason), field="split")
    if len(split) > SPLIT_LENGTH or split != split.strip():
        raise InvalidInput(
            _("must be at most %(n)s characters, without spaces around") % {"n": SPLIT_LENGTH}, field="split"
        )
    if isinstance(labels_final, bool):
        final = labels_final
    elif labels_final is None or (isinstance(labels_final, str) and labels_final.lower() in _FALSE):
        final = False
    elif isinstance(labels_final, str) and labels_final.lower() in _TRUE:
        final = True
    else:
        raise InvalidInput(_("must be true or false"), field="labels_final")
    return ImportOptions(split=split, labels_final=final)


def split_from_file_name(filename: str) -> str:
    """train / dev / test for FarsTail's Train-, Val-, Test- file names, else "".

    >>> split_from_file_name("Val-word.csv"), split_from_file_name("validation.jsonl")
    ('dev', '')
    """
    match = _SPLIT_FILE_NAME.match(PurePath(filename or "").name)
    return SPLIT_OF_FILE_NAME[match.group(1).lower()] if match else ""


def apply_import_options(
    rows: list[ItemRow], options: ImportOptions, filename: str
) -> tuple[list[ItemRow], list[FieldError]]:
    """Rows with the file's split (the form's, else the one the file name gives, for rows
    that name none), and with `labels_final` a check that every row has its label. A row
    whose own split differs from the form's is an error: the file and the form disagree."""
    file_split = options.split or split_from_file_name(filename)
    errors: list[FieldError] = []
    out = []
    for row in rows:
        if options.split and row.split and row.split != options.split:
            errors.append(
                FieldError(
                    "split",
                    _("the row says “%(row)s”, the form says “%(form)s”") % {"row": row.split, "form": options.split},
                    row.position,
                )
            )
            continue
        if options.labels_final and not row.reference_label:
            errors.append(
                FieldError(
                    "label",
                    _("is required: with “labels are final” every row's label becomes its gold label"),
                    row.position,
                )
            )
            continue
        out.append(row if row.split or not file_split else dataclasses.replace(row, split=file_split))
    return out, errors


def row_count_bound(text: FileText) -> int:
    """At least the number of records in the text, whatever its line ends (CRLF, LF, or CR
    alone as old Mac files have, all of which csv reads as line ends): every CSV/TSV record
    or JSONL row ends with one, a quoted cell may hold more, the last row may have none."""
    if isinstance(text, UploadText):
        return text.rows_bound
    ends = text.count("\n") + text.count("\r") - text.count("\r\n")
    return ends + (0 if text.endswith(("\n", "\r")) or not text else 1)


def read_records(
    kind: Kind, fmt: str, text: FileText, filename: str, project_settings: dict | None = None
) -> Iterator[tuple[int, dict]]:
    """(row number, record) for every row; rows are numbered from 1 after any header. A row
    that cannot be read is {"_error": why, "_field"?: the field at fault, if one is}.
    `project_settings` (the project's, defaults filled in) reach the kind's own formats."""
    if fmt == "jsonl":
        yield from read_jsonl_records(text)
    elif fmt == "csv":
        for number, record in read_csv_records(text, ("id",), "a CSV file needs a header row with an id column"):
            if "_error" not in record:
                # The `'` the CSV export puts before a formula-like cell comes off again.
                record = {key: csv_restore(value) for key, value in record.items()}
                for key in list(record):
                    if key in kind.csv_json_fields and record[key] == "":
                        del record[key]  # an empty cell of a JSON field: the field is absent
                    elif key in kind.csv_json_fields:
                        try:
                            record[key] = safe_json.loads(record[key])
                        except safe_json.UnsafeJSON as exc:
                            record = {"_error": str(exc), "_field": key}
                            break
            yield number, record
    elif fmt in kind.formats:
        yield from kind.read_format_with_settings(fmt, text, filename, project_settings or kind.settings_for(None))
    else:
        raise InvalidInput(_format_refused(kind), field="format")


def _format_refused(kind: Kind) -> str:
    return _("must be one of %(formats)s for this kind of project") % {"formats": join_list(kind.formats)}


def validate_rows(
    project: Project, kind: Kind, records: Iterable[tuple[int, dict]], *, check_strings: bool = True
) -> tuple[list[ItemRow], list[FieldError]]:
    """The valid rows and every bad row's errors. `check_strings=False` skips looking for
    NUL and lone surrogates in every string of every record: right only when the file
    cannot hold them (`strings_to_check`)."""
    rows, errors = _validate_batch(kind, records, check_strings, {})
    if not rows and not errors:
        errors.append(FieldError("file", _("contains no rows")))
    return rows, errors


def _validate_batch(
    kind: Kind, records: Iterable[tuple[int, dict]], check_strings: bool, first_row_of: dict[str, int]
) -> tuple[list[ItemRow], list[FieldError]]:
    """`validate_rows` of one run of records; `first_row_of` (id → the row that first gave
    it) carries the ids seen across the runs of one file."""
    rows: list[ItemRow] = []
    errors: list[FieldError] = []
    parse = kind.parse_record
    for number, record in records:
        if "_error" in record:
            if record.get("_field"):
                errors.append(FieldError(record["_field"], record["_error"], number))
            else:
                errors.append(FieldError(None, record["_error"], number))  # the row is named by `row`
            continue
        found = first_forbidden_string(record) if check_strings else None
        if found:
            errors.append(FieldError(found[0] or None, fault_text(found[1]), number))
            continue
        row, row_errors = parse(record, number)
        if row_errors:
            errors.extend(row_errors)
            continue
        assert row is not None  # parse_record gives a row whenever it reports no error
        first = first_row_of.get(row.external_id)
        if first is not None:
            errors.append(
                FieldError(
                    "id",
                    _("duplicate id “%(id)s” (first in row %(row)s)") % {"id": row.external_id, "row": first},
                    number,
                )
            )
            continue
        first_row_of[row.external_id] = number
        rows.append(row)
    return rows, errors


def strings_to_check(fmt: str, text: FileText) -> bool:
    """Whether the records read from `text` need every string checked for NUL and lone
    surrogates: JSONL and CSV records hold only the file's own text and what its JSON
    escapes give, so a file with neither a NUL nor a `\\u` escape needs no check. A kind's
    own format may build its records otherwise, and is always checked."""
    if fmt not in ("jsonl", "csv"):
        return True
    return text.may_hold_unstorable_text if isinstance(text, UploadText) else may_hold_unstorable_text(text)


def hold_out(project: Project, kind: Kind, rows: list[ItemRow]) -> tuple[list[ItemRow], list[HeldOut]]:
    """The rows to store, and the valid rows the kind's import filters keep out, with why."""
    kept: list[ItemRow] = []
    held: list[HeldOut] = []
    for row in rows:
        reason = kind.import_hold_out(project, row)
        if reason is None:
            kept.append(row)
        else:
            held.append(HeldOut(row.position, row.external_id, str(reason)))
    return kept, held


def _authors_by_name(rows: list[ItemRow], errors: list[FieldError]) -> dict:
    names = {row.author for row in rows if row.author}
    if not names:
        return {}
    users = {user.username: user for user in get_user_model().objects.filter(username__in=names)}
    for row in rows:
        # An export names authors by pseudonym (docs/security.md "Output"): a pseudonym that
        # is no username is kept as the item's author of record, so that the export of an
        # authored project imports back (and exports again with the same author).
        if row.author and row.author not in users and not is_pseudonym(row.author):
            errors.append(FieldError("author", _("no user named “%(name)s”") % {"name": row.author}, row.position))
    return users


def _author_columns(row: ItemRow, authors: dict) -> dict:
    """The item's author: the user a username names, else the export pseudonym as given."""
    user = authors.get(row.author)
    if user is not None or not row.author:
        return {"author_id": getattr(user, "pk", None)}
    return {"author_id": None, "computed": {AUTHOR_PSEUDONYM: row.author}}


def check_against_project(
    project: Project, rows: list[ItemRow], *, existing_ids: set[str] | None = None
) -> tuple[list[ItemRow], dict, list[FieldError]]:
    """The rows to create, the authors by username, and the errors that need the database:
    an unknown author, or an id that already exists with other content. A row whose id
    exists with the same content is left out (re-importing a file is harmless).
    `existing_ids`, when given, are all the project's ids: only those are looked up."""
    errors: list[FieldError] = []
    authors = _authors_by_name(rows, errors)
    existing = {}
    ids = [row.external_id for row in rows if existing_ids is None or row.external_id in existing_ids]
    for start in range(0, len(ids), BATCH_SIZE):
        batch = ids[start : start + BATCH_SIZE]
        for item in Item.objects.filter(column_in(Item, "external_id", batch), project=project).only(
            "external_id", "payload", "reference_label", "group", "split"
        ):
            existing[item.external_id] = item
    new_rows = []
    kind = get_kind(project.kind)
    for row in rows:
        old = existing.get(row.external_id)
        if old is None:
            new_rows.append(row)
        elif not kind.same_content(old.payload, row.payload) or (old.reference_label, old.group, old.split) != (
            row.reference_label,
            row.group,
            row.split,
        ):
            errors.append(
                FieldError(
                    "id",
                    _("id “%(id)s” already exists in this project with other content") % {"id": row.external_id},
                    row.position,
                )
            )
    return new_rows, authors, errors


_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
_COPY_SPECIAL = re.compile(r"[\\\t\n\r]")


def _copy_column(field, now):
    """How one column of new items is written in COPY's text format: (attname, the text
    of its default when every row without a value shares it, else None; a function from a
    list of the rows' values to the list of their texts). Defaults are the model's: a
    constant's text is computed once, a callable one (`shuffle_key`'s random draw) is called
    for every row that needs it. A column at a time: the common values (a string with none
    of COPY's special characters, a number) are written without a call per value."""
    if isinstance(field, JSONField):
        encode = field.encoder(ensure_ascii=False).encode if field.encoder else _JSON.encode

        def texts(values: list) -> list[str]:
            # JSON text holds no raw TAB, LF or CR (the encoder escapes them): of COPY's
            # special characters only the backslash, doubled.
            encoded = [None if value is None else encode(value) for value in values]
            return ["\\N" if text is None else text.replace("\\", "\\\\") if "\\" in text else text for text in encoded]

    else:
        special = _COPY_SPECIAL.search

        def text(value) -> str:
            if value is None:
                return "\\N"
            if value is True or value is False:
                return "t" if value else "f"
            value = value.isoformat() if isinstance(value, datetime) else str(value)
            return value.translate(_COPY_ESCAPES) if special(value) else value

        def texts(values: list) -> list[str]:
            return [
                (value.translate(_COPY_ESCAPES) if special(value) else value)
                if type(value) is str
                # A number's text holds none of COPY's special characters.
                else str(value)
                if type(value) is int or type(value) is float
                else text(value)
                for value in values
            ]

    if getattr(field, "auto_now_add", False) or getattr(field, "auto_now", False):
        shared = texts([now])[0]
    elif not field.has_default() or not callable(field.default) or field.default in (dict, list):
        shared = texts([field.get_default()])[0]
    else:
        shared = None
    return field.attname, shared, texts


_JSON = json.JSONEncoder(ensure_ascii=False)


def _copy_template(fields, columns, row: dict) -> tuple[str, list]:
    """A COPY line's template for rows with the keys of `row` (str.format's), and for each
    of its places the key to read (None for a callable default: the shuffle key's draw,
    drawn anew for every row) and the texts function."""
    parts, places = [], []
    for field, (name, shared, texts) in zip(fields, columns):
        if name not in row and shared is not None:
            parts.append(shared.replace("{", "{{").replace("}", "}}"))
            continue
        parts.append("{}")
        places.append((name if name in row else None, texts, field.get_default))
    return "\t".join(parts) + "\n", places


class _ItemCopyText:
    """New items' lines in COPY's text format, for `sql` (COPY ... FROM STDIN), each item
    given as {attname: value} with the model's defaults (and auto_now_add: the time this
    was made, the same for every item it writes) filling the other columns."""

    def __init__(self):
        self.fields = [field for field in Item._meta.concrete_fields if not field.primary_key]
        now = timezone.now()
        self.columns = [_copy_column(field, now) for field in self.fields]
        names = ", ".join(connection.ops.quote_name(field.column) for field in self.fields)
        self.sql = f"COPY {Item._meta.db_table} ({names}) FROM STDIN"
        self._templates: dict[tuple, tuple[str, list]] = {}

    def lines(self, rows: list[dict]) -> str:
        pieces = []
        # Each run of rows given with the same columns: one line template, the shared
        # defaults' text written into it once, filled column by column.
        for keys, grouped in itertools.groupby(rows, key=tuple):
            run = list(grouped)
            template = self._templates.get(keys)
            if template is None:
                template = self._templates[keys] = _copy_template(self.fields, self.columns, run[0])
            line, places = template
            columns = [
                texts(list(map(operator.itemgetter(name), run)) if name else [default() for _row in run])
                for name, texts, default in places
            ]
            pieces.append("".join(map(line.format, *columns)))
        return "".join(pieces)


def items_copy(rows: list[dict]) -> None:
    """Insert new items, each given as {attname: value} with the model's defaults (and
    auto_now_add) filling the other columns, with PostgreSQL's COPY (bulk_create on other
    databases, which fills them the same way). Call inside the import's transaction: COPY
    is all-or-nothing with it. The import needs no primary key back, so none is read."""
    if not copy_available():
        Item.objects.bulk_create([Item(**row) for row in rows])
        return
    copy_text = _ItemCopyText()
    buffer = io.StringIO(copy_text.lines(rows))
    with connection.cursor() as cursor:
        cursor.cursor.copy_expert(copy_text.sql, buffer)


def store_rows(
    project: Project, rows: list[ItemRow], *, job_id: int | None = None, labels_final: bool = False
) -> ImportResult:
    """Store validated rows in one transaction, or raise listing every row that cannot be."""
    new_rows, authors, errors = check_against_project(project, rows)
    if errors:
        raise InvalidInput(_("the file has invalid rows; nothing was imported"), errors=errors[:MAX_LISTED_ERRORS])
    with transaction.atomic():
        writer = _RowWriter(project, labels_final=labels_final)
        for start in range(0, len(new_rows), BATCH_SIZE):
            writer.write(new_rows[start : start + BATCH_SIZE], authors)
            if job_id is not None:
                job_set_progress(job_id, 0.5 + 0.5 * (start + BATCH_SIZE) / max(1, len(new_rows)))
        writer.finish(skipped=len(rows) - len(new_rows), job_id=job_id)
    return ImportResult(created=len(new_rows), skipped=len(rows) - len(new_rows))


class _RowWriter:
    """Writes an import's new rows, batch after batch, inside the caller's transaction,
    which it locks the project for: one import at a time per project."""

    def __init__(self, project: Project, *, labels_final: bool):
        self.project, self.labels_final = project, labels_final
        self.kind = get_kind(project.kind)
        self.created = 0
        # Positions continue after the project's last item, so that files imported one after
        # another keep their own order (FarsTail's premise groups are runs of rows).
        Project.objects.select_for_update().filter(pk=project.pk).first()
        self.offset = Item.objects.filter(project=project).aggregate(top=Max("position"))["top"] or 0
        self._stream: CopyStream | None = None
        self._copy_text: _ItemCopyText | None = None

    @contextlib.contextmanager
    def streaming(self) -> Iterator[None]:
        """Within the block, the batches go into one COPY that the server stores while the
        next batch is read and validated (`CopyStream`); leaving it waits for the server.
        An exception leaving it (the file's invalid rows too) drops what was sent. Other
        databases, and decided items (written with their decisions), are written batch by
        batch as before."""
        if not copy_available() or self.labels_final:
            yield
            return
        self._copy_text = _ItemCopyText()
        with CopyStream(self._copy_text.sql) as self._stream:
            try:
                yield
            finally:
                self._stream = None

    def write(self, rows: list[ItemRow], authors: dict) -> None:
        project, kind, offset, labels_final = self.project, self.kind, self.offset, self.labels_final
        project_id = project.pk  # a property: read once, not for every row
        values = [
            {
                "project_id": project_id,
                "external_id": row.external_id,
                "payload": kind.stored_payload(project, row),
                "reference_label": row.reference_label,
                "group": row.group,
                "derived_group": "" if row.group else kind.derived_group(row.payload),
                "split": row.split,
                **_author_columns(row, authors),
                # Published labels are gold as they are: decided (the ledger's `import`
                # decisions below), never relabeled.
                **(imported_outcome(row.reference_label) if labels_final else {}),
                "position": offset + row.position,
            }
            for row in rows
        ]
        if labels_final:
            imported_decisions_record(Item.objects.bulk_create([Item(**value) for value in values]))
        elif self._stream is not None and self._copy_text is not None:
            self._stream.write(self._copy_text.lines(values))
        else:
            items_copy(values)
        self.created += len(rows)

    def finish(self, *, skipped: int, job_id: int | None) -> None:
        # Kinds that compute figures from imported text (summary measures) queue that here.
        self.kind.after_import(self.project, self.created)
        # New items take their place in the project's active-learning order; the items
        # already there keep theirs.
        item_priorities_refresh(self.project, after_position=self.offset)
        webhook_event_on_commit(
            self.project.pk, "import.done", {"created": self.created, "skipped": skipped, "job": job_id}
        )


def _by_row(errors: list[FieldError]) -> list[FieldError]:
    return sorted(errors, key=lambda e: e.row or 0)


def import_records(
    project: Project,
    kind: Kind,
    fmt: str,
    text: FileText,
    *,
    options: ImportOptions,
    filename: str,
    job_id: int | None = None,
    refusal: str = "",
) -> ImportResult:
    """Validate and store a file (`text`, in `fmt`) in one pass, BATCH_SIZE rows at a time, in one
    transaction: each batch is validated, checked against the project and handed to the
    COPY before the next is read, so memory holds a few batches of rows and the ids seen so
    far, never the whole file's rows; the server stores a batch while the next one is
    validated (`_RowWriter.streaming`). A bad row stops the writing; the rest of the file is still
    read, and every bad row (the first MAX_LISTED_ERRORS) is raised as one InvalidInput
    (`refusal`), which rolls the transaction back: nothing is stored."""
    records = read_records(kind, fmt, text, filename, kind.settings_for(project.settings))
    check_strings = strings_to_check(fmt, text)
    expected_rows = row_count_bound(text) if job_id is not None else 0
    errors: list[FieldError] = []
    held: list[HeldOut] = []
    held_count = valid = skipped = read = 0
    first_row_of: dict[str, int] = {}
    with transaction.atomic():
        writer = _RowWriter(project, labels_final=options.labels_final)
        existing_ids = _ids_if_few(project)
        with writer.streaming():
            for batch in chunked(records, BATCH_SIZE):
                read += len(batch)
                rows, batch_errors = _validate_batch(kind, batch, check_strings, first_row_of)
                valid += len(rows)
                rows, option_errors = apply_import_options(rows, options, filename)
                batch_errors = _by_row([*batch_errors, *option_errors])
                kept, batch_held = hold_out(project, kind, rows)
                held_count += len(batch_held)
                held.extend(batch_held[: MAX_LISTED_ERRORS - len(held)])
                # Once a row is bad nothing more is written, but every row is still checked
                # (the held-out ones too), so that one round trip shows every bad row.
                new_rows, authors, db_errors = check_against_project(
                    project, rows if errors or batch_errors else kept, existing_ids=existing_ids
                )
                if batch_errors or db_errors:
                    errors.extend(_by_row([*batch_errors, *db_errors])[: MAX_LISTED_ERRORS - len(errors)])
                    continue
                if errors:
                    continue
                skipped += len(kept) - len(new_rows)
                if job_id is not None:
                    # The share of the file read and checked; its batch is written next.
                    job_set_progress(job_id, read / expected_rows)
                if new_rows:
                    writer.write(new_rows, authors)
            if not valid and not errors:
                errors.append(FieldError("file", _("contains no rows")))
            if errors:
                raise InvalidInput(refusal or _("the file has invalid rows; nothing was imported"), errors=errors)
        writer.finish(skipped=skipped, job_id=job_id)
    result = ImportResult(created=writer.created, skipped=skipped)
    return dataclasses.replace(result, held_out=held_count, held_out_rows=tuple(held))


# A project with fewer items than this has its ids read once when an import begins.
FEW_ITEMS = 50_000


def _ids_if_few(project: Project) -> set[str] | None:
    """The project's ids when it has fewer than FEW_ITEMS items (call with the project
    locked, before the import writes), else None. The batches' database checks then look up
    only ids the project had: the import's own rows, visible to its transaction as it goes,
    are under statistics that still count the project as (nearly) empty, and PostgreSQL read
    every one of them for each batch's lookup (a scan of the project's position index instead
    of its unique id index: 0.2 s per batch at 200,000 rows, a million rows' import quadratic)."""
    ids = set(Item.objects.filter(project=project).values_list("external_id", flat=True)[:FEW_ITEMS])
    return ids if len(ids) < FEW_ITEMS else None


def items_import(
    *,
    project: Project,
    data: "bytes | Readable",
    fmt: str,
    filename: str = "",
    user=None,
    options: ImportOptions = ImportOptions(),
) -> ImportResult:
    """Validate and store a file, or hand a large one to a Job on the worker (`options`:
    the published dataset's split and final labels, ImportOptions). `data`: the file's
    bytes, or the open file (an upload), which is read line by line, never whole, unless it
    becomes a job's stored input."""
    upload = UploadText(data)
    if upload.size > settings.MASHOV_MAX_IMPORT_BYTES:
        raise PayloadTooLarge(
            _("the file is larger than %(bytes)s bytes") % {"bytes": settings.MASHOV_MAX_IMPORT_BYTES}, field="file"
        )
    kind = get_kind(project.kind)
    if fmt not in kind.formats:
        raise InvalidInput(_format_refused(kind), field="format")
    upload.check()
    if upload.rows_bound > settings.MASHOV_IMPORT_JOB_ROWS:
        with transaction.atomic():
            job = job_create(
                kind="import",
                project=project,
                user=user,
                params={
                    "format": fmt,
                    "filename": filename,
                    "split": options.split,
                    "labels_final": options.labels_final,
                },
                input_data=upload.bytes(),
            )
            audit_record(actor=user, action="import", project=project, target=f"job:{job.pk}",
                         after={"format": fmt, "filename": filename, "job": job.pk})  # fmt: skip
        return ImportResult(created=0, skipped=0, job=job.pk)
    with transaction.atomic():
        result = import_records(project, kind, fmt, upload, options=options, filename=filename)
        audit_record(actor=user, action="import", project=project, target=f"project:{project.slug}",
                     after={"format": fmt, "filename": filename, "created": result.created, "skipped": result.skipped,
                            "held_out": result.held_out})  # fmt: skip
    return result


def items_import_job(job: Job) -> dict:
    """The worker's half of a large import; returns the job's result or its errors."""
    project = job.project
    assert project is not None  # items_import made the job with one, and its input
    kind = get_kind(project.kind)
    try:
        upload = UploadText.checked(JobInput(job.pk))
        fmt, filename = job.params["format"], job.params.get("filename", "")
        options = import_options_clean(job.params.get("split", ""), job.params.get("labels_final", False))
        result = import_records(
            project, kind, fmt, upload, options=options, filename=filename, job_id=job.pk, refusal=_("invalid rows")
        )
    except InvalidInput as exc:
        return {"errors": [error.as_dict() for error in exc.errors]}
    return {key: value for key, value in result.as_dict().items() if key != "job"}
