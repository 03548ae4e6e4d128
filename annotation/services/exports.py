"""Export a project's items with their outcomes: JSONL, CSV, or a kind's own layout
(`farstail` for the NLI kinds). docs/api.md "Results"; docs/text.md; docs/security.md "Output".

- Streamed in constant memory: items are read with `.iterator(chunk_size=CHUNK_SIZE)` and
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
  user without the server's SECRET_KEY (`annotator_pseudonym`)."""

import csv
import io
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice

from django.db.models import QuerySet
from django.utils.crypto import salted_hmac

from annotation.errors import FieldError, InvalidInput
from annotation.kinds.base import AdjudicationFact, ExportFacts, ExportSplits, Kind
from annotation.kinds.registry import get_kind
from annotation.models import Adjudication, Annotation, ConsensusOutcome, Item, ItemAggregate, Project
from annotation.replica import stream_from_replica
from annotation.rows import csv_neutralise, delimited_line
from annotation.services.decisions import decision_histories, effective_decisions
from annotation.sql import column_in

CHUNK_SIZE = 2000
# `all` exports every item whatever its status; the others name Item.Status values.
EXPORT_STATUSES = ("accepted", "removed", "needs_revision", "open", "complete", "deciding", "all")
UTF8_BOM = "\ufeff"
PSEUDONYM_LENGTH = 16  # hex digits of HMAC-SHA256: 64 bits
COMMON_FORMATS = {
    "jsonl": {"content_type": "application/x-ndjson; charset=utf-8", "extension": "jsonl"},
    "csv": {"content_type": "text/csv; charset=utf-8", "extension": "csv"},
}
# Characters that json.dumps(ensure_ascii=False) leaves raw but str.splitlines() splits on.
_LINE_BREAKING = {"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_LINE_BREAKING_RE = re.compile("[\x85\u2028\u2029]")


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
        errors.append(FieldError("format", f"must be one of {', '.join(known)} for {kind.name}"))
    if status not in EXPORT_STATUSES:
        errors.append(FieldError("status", f"must be one of {', '.join(EXPORT_STATUSES)}"))
    with_history = history in ("1", "true")
    if history not in (None, "", "0", "false", "1", "true"):
        errors.append(FieldError("history", "must be 1 or 0"))
    elif with_history and fmt != "jsonl":
        errors.append(FieldError("history", "is available for the jsonl format only"))
    if errors:
        raise InvalidInput("invalid export parameters", errors=errors)
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


def export_items_queryset(spec: ExportSpec) -> QuerySet[Item]:
    """The items to export, in their source order (file position, then id)."""
    # Coherence probes are reversed copies made for checking annotators, never gold.
    items = Item.objects.filter(project=spec.project, probe_of__isnull=True)
    if spec.status != "all":
        items = items.filter(status=spec.status)
    if spec.split is not None:
        items = spec.splits.filter(items, spec.split) if spec.splits is not None else items.filter(split=spec.split)
    return items.order_by("position", "id")


def annotator_pseudonym(project_id: int, user_id: int) -> str:
    """A user's id in one project's exports: HMAC-SHA256 keyed by SECRET_KEY (salted for
    this use) over (project id, user id), first 16 hex digits. Stable across exports of
    the project, different between projects, and not linkable to a user without the key."""
    return salted_hmac("mashov.export.annotator", f"{project_id}:{user_id}", algorithm="sha256").hexdigest()[
        :PSEUDONYM_LENGTH
    ]


def shown_name(project_id: int, user_id: int, username: str, *, names: bool) -> str:
    """How a person appears to the project's staff: the username where `names` (supervisors
    see names), else the pseudonym the project's exports give them."""
    return username if names else annotator_pseudonym(project_id, user_id)


def export_stream(spec: ExportSpec) -> Iterator[bytes]:
    """The file, as UTF-8 byte chunks (one per CHUNK_SIZE items), read from the read replica
    when there is one (annotation.replica). A generator: nothing is read until the first
    chunk is asked for."""
    return stream_from_replica(_export_chunks(spec))


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
        lines = []
        for item in chunk:
            record = without_empty_objects(_with_split(spec, item, record_of(spec.kind, item, facts[item.pk])))
            line = json.dumps(record, ensure_ascii=False)
            lines.append(_LINE_BREAKING_RE.sub(lambda match: _LINE_BREAKING[match.group()], line))
            lines.append("\n")
        yield "".join(lines).encode("utf-8")


def _csv(spec: ExportSpec, items: QuerySet[Item]) -> Iterator[bytes]:
    columns = (*spec.kind.export_csv_columns(), *(("decided_by",) if spec.kind.labels else ()))
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow([csv_neutralise(column) for column in columns])
    yield (UTF8_BOM + _drain(buffer)).encode("utf-8")
    for chunk, facts in chunks_with_facts(spec.project, items):
        for item in chunk:
            record = _with_split(spec, item, record_of(spec.kind, item, facts[item.pk]))
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
        kept = {key: without_empty_objects(inner) for key, inner in value.items()}
        return {key: inner for key, inner in kept.items() if inner != {}}
    if isinstance(value, list):
        return [without_empty_objects(inner) for inner in value]
    return value


def _table(spec: ExportSpec, items: QuerySet[Item]) -> Iterator[bytes]:
    """A kind's own layout, such as FarsTail's TSV. Written exactly: no BOM, no neutralising
    (the file must round-trip byte for byte); a cell holding the delimiter, a `"`, a CR or
    an LF is quoted as csv.writer's QUOTE_MINIMAL does, the CR included (rows.delimited_cell)."""
    options = spec.kind.export_extra_formats[spec.fmt]
    header = spec.kind.export_table_header(spec.fmt, items)
    delimiter, end = options["delimiter"], options["lineterminator"]
    yield delimited_line(header, delimiter, end).encode("utf-8")
    for chunk in _chunked(items.iterator(chunk_size=CHUNK_SIZE), CHUNK_SIZE):
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
    return [
        csv_neutralise(
            json.dumps(flat[column], ensure_ascii=False)
            if column in json_fields and flat.get(column) not in (None, {})
            else _csv_text(flat.get(column))
        )
        for column in columns
    ]


def _csv_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list) and any(isinstance(inner, (dict, list)) for inner in value):
        # Objects in a list (candidates, summaries) stay JSON, as the CSV import reads them.
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return " ".join(_csv_text(inner) for inner in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False) if value else ""
    return str(value)


