"""The shape every workflow kind has. A kind is a module with one `Kind` subclass,
registered in `registry.py`; adding a kind never means touching another one."""

import csv
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from annotation import safe_json
from annotation.errors import FieldError, InvalidInput
from annotation.metrics.text import bidi_control, forbidden_character

# Settings every kind understands.
COMMON_SETTINGS = {
    "claim_ttl": 30 * 60,  # seconds an open claim holds its slot
}
# A claim longer than a week would hold an item from everyone else for good; and an
# expiry beyond year 9999 cannot be stored at all.
CLAIM_TTL_RANGE = (10, 7 * 24 * 3600)
# Seeds are free, but within 64 bits: a longer number is a mistake, not a seed.
SEED_RANGE = (-(2**63), 2**63 - 1)


def check_range(settings: dict, name: str, low, high) -> None:
    """A numeric setting within [low, high], else a 400 naming it."""
    if not low <= settings[name] <= high:
        raise InvalidInput(f"must be between {low} and {high}", field=f"settings.{name}")


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


def require_text(record: dict, name: str, problems: RowProblems, *, required: bool = True, identifier: bool = False) -> str:
    """A string field of an import row or a submitted value, unchanged. Identifiers
    (ids, labels, groups, splits, usernames) must not carry bidi controls."""
    value = record.get(name)
    if value is None or value == "":
        if required:
            problems.add(name, "is required")
        return ""
    if isinstance(value, (int,)) and not isinstance(value, bool) and identifier:
        value = str(value)
    if not isinstance(value, str):
        problems.add(name, "must be a string")
        return ""
    reason = forbidden_character(value)
    if reason:
        problems.add(name, reason)
        return ""
    if identifier:
        reason = bidi_control(value)
        if reason:
            problems.add(name, reason)
            return ""
        if len(value) > 200:
            problems.add(name, "is longer than 200 characters")
            return ""
    return value


def read_jsonl_objects(text: str) -> Iterator[tuple[int, Any, str | None, str | None]]:
    """(line number, parsed value, None, None) for every non-blank line of a JSONL file, or
    (line number, None, why, member) for a line that is not JSON or is JSON that safe_json
    refuses (too deep, NaN); `member` names the object's top-level member at fault, or is
    None when the fault is the line's. Splits on "\n" only: str.splitlines() would also
    break on U+2028/U+2029/U+0085, which are legal inside JSON strings."""
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        try:
            yield number, safe_json.loads(line), None, None
        except safe_json.UnsafeJSON as exc:
            member, reason = _member_refused(line) or (None, exc)
            yield number, None, str(reason), member


_JSON_WHITESPACE = re.compile(r"[ \t\n\r]*")


def _member_refused(line: str) -> tuple[str, safe_json.UnsafeJSON] | None:
    """For a line holding a JSON object that safe_json refuses: the first top-level member
    whose value it refuses, and why. None when the line is not an object or the object
    itself is malformed (then the whole row is at fault)."""
    decoder = json.JSONDecoder()
    position = _JSON_WHITESPACE.match(line).end()
    if not line.startswith("{", position):
        return None
    separator = "{"
    while separator == "{" or separator == ",":
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
            return key, safe_json.UnsafeJSON(f"nests deeper than {safe_json.MAX_DEPTH} levels")
        except ValueError:
            return None
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


def read_csv_rows(text: str, *, delimiter: str = ",", skip_blank: bool = False) -> Iterator[tuple[int, list[str]]]:
    """(row number, cells) for every record of a CSV or TSV text, the header being row 0,
    whatever the line ends (CRLF, LF or CR alone); a blank line is a row of no cells, or is
    left out and not counted with skip_blank. Quoting is read strictly: a quoted cell never
    closed, or text after a closing quote, is a 400 for the file naming the row and the line
    where its record starts."""
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
        except csv.Error as exc:
            if lines.exhausted:
                message = f"row {row} (line {line}): a quoted cell opens here and is never closed"
            else:
                message = f"row {row} (line {line}): the quoting is malformed ({exc})"
            raise InvalidInput(message, errors=[FieldError("file", message, row)]) from None
        if cells or not skip_blank:
            yield row, cells
            row += 1


