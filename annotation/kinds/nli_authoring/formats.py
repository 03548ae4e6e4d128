"""The files of `nli_authoring`: the JSONL/CSV export record, in the import's shape (`id,
question, choices, answer_index, group, split`) with the authors' pairs beside it, so that
the export imports back to the same questions."""

from __future__ import annotations

VALUE_ORDER = ("premise", "entailment", "contradiction", "neutral", "premise_source", "neutral_source")


def authoring_export_record(item, facts) -> dict:
    """The question as imported; `authored`: per annotation (in the order they were
    stored) the author's pseudonym and what they wrote (the three relabel items made from
    it are in the relabel project's export)."""
    payload = item.payload
    authored = []
    for annotator, value in facts.annotations:
        value = value if isinstance(value, dict) else {}
        authored.append({"annotator": annotator, **{key: value[key] for key in VALUE_ORDER if key in value}})
    return {
        "id": item.external_id,
        "question": payload.get("question", ""),
        "choices": list(payload.get("choices") or []),
        "answer_index": payload.get("answer_index"),
        "group": item.group,
        "split": item.split,
        "status": item.status,
        "round": item.round,
        "n": len(facts.annotations),
        "annotators": [annotator for annotator, _value in facts.annotations],
        "authored": authored,
    }


CSV_COLUMNS = ("id", "question", "choices", "answer_index", "group", "split", "status", "round", "n", "annotators")
