"""LCHAIM's and ConTRoL's published files, written by a release of either LCHAIM kind
(docs/api.md "Releases"):

- LCHAIM: one JSON array per split, `[{"uid", "premise", "hypothesis", "label"}]` with the
  single-letter labels (e, c, n), written as LCHAIM's preprocessing writes it
  (`json.dump(..., indent=4, ensure_ascii=False)`, no final newline);
- ConTRoL: JSON Lines of the same records in English, as ConTRoL's files are written
  (`json.dumps` with its defaults, one record a line).

`uid` restarts in every split: an item imported as `<split>:<uid>` (the LCHAIM import's
external ids) is written with its `uid`, any other with its external id."""

from __future__ import annotations

import hashlib
import json
import re

from annotation.kinds.nli.labels import LONG_TO_SHORT, canonical_label


def lchaim_uid(item) -> str:
    prefix = f"{item.split}:"
    if item.split and item.external_id.startswith(prefix):
        return item.external_id[len(prefix) :]
    return item.external_id


def lchaim_label(value) -> str:
    """The single-letter code of a label given as a code or a long name; "" for none."""
    return LONG_TO_SHORT.get(canonical_label(value) or "", "")


def lchaim_record(uid: str, premise, hypothesis, label) -> dict:
    return {"uid": uid, "premise": premise, "hypothesis": hypothesis, "label": lchaim_label(label)}


def lchaim_json(records: list[dict]) -> bytes:
    return json.dumps(records, indent=4, ensure_ascii=False).encode("utf-8")


def control_jsonl(records: list[dict]) -> bytes:
    return "".join(json.dumps(record) + "\n" for record in records).encode("utf-8")


def system_folder(system: str) -> str:
    """A translation system's name as a folder and config name: letters, digits, `_` and
    `-`, with a digest of the name when anything else had to go (two names never meet).

    >>> system_folder("aws"), system_folder("Google Translate")
    ('aws', 'Google_Translate-47a414')"""
    safe = re.sub(r"[^\w-]", "_", system)
    if safe == system:
        return system
    return f"{safe}-{hashlib.sha256(system.encode('utf-8')).hexdigest()[:6]}"
