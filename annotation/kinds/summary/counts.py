"""A large `summary_rating` project's report kept by the changed items on the worker
(services.figures, `Kind.report_counts`): each item's share of the counts the report is
computed from, and the report from their sums, the same numbers `summary_report_sections`
computes over every item.

What the counts hold, and why they are enough:
- sums over summaries (summaries, rated, ratings, error tags per system; items measured;
  the BERTScore models) as counts;
- the means of the file's scores and of the intrinsic measures: how many summaries have
  each, and their sum kept exactly as integers (metrics.figures.float_scaled), so the
  mean is the float math.fsum gives over the values (`_avg`), whatever the order;
- the bootstrap interval of each system's mean rating is not a sum: it reads every
  summary's mean rating. A mean rating is a fraction of small integers (the scores cast,
  their number), so the counts hold how many summaries have each fraction: a multiset
  with at most a few dozen keys per system and criterion, which the bootstrap resamples
  as counts of its distinct values (metrics.intervals.counted_mean_bounded_interval), at
  a cost that follows those keys, not the summaries;
- the correlations with the automatic scores (Pearson, and Kendall's tau, a rank
  statistic with no sum) read every (mean rating, score) pair. A score is a float, seldom
  repeated, so their multiset grows with the rated summaries: it is not summed (it would
  make the sums, read and written whole by every run, as large as the items' shares) but
  kept in each item's share (`PAIRS`, metrics.figures.ITEM_OWN) and read from the shares by
  one query per run: the report's one cost that follows the rated summaries, not the
  changed items;
- the systems' order (their first appearance in the items' order) is not a sum either:
  it is read from the first items, in order, until every system counted is placed (one
  query of RECORD_CHUNK items where the first item holds every system)."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

import numpy as np

from annotation.metrics.figures import ITEM_OWN, SEPARATOR, float_scaled, float_sum

from .measures import json_column
from .ratings import CRITERIA
from .results import _items, _ratings, sorted_pairs, summary_facts, summary_sections

# The item's own (mean rating, score) pairs, read from the shares (not summed).
PAIRS = f"{ITEM_OWN}pairs"
# A float's counters: how many values, their sum at the coarse and at the fine scale.
_FLOAT_PARTS = ("n", "c", "f")
# Items read at a time while the systems' order is placed.
_ORDER_CHUNK = 100


def _key(value: Any) -> str:
    """A system, score name or tag as a key part: its JSON (no raw tab, any JSON type)."""
    return json.dumps(value, sort_keys=True)


def summary_counts(project, item_ids: list[int]) -> dict[int, dict[str, dict[str, int]]]:
    """{item id: its share of the counts} (module docstring), in two queries."""
    items = _items(project, item_ids)
    shares: dict[int, dict[str, dict[str, int]]] = {
        item_id: {"items": {"items": 1, "measured": int(info["intrinsic"] is not None)}}
        for item_id, info in items.items()
    }

    def add(item_id: int, counter: str, key: str, n: int = 1) -> None:
        if n:
            keys = shares[item_id].setdefault(counter, {})
            keys[key] = keys.get(key, 0) + n

    def add_float(item_id: int, counter: str, key: str, value) -> None:
        coarse, scaled = float_scaled(value)
        add(item_id, f"{counter}_n", key)
        add(item_id, f"{counter}_c" if coarse else f"{counter}_f", key, scaled)

    for item_id, info in items.items():
        if info["bertscore_model"]:
            add(item_id, "bertscore_models", _key(info["bertscore_model"]))
    for facts in summary_facts(items, _ratings(project, items, item_ids)):
        item_id, system = facts.item_id, _key(facts.system)
        add(item_id, "summaries", system)
        for name, value in facts.automatic.items():
            add_float(item_id, "automatic", f"{system}{SEPARATOR}{_key(name)}", value)
        for name, value in facts.intrinsic.items():
            add_float(item_id, "intrinsic", f"{system}{SEPARATOR}{_key(name)}", value)
        if facts.cast is not None:
            add(item_id, "ratings", system, max(len(facts.cast[c]) for c in CRITERIA))
            add(item_id, "rated", system, int(any(facts.cast[c] for c in CRITERIA)))
            for criterion in CRITERIA:
                if facts.cast[criterion]:
                    mean = Fraction(sum(facts.cast[criterion]), len(facts.cast[criterion]))
                    add(item_id, "means", SEPARATOR.join((system, criterion, str(mean))))
                    for name, value in facts.paired.items():
                        add(item_id, PAIRS, SEPARATOR.join((criterion, _key(name), str(mean), value.hex())))
        for tag in facts.tags:
            add(item_id, "tags", f"{system}{SEPARATOR}{_key(tag)}")
        for tag in set(facts.tags):
            add(item_id, "tagged", f"{system}{SEPARATOR}{_key(tag)}")
    return shares


def _systems_in_order(project, systems: set[str]) -> list[str]:
    """The systems (keys) counted, in the order of their first appearance in the items'
    order: the items read in order until each is placed."""
    from annotation.models import Item

    placed: list[str] = []
    position = None
    while len(placed) < len(systems):
        rows = Item.objects.filter(project=project).order_by("position", "pk")
        if position is not None:
            at, pk = position
            rows = rows.filter(position__gte=at).exclude(position=at, pk__lte=pk)
        chunk = list(rows.values_list("position", "pk", "payload__summaries")[:_ORDER_CHUNK])
        if not chunk:
            break  # the counts name a system no item holds: never kept so, placed last
        for at, pk, summaries in chunk:
            summaries = json_column(summaries)
            for summary in summaries if isinstance(summaries, list) else []:
                key = _key(summary.get("system") if isinstance(summary, dict) else None)
                if key in systems and key not in placed:
                    placed.append(key)
            position = (at, pk)
    return placed + sorted(systems - set(placed))


def _item_pairs(project):
    """The items' own (mean rating, score) pairs (`PAIRS`) as their shares hold them. One
    query, by the project's shares."""
    from annotation.models import ItemFigures

    return (
        ItemFigures.objects.filter(project=project, **{"value__k__has_key": PAIRS})
        .values_list(f"value__k__{PAIRS}", flat=True)
        .iterator(chunk_size=5000)
    )