# --- bulk reads --------------------------------------------------------------------------------


def _chunked(iterable: Iterable, size: int) -> Iterator[list]:
    iterator = iter(iterable)
    while chunk := list(islice(iterator, size)):
        yield chunk


def chunks_with_facts(
    project: Project, items: QuerySet[Item], *, history: bool = False
) -> Iterator[tuple[list[Item], dict[int, ExportFacts]]]:
    """Items in chunks, each with its items' facts read in four queries (outcomes,
    annotations, adjudication and effective decisions of the current round), a fifth, the
    aggregates of the current round, for kinds that aggregate labels, and with `history`
    a sixth, every decision of the chunk's items."""
    pseudonyms: dict[int, str] = {}
    kind = get_kind(project.kind)
    aggregation = kind.project_settings(project).get("aggregation") if kind.labels else None

    def pseudonym(user_id: int | None) -> str | None:
        if user_id is None:
            return None
        if user_id not in pseudonyms:
            pseudonyms[user_id] = annotator_pseudonym(project.pk, user_id)
        return pseudonyms[user_id]

    for chunk in _chunked(items.iterator(chunk_size=CHUNK_SIZE), CHUNK_SIZE):
        ids = [item.pk for item in chunk]
        # Each read is an index lookup by item id; the round is compared here, as a join
        # to the item table for its round makes PostgreSQL hash the whole table per chunk.
        round_of = {item.pk: item.round for item in chunk}
        outcomes = {
            outcome.item_id: outcome
            for outcome in ConsensusOutcome.objects.filter(column_in(ConsensusOutcome, "item_id", ids)).order_by()
            if outcome.round == round_of[outcome.item_id]
        }
        annotations: dict[int, list[tuple[str, dict]]] = defaultdict(list)
        rows = (
            Annotation.objects.filter(column_in(Annotation, "item_id", ids))
            .order_by("id")
            .values_list("item_id", "round", "annotator_id", "value")
        )
        for item_id, round_, annotator_id, value in rows:
            if round_ == round_of[item_id]:
                annotations[item_id].append((pseudonym(annotator_id), value))
        adjudications = {
            adjudication.item_id: AdjudicationFact(
                label=adjudication.label,
                by=pseudonym(adjudication.adjudicator_id),
                at=adjudication.created_at.isoformat(),
                comment=adjudication.comment,
            )
            for adjudication in Adjudication.objects.filter(column_in(Adjudication, "item_id", ids)).order_by()
            if adjudication.round == round_of[adjudication.item_id]
        }
        decisions = effective_decisions((item.pk, item.round) for item in chunk)
        histories = (
            {
                item_id: [_decision_record(d, pseudonym) for d in rows]
                for item_id, rows in decision_histories(ids).items()
            }
            if history
            else None
        )
        aggregates: dict[int, dict] = defaultdict(dict)
        if aggregation is not None:
            stored = (
                ItemAggregate.objects.filter(column_in(ItemAggregate, "item_id", ids))
                .order_by("item_id", "method")
                .values_list("item_id", "round", "method", "label", "confidence")
            )
            for item_id, round_, method, label, confidence in stored:
                if round_ == round_of[item_id]:
                    aggregates[item_id][method] = {"label": label or None, "confidence": confidence}
        facts = {
            item.pk: ExportFacts(
                outcome=outcomes.get(item.pk),
                annotations=tuple(annotations.get(item.pk, ())),
                author=pseudonym(item.author_id),
                adjudication=adjudications.get(item.pk),
                aggregates=aggregates.get(item.pk, {}),
                aggregation=aggregation,
                decision=decisions.get(item.pk),
                history=None if histories is None else histories.get(item.pk, []),
            )
            for item in chunk
        }
        yield chunk, facts


def _decision_record(decision, pseudonym) -> dict:
    """A decision as exports and `GET /api/items/{id}/decisions/` for reviewers give it:
    a person by their pseudonym."""
    return {
        "round": decision.round,
        "method": decision.method,
        "value": decision.value,
        "status": decision.status,
        "confidence": decision.confidence,
        "by": pseudonym(decision.decided_by_id),
        "job": decision.job_id,
        "override": decision.override,
        "comment": decision.comment,
        "supersedes": decision.supersedes_id,
        "at": decision.created_at.isoformat(),
    }
