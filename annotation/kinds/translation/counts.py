"""A large `translation_rating` project's report kept by the changed items on the worker
(services.figures, `Kind.report_counts`): each item's share of the counts the
back-translation figures are computed from, and the report from their sums.

What the counts hold, and why they are enough:
- Table 1 is not counted: it is read from the alpha reports the "agreement" job stores
  (results.translation_table1), one query of a row per system and criterion, whatever the
  number of items;
- the items the filter removed and those a supervisor restored are sums over items;
- the similarity figures (`n`, `mean`, `sd`, `below` per system and part) are over *unique
  instances*: a source text and its back-translation held by several items (a premise
  shared by several hypotheses) counts once, with the score of its first holder in id
  order. The back-translation job, which reads every item, stores with each holder the
  ids of the items holding the same instance (`HOLDERS`, only where it is shared), so an
  item's share holds the instances it is the first *existing* holder of. Between two runs
  of the job an instance's holders only go (scores and texts change only by the job;
  imported items hold none until it runs): a deleted holder hands its instances to the next
  one, which is read with it (`translation_related`, from the ids its share kept). The
  mean and the sum of squares are kept exactly as integers (metrics.figures.float_scaled),
  so the figures are the same whatever the order the instances are summed in; `below`
  depends on the threshold setting, whose change asks for a run over every item
  (`TranslationRatingKind.after_settings_change`).

Items scored before the job stored holders got them from their stored scores and texts
(migration 0036), as the job would store them."""

from __future__ import annotations

import json
import math
from fractions import Fraction

from django.db.models import Exists, OuterRef

from annotation.metrics.figures import FLOAT_COARSE, FLOAT_FINE, ITEM_OWN, SEPARATOR, counts_apply, float_scaled
from annotation.models import Item, ItemFigures
from annotation.selectors.figures import project_item_ids
from annotation.sql import column_in

# Stored by the back-translation job beside its record (`Item.computed`): {"<candidate
# index>": {"premise" | "hypothesis": [ids of the items holding the same instance]}}, for
# the shared instances only. Not in the record itself, which the exports carry.
HOLDERS = "back_translation_holders"
PARTS = ("premise", "hypothesis")
# The other holders of the instances an item's share counts (not summed: read back from
# the stored shares when the item changes, metrics.figures.ITEM_OWN).
OTHER_HOLDERS = f"{ITEM_OWN}holders"
# An item's share: per "<system JSON>\t<part>", the instances, their scores' sums (at the
# coarse and the fine scale of float_scaled), their squares' sums, and those below the
# threshold; and the items removed by the filter and restored.
_SUMS = ("n", "c", "f", "qc", "qf", "below")
_COUNTERS = {name: f"bt_{name}" for name in _SUMS}
ITEMS = "bt_items"
# Items read at a time by the report computed whole.
_CHUNK = 2000


def _holder_ids(project, holders: set[int]) -> set[int]:
    """Those of the items `holders` that still exist. One query, none for no ids."""
    if not holders:
        return set()
    return set(
        Item.objects.filter(column_in(Item, "id", sorted(holders)), project=project).values_list("pk", flat=True)
    )


