"""`nli_relabel` and `label_test`: label a premise/hypothesis pair entailment / neutral /
contradiction (FarsTail §3; LCHAIM's human baseline for `label_test`)."""

import json
from collections.abc import Iterator
from pathlib import PurePath
from typing import Any

from annotation.errors import FieldError, InvalidInput
from annotation.rows import ItemRow, RowProblems, extra_in_order, read_csv_rows, require_text, store_extra

from .base import Kind

LABELS = ("entailment", "neutral", "contradiction")
# FarsTail's single-letter codes, also accepted in JSONL and CSV.
SHORT_LABELS = {"e": "entailment", "n": "neutral", "c": "contradiction"}
LONG_TO_SHORT = {long: short for short, long in SHORT_LABELS.items()}
# FarsTail's TSV columns, and its optional ones in the dataset's order (the stored payload
# may not keep key order: PostgreSQL's jsonb sorts keys).
FARSTAIL_COLUMNS = ("premise", "hypothesis", "label")
FARSTAIL_EXTRA_COLUMNS = ("hard(hypothesis)", "hard(overlap)")


def canonical_label(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    if value in LABELS:
        return value
    return SHORT_LABELS.get(value)


class NliKind(Kind):
    template = "annotation/annotate_nli.html"
    extra_formats = ("farstail",)

    def parse_record(self, record: dict, row: int) -> tuple[ItemRow | None, list[FieldError]]:
        problems = RowProblems(row)
        common = self.common_fields(record, problems)
        premise = require_text(record, "premise", problems)
        hypothesis = require_text(record, "hypothesis", problems)
        label = ""
        if record.get("label") not in (None, ""):
            label = canonical_label(record["label"]) or ""
            if not label:
                problems.add("label", f"must be one of {', '.join(LABELS)} (or e, n, c)")
        author = require_text(record, "author", problems, required=False, identifier=True)
        extra = record.get("extra")
        if extra is not None and not isinstance(extra, dict):
            problems.add("extra", "must be an object")
        if problems.errors:
            return None, problems.errors
        payload = {"premise": premise, "hypothesis": hypothesis}
        if extra:
            store_extra(payload, extra)
        return ItemRow(payload=payload, reference_label=label, author=author, position=row, **common), []

    def read_format(self, fmt: str, text: str, filename: str) -> Iterator[tuple[int, dict]]:
        if fmt != "farstail":
            yield from super().read_format(fmt, text, filename)
            return
        yield from read_farstail(text, filename)

    def annotator_payload(self, item) -> dict:
        return {"premise": item.payload["premise"], "hypothesis": item.payload["hypothesis"]}

    def clean_value(self, value: Any, item) -> dict:
        if not isinstance(value, dict):
            raise InvalidInput("must be an object like {\"label\": \"entailment\"}", field="value")
        unknown = set(value) - {"label"}
        if unknown:
            raise InvalidInput(f"unknown field(s): {', '.join(sorted(unknown))}", field="value")
        label = value.get("label")
        if label not in LABELS:
            raise InvalidInput(f"must be one of {', '.join(LABELS)}", field="value.label")
        return {"label": label}

    # --- Export (issue 3, item 6) ----------------------------------------------------------

    export_extra_formats = {
        # FarsTail's own layout: csv.writer(delimiter="\t", lineterminator="\n"), QUOTE_MINIMAL,
        # which writes the upstream files back byte for byte (../shared/data/farstail/README.md).
        "farstail": {
            "content_type": "text/tab-separated-values; charset=utf-8",
            "extension": "tsv",
            "delimiter": "\t",
            "lineterminator": "\n",
        },
    }

    def export_record(self, item, facts) -> dict:
        """premise and hypothesis as stored; `votes` has every label (0 when none) and, like
        the consensus step, counts the author's or original label as one vote where the kind
        aggregates by consensus. While the current round is undecided, `votes` and `n` are
        the votes so far and `agreement` and `label_changed` are null."""
        outcome = facts.outcome
        if outcome is not None:
            counts = dict(outcome.votes)
            n = outcome.n_votes
        else:
            counts = {}
            cast = [value.get("label") for _annotator, value in facts.annotations if isinstance(value, dict)]
            if self.aggregates_by_consensus and item.reference_label:
                cast.append(item.reference_label)
            for label in cast:
                if isinstance(label, str):
                    counts[label] = counts.get(label, 0) + 1
            n = sum(counts.values())
        votes = {label: counts.get(label, 0) for label in LABELS}
        votes.update({label: count for label, count in sorted(counts.items()) if label not in votes})
        # The common record, with premise and hypothesis in place of the payload and the
        # votes counted as above; keys keep the common record's order.
        common = super().export_record(item, facts)
        return {
            "id": common["id"],
            "premise": item.payload.get("premise", ""),
            "hypothesis": item.payload.get("hypothesis", ""),
            **{key: value for key, value in common.items() if key not in ("id", "payload")},
            "votes": votes,
            "n": n,
            "annotator_labels": [
                value.get("label") if isinstance(value, dict) else None for _annotator, value in facts.annotations
            ],
            "extra": extra_in_order(item.payload, FARSTAIL_EXTRA_COLUMNS),
        }

    def export_csv_columns(self) -> tuple[str, ...]:
        return (
            "id", "premise", "hypothesis", "gold_label", "author_label",
            *(f"votes_{label}" for label in LABELS),
            "n", "round", "group", "split", "status", "label_changed", "agreement",
            "author", "annotators", "annotator_labels", "extra",
        )  # fmt: skip

    def export_table_header(self, fmt: str, items) -> list[str]:
        """premise, hypothesis, label, then the extra columns the items carry, in the order
        they were imported in and first met. One query over the exported items finds them
        (constant memory)."""
        if fmt != "farstail":
            return super().export_table_header(fmt, items)
        seen: dict[str, None] = {}
        for extra, order in items.values_list("payload__extra", "payload__extra_order").iterator(chunk_size=2000):
            for key in extra_in_order({"extra": extra, "extra_order": order}, FARSTAIL_EXTRA_COLUMNS):
                if key not in FARSTAIL_COLUMNS:
                    seen.setdefault(key, None)
        return [*FARSTAIL_COLUMNS, *seen]

    def export_table_row(self, fmt: str, item, header: list[str]) -> list[str]:
        """The gold label for an accepted item, else its reference (author's or original)
        label, as FarsTail's single letter; extra cells as stored (empty when missing)."""
        if fmt != "farstail":
            return super().export_table_row(fmt, item, header)
        label = item.gold_label if item.status == "accepted" else item.reference_label
        extra = item.payload.get("extra") or {}
        row = [item.payload.get("premise", ""), item.payload.get("hypothesis", ""), LONG_TO_SHORT.get(label, label)]
        for key in header[len(FARSTAIL_COLUMNS) :]:
            value = extra.get(key, "") if isinstance(extra, dict) else ""
            row.append(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
        return row


def read_farstail(text: str, filename: str) -> Iterator[tuple[int, dict]]:
    """FarsTail's own TSV (premise, hypothesis, label[, hard(hypothesis), hard(overlap)]):
    CSV-style quoting with tabs inside quoted fields, e/c/n labels, no id column. A question
    is a run of consecutive rows with the same premise, which becomes the group. External
    ids are `<file stem>-<row>` so that re-importing the same file skips every row."""
    stem = PurePath(filename or "farstail").stem or "farstail"
    rows = read_csv_rows(text, delimiter="\t")
    _, header = next(rows, (0, None))
    if header is None or header[:3] != ["premise", "hypothesis", "label"]:
        raise InvalidInput("a FarsTail file starts with the header premise, hypothesis, label", field="file")
    extra_columns = header[3:]
    previous_premise, group_number = None, 0
    for row_number, fields in rows:
        if len(fields) != len(header):
            yield row_number, {"_error": f"has {len(fields)} fields, the header has {len(header)}"}
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


class NliRelabelKind(NliKind):
    name = "nli_relabel"
    title = "NLI relabeling"
    default_settings = {"consensus_k": 4, "consensus_n": 5, "revision_rounds": 1}
    aggregates_by_consensus = True
    default_export_status = "accepted"

    def check_settings(self, settings: dict) -> None:
        k, n = settings["consensus_k"], settings["consensus_n"]
        if not 2 <= n <= 50:
            raise InvalidInput("must be between 2 and 50", field="settings.consensus_n")
        if not (n / 2 < k <= n):
            raise InvalidInput("must be more than half of consensus_n and at most consensus_n", field="settings.consensus_k")
        if not 0 <= settings["revision_rounds"] <= 5:
            raise InvalidInput("must be between 0 and 5", field="settings.revision_rounds")

    def votes_needed(self, item, settings: dict) -> int:
        # The author's or original label is one of the n votes (FarsTail §3).
        return settings["consensus_n"] - (1 if item.reference_label else 0)