class _LinesRead:
    """The lines of a text for csv.reader, noting when csv has asked past the last one (a
    quoted cell still open at the end of the file)."""

    def __init__(self, text: str):
        self._lines = io.StringIO(text, newline="")
        self.exhausted = False

    def __iter__(self):
        return self

    def __next__(self) -> str:
        line = self._lines.readline()
        if line == "":
            self.exhausted = True
            raise StopIteration
        return line


def store_extra(payload: dict, extra: dict) -> None:
    """Keep an import row's `extra` columns in `payload`, with their order: jsonb keeps an
    object's keys in an order of its own (by length, then bytes), so the file's order is
    stored beside them and exports give the columns back as they came in (DESIGN.md §6)."""
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


class Kind:
    name: str = ""
    title: str = ""
    # Import formats besides the common `jsonl` and `csv`.
    extra_formats: tuple[str, ...] = ()
    default_settings: dict[str, Any] = {}
    template: str = ""
    # Whether a complete round goes through the k-of-n consensus step.
    aggregates_by_consensus: bool = False
    # What an export gives by default: the items a data consumer would call finished.
    default_export_status: str = "complete"
    # Fields of a CSV row that hold JSON (lists, objects) rather than text.
    csv_json_fields: tuple[str, ...] = ()

    @property
    def formats(self) -> tuple[str, ...]:
        return ("jsonl", "csv", *self.extra_formats)

    def settings_for(self, settings: dict | None) -> dict:
        """The project's settings with the papers' defaults filled in."""
        return {**COMMON_SETTINGS, **self.default_settings, **(settings or {})}

    def clean_settings(self, settings: Any) -> dict:
        """Validated settings; unknown keys and wrong types are refused."""
        if settings is None:
            settings = {}
        if not isinstance(settings, dict):
            raise InvalidInput("must be an object", field="settings")
        known = {**COMMON_SETTINGS, **self.default_settings}
        errors = []
        for key, value in settings.items():
            if key not in known:
                errors.append(FieldError(f"settings.{key}", f"is not a setting of {self.name}; known: {', '.join(sorted(known))}"))
            elif type(value) is not type(known[key]):
                errors.append(FieldError(f"settings.{key}", f"must be of type {type(known[key]).__name__}"))
        if errors:
            raise InvalidInput("invalid settings", errors=errors)
        merged = self.settings_for(settings)
        check_range(merged, "claim_ttl", *CLAIM_TTL_RANGE)
        self.check_settings(merged)
        return {key: merged[key] for key in known}

    def check_settings(self, settings: dict) -> None:
        """Kind-specific cross-field checks; raise InvalidInput."""

    def authorize_settings(self, settings: dict, actor) -> None:
        """Checks of cleaned settings that depend on who sets them (settings naming another
        project); raise InvalidInput. Every path that stores settings calls it."""

    def read_format(self, fmt: str, text: str, filename: str) -> Iterator[tuple[int, dict]]:
        """(row number, record) pairs for a kind-specific format."""
        raise InvalidInput(f"format {fmt!r} is not available for {self.name}", field="format")

    def parse_record(self, record: dict, row: int) -> tuple[ItemRow | None, list[FieldError]]:
        raise NotImplementedError

    def votes_needed(self, item, settings: dict) -> int:
        raise NotImplementedError

    def annotator_payload(self, item) -> dict:
        """What the annotator may see of an item: never gold, author labels or system names."""
        raise NotImplementedError

    def clean_value(self, value: Any, item) -> dict:
        """The submitted value, validated; raise InvalidInput naming the field."""
        raise NotImplementedError

    # Kinds whose agreement scopes differ from nli's (per round) set this and implement
    # compute_agreement; the "agreement" job then calls it.
    computes_agreement: bool = False

    def compute_agreement(self, project, job) -> dict:
        """Recompute and upsert the project's AgreementReports; return the job's result."""
        raise NotImplementedError

    def report_sections(self, project) -> dict:
        """Kind-specific figures for `GET /api/projects/{slug}/report/` and the dashboard,
        with a bounded number of queries."""
        return {}

    def probe_for_annotator(self, project, user, settings: dict, *, last_group: str | None, now) -> int | None:
        """An item id to claim before the ordinary queue (a coherence probe), locked by the
        caller's transaction, or None. Called while the caller's membership row is locked."""
        return None

    def after_import(self, project, created: int) -> None:
        """Called inside the import transaction once rows are stored; enqueue follow-up work
        with `transaction.on_commit` here."""

    def after_submit(self, annotation, item, settings: dict) -> None:
        """Called inside the submit transaction, with the item locked, after the annotation
        is stored: kinds whose annotations create work elsewhere (authoring) do it here."""

    def common_fields(self, record: dict, problems: RowProblems) -> dict:
        return {
            "external_id": require_text(record, "id", problems, identifier=True),
            "group": require_text(record, "group", problems, required=False, identifier=True),
            "split": require_text(record, "split", problems, required=False, identifier=True),
        }

    # --- Export (issue 3, item 6) ----------------------------------------------------------

    # Export formats besides the common `jsonl` and `csv`: name → how the file is written.
    export_extra_formats: dict[str, dict[str, str]] = {}

    # Formats the kind writes as one document through `export_stream(spec)` (SQuAD JSON).
    streamed_formats: tuple[str, ...] = ()

    def export_stream(self, spec):
        raise NotImplementedError

    @property
    def export_formats(self) -> tuple[str, ...]:
        return ("jsonl", "csv", *self.export_extra_formats)

    def export_record(self, item, facts: "ExportFacts") -> dict:
        """One exported record, JSON-ready, keys in output order, for `item` and the `facts`
        gathered for it. Text is returned exactly as stored (DESIGN.md §6). The default
        carries the payload as stored; kinds flatten what their consumers expect."""
        outcome = facts.outcome
        return {
            "id": item.external_id,
            "payload": item.payload,
            "gold_label": item.gold_label or None,
            "author_label": item.reference_label or None,
            "votes": dict(outcome.votes) if outcome is not None else {},
            "n": outcome.n_votes if outcome is not None else len(facts.annotations),
            "round": item.round,
            "group": item.group,
            "split": item.split,
            "status": item.status,
            "label_changed": outcome.label_changed if outcome is not None else None,
            "agreement": outcome.agreement if outcome is not None else None,
            "author": facts.author,
            "annotators": [annotator for annotator, _value in facts.annotations],
        }

    def export_csv_columns(self) -> tuple[str, ...]:
        """CSV header, naming keys of `export_record`; a dict value `votes` is spread over
        `votes_<label>` columns by the kind that lists them."""
        return ("id", "payload", "gold_label", "author_label", "n", "round", "group", "split",
                "status", "label_changed", "agreement", "author", "annotators")  # fmt: skip

    def export_table_header(self, fmt: str, items) -> list[str]:
        """The header row of one of `export_extra_formats`. `items` is the queryset being
        exported, ordered; a kind may run one query over it to find optional columns."""
        raise InvalidInput(f"format {fmt!r} is not available for exporting {self.name}", field="format")

    def export_table_row(self, fmt: str, item, header: list[str]) -> list[str]:
        """One row of one of `export_extra_formats`, matching `header`."""
        raise InvalidInput(f"format {fmt!r} is not available for exporting {self.name}", field="format")


@dataclass(frozen=True)
class ExportFacts:
    """What the export service gathered in bulk for one item, beside the item itself.

    `outcome` is the ConsensusOutcome of the item's current round, or None while that round
    is undecided. `annotations` are (pseudonymous annotator id, value) of the current round
    in the order they were stored; `author` is the author's pseudonymous id, if any."""

    outcome: Any = None
    annotations: tuple[tuple[str, dict], ...] = ()
    author: str | None = None