def translation_counts(project, item_ids: list[int], threshold: float) -> dict[int, dict[str, dict[str, int]]]:
    """{item id: its share of the counts} (module docstring), in two queries."""
    rows = list(
        Item.objects.filter(column_in(Item, "id", item_ids), project=project, probe_of__isnull=True)
        .exclude(computed__back_translation=None)
        .values_list("pk", "computed", "status")
    )
    shared = {
        int(pk)
        for _pk, computed, _status in rows
        for parts in ((computed or {}).get(HOLDERS) or {}).values()
        for pks in parts.values()
        for pk in pks
    }
    existing = _holder_ids(project, shared)
    shares: dict[int, dict[str, dict[str, int]]] = {}
    for item_id, computed, status in rows:
        record = (computed or {}).get("back_translation")
        if not isinstance(record, dict):
            continue
        share: dict[str, dict[str, int]] = {
            ITEMS: {
                "removed": int(status == Item.Status.REMOVED and "removed" in record),
                "restored": int("restored" in record),
            }
        }

        def add(counter: str, key: str, n: int) -> None:
            if n:
                keys = share.setdefault(counter, {})
                keys[key] = keys.get(key, 0) + n

        holders = (computed or {}).get(HOLDERS) or {}
        for index, row in enumerate(record.get("candidates") or []):
            for part in PARTS:
                score = row.get(part)
                if score is None:
                    continue
                others = [pk for pk in (holders.get(str(index)) or {}).get(part) or () if pk != item_id]
                if any(pk < item_id and pk in existing for pk in others):
                    continue  # an earlier holder counts it
                key = f"{json.dumps(row.get('system'))}{SEPARATOR}{part}"
                # The score times 2**96 (or 2**1074), an integer: its square is the score's
                # square at twice that scale, exactly.
                coarse, scaled = float_scaled(score)
                add(_COUNTERS["n"], key, 1)
                add(_COUNTERS["c" if coarse else "f"], key, scaled)
                add(_COUNTERS["qc" if coarse else "qf"], key, scaled * scaled)
                add(_COUNTERS["below"], key, int(score < threshold))
                for pk in others:
                    add(OTHER_HOLDERS, str(pk), 1)
        shares[item_id] = share
    return shares


def translation_related(project, item_ids: list[int]) -> list[int]:
    """The other holders of the instances the shares of `item_ids` counted, for those of
    the items that are gone (module docstring). One query, by the stored shares."""
    gone = (
        ItemFigures.objects.filter(
            column_in(ItemFigures, "item_id", item_ids), project=project, **{"value__k__has_key": OTHER_HOLDERS}
        )
        .exclude(Exists(Item.objects.filter(pk=OuterRef("item_id"))))
        .values_list(f"value__k__{OTHER_HOLDERS}", flat=True)
    )
    return sorted({int(pk) for holders in gone for pk in holders} - set(item_ids))


def _figures(counts: dict[str, dict[str, int]], key: str) -> dict:
    """n, mean, sample sd and `below` of one system × part from its summed counts: exact
    until the last rounding, so the same numbers whatever the order of the instances."""
    n = counts.get(_COUNTERS["n"], {}).get(key, 0)
    total = Fraction(counts.get(_COUNTERS["c"], {}).get(key, 0), 1 << FLOAT_COARSE) + Fraction(
        counts.get(_COUNTERS["f"], {}).get(key, 0), 1 << FLOAT_FINE
    )
    squares = Fraction(counts.get(_COUNTERS["qc"], {}).get(key, 0), 1 << 2 * FLOAT_COARSE) + Fraction(
        counts.get(_COUNTERS["qf"], {}).get(key, 0), 1 << 2 * FLOAT_FINE
    )
    sd = None
    if n > 1:
        sd = math.sqrt(max((squares - total * total / n) / (n - 1), Fraction(0)))
    return {
        "n": n,
        "mean": float(total / n) if n else None,
        "sd": sd,
        "below": counts.get(_COUNTERS["below"], {}).get(key, 0),
    }


def back_translation_from_counts(settings: dict, counts: dict[str, dict[str, int]]) -> dict:
    """`back_translation_report` from the items' `translation_counts` summed."""
    systems = {key.split(SEPARATOR)[0] for key in counts.get(_COUNTERS["n"], {})}
    figures = {
        json.loads(system): {part: _figures(counts, f"{system}{SEPARATOR}{part}") for part in PARTS}
        for system in systems
    }
    items = counts.get(ITEMS, {})
    return {
        "threshold": settings["back_translation_threshold"],
        "released_system": settings["released_system"],
        "systems": dict(sorted(figures.items(), key=lambda pair: str(pair[0]))),
        "removed": items.get("removed", 0),
        "restored": items.get("restored", 0),
    }


def counts_of_every_item(project, threshold: float) -> dict[str, dict[str, int]]:
    """The items' `translation_counts` summed over the project, read in chunks (the report
    computed whole)."""
    counts: dict[str, dict[str, int]] = {}
    for ids in project_item_ids(project, _CHUNK):
        for share in translation_counts(project, ids, threshold).values():
            counts_apply(counts, share, 1)
    return counts