def _pairs_read(project) -> dict[tuple[str, str], tuple[list[float], list[float], list[int]]]:
    """{(criterion, score name as its key): (mean ratings, scores, how many summaries have
    that pair)} from the items' shares: three lists per scope, repeated and sorted by numpy
    afterwards rather than as a list of tuples per pair. A scope and a mean rating's
    fraction are parsed once each (a few dozen), not per pair (every rated summary)."""
    scopes: dict[str, tuple[list[float], list[float], list[int]]] = {}
    read: dict[tuple[str, str], tuple[list[float], list[float], list[int]]] = {}
    means: dict[str, float] = {}
    for share in _item_pairs(project):
        for key, n in share.items():
            scope, mean, value = key.rsplit(SEPARATOR, 2)
            if scope not in scopes:
                criterion, name = scope.split(SEPARATOR)
                scopes[scope] = read[(criterion, name)] = ([], [], [])
            if mean not in means:
                means[mean] = float(Fraction(mean))
            human, automatic, repeats = scopes[scope]
            human.append(means[mean])
            automatic.append(float.fromhex(value))
            repeats.append(n)
    return read


def summary_sections_from_counts(project, settings: dict, counts: dict[str, dict[str, int]]) -> dict:
    """`summary_report_sections` from the items' `summary_counts` summed: the items' first
    rows (the systems' order), their shares' pairs and the stored profile read."""
    keys = _systems_in_order(project, set(counts.get("summaries", {})))
    per_system: dict[str, dict] = {
        key: {
            "summaries": counts.get("summaries", {}).get(key, 0),
            "rated": counts.get("rated", {}).get(key, 0),
            "ratings": counts.get("ratings", {}).get(key, 0),
            "means": {criterion: {} for criterion in CRITERIA},
            "automatic": {},
            "intrinsic": {},
            "tags": {},
            "tagged": {},
        }
        for key in keys
    }
    for key, n in counts.get("means", {}).items():
        system, criterion, mean = key.split(SEPARATOR)
        held = per_system[system]["means"][criterion]
        held[float(Fraction(mean))] = held.get(float(Fraction(mean)), 0) + n
    for counter in ("automatic", "intrinsic"):
        parts = [counts.get(f"{counter}_{part}", {}) for part in _FLOAT_PARTS]
        for key, n in parts[0].items():
            system, name = key.split(SEPARATOR)
            mean = float_sum(parts[1].get(key, 0), parts[2].get(key, 0)) / n
            per_system[system][counter][json.loads(name)] = mean if counter == "automatic" else (n, mean)
    for counter in ("tags", "tagged"):
        for key, n in counts.get(counter, {}).items():
            system, tag = key.split(SEPARATOR)
            per_system[system][counter][json.loads(tag)] = n
    pairs = {}
    for (criterion, name), (human, automatic, repeats) in _pairs_read(project).items():
        pairs[(criterion, json.loads(name))] = sorted_pairs(
            np.repeat(np.array(human), repeats), np.repeat(np.array(automatic), repeats)
        )
    items = counts.get("items", {})
    return summary_sections(
        project,
        settings,
        {json.loads(key): row for key, row in per_system.items()},
        pairs,
        items=items.get("items", 0),
        measured=items.get("measured", 0),
        bertscore_models={json.loads(model) for model in counts.get("bertscore_models", {})},
    )
