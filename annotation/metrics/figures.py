"""A project's supervisor figures as sums over its items, so that they can be kept up to
date item by item: each item's share (its `record`) is added to the sums, a changed item's
old share is taken out and its new one added, and the figures are computed from the sums.
Every sum is of integers, so the figures after any number of such updates are the same
numbers a computation over every item gives. No Django here.

An item's record (JSON, as stored per item):
- `d`: [[annotator, duration key], ...] of its submitted claims, every round
  (metrics.annotator_quality.duration_key);
- `v`: [[annotator, label], ...] its current-round votes with a label of the kind's set;
- `c`, `g`: its consensus and gold label (None without);
- `a`: 1 if an adjudicator decided its current round, else 0;
- `r`: why it waits for an adjudicator besides an incoherent probe ("failed",
  "methods_disagree"; annotation.selectors.annotator_quality);
- `m`, `x`, `e`: its share of the methods' comparison (`comparison_apply`), on an item
  with an aggregate of its current round only; `p`, its position where `x`, stored apart;
- `i`: [split, group, round, flags] of the item, its share of the values the item
  browser's filters offer (`value_counts_apply`); every item of the project has one;
- `k`: {counter: {key: n}}, its share of the counts the kind's report sections are
  computed from (`Kind.report_counts`), for a kind that counts them; a counter named
  with a leading "_" (ITEM_OWN) is kept in the share only, not summed.

The sums:
- `durations`: {annotator: {duration key: claims}};
- `pairs`: {annotator: {"consensus" | "clean" | "gold": {"mine<TAB>reference": items}}},
  "clean" being the items nobody adjudicated;
- `agreement`: {"with" | "without": {"items", "agree", "compared", "pairs": {m: V×V pair
  counts, flat}}} for nominal alpha with and without the adjudicated items
  (metrics.agreement.unit_pair_counts), and `adjudicated`: the adjudicated items;
- `comparison`: the methods' comparison — items with an aggregate, labels decided per
  method, items where two methods gave the same label per (method, other method), items
  where methods disagree, and per method against the reference label (`empty_comparison`);
- `report`: {counter: {key: n}}, the items' `k` summed (the kind's report sections).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from fractions import Fraction

import numpy as np

from annotation.metrics.agreement import alpha_from_pair_counts, unit_pair_counts
from annotation.metrics.annotator_quality import agreement_from_counts, median_of_counts

SEPARATOR = "\t"
SCOPES = ("with", "without")
# The prefix of an item's own report counters, kept in its share and not summed (`counts_apply`).
ITEM_OWN = "_"
# Floats kept as integer sums, exact in any order: a finite float is a multiple of
# 2**-FLOAT_FINE, so scaled by 2**FLOAT_FINE it is an integer. Most figures (scores, shares)
# are multiples of 2**-FLOAT_COARSE already and are kept at that scale, in shorter numbers
# (`float_scaled`); their sum, rounded once, is the float math.fsum gives (`float_sum`).
FLOAT_COARSE = 96
FLOAT_FINE = 1074


def empty_sums() -> dict:
    return {
        "durations": {},
        "pairs": {},
        "agreement": {scope: _empty_scope() for scope in SCOPES},
        "adjudicated": 0,
        "comparison": empty_comparison(),
        "report": {},
    }


def _empty_scope() -> dict:
    return {"items": 0, "agree": 0, "compared": 0, "pairs": {}}


def float_scaled(value: float) -> tuple[bool, int]:
    """(whether at the coarse scale, `value` as an integer at that scale) of a finite float."""
    exact = Fraction(float(value))
    coarse = exact * (1 << FLOAT_COARSE)
    if coarse.denominator == 1:
        return True, int(coarse)
    return False, int(exact * (1 << FLOAT_FINE))


def float_sum(coarse: int, fine: int) -> float:
    """The floats summed as `float_scaled` integers (at the coarse and at the fine scale),
    rounded once to the nearest float: the value math.fsum gives for the same floats."""
    return float(Fraction((coarse << (FLOAT_FINE - FLOAT_COARSE)) + fine, 1 << FLOAT_FINE))


def _add(counter: dict, key: str, n: int) -> None:
    """counter[key] += n, the key gone at 0 (so that sums after updates equal sums built anew)."""
    value = counter.get(key, 0) + n
    if value:
        counter[key] = value
    else:
        counter.pop(key, None)


def _add_matrix(pairs: dict, m: int, matrix: np.ndarray, sign: int) -> None:
    key = str(m)
    total = np.asarray(pairs.get(key, np.zeros(matrix.size, dtype=np.int64)), dtype=np.int64) + sign * matrix.ravel()
    if total.any():
        pairs[key] = total.tolist()
    else:
        pairs.pop(key, None)


def sums_apply(sums: dict, record: dict | None, sign: int, labels: Sequence[str]) -> None:
    """Add (sign 1) or take out (sign -1) one item's record; in place."""
    if not record:
        return
    for annotator, key in record.get("d", ()):
        mine = sums["durations"].setdefault(str(annotator), {})
        _add(mine, str(key), sign)
        if not mine:
            del sums["durations"][str(annotator)]
    votes = record.get("v", ())
    consensus, gold, adjudicated = record.get("c"), record.get("g"), bool(record.get("a"))
    for annotator, label in votes:
        mine = sums["pairs"].setdefault(str(annotator), {})
        for name, reference in (
            ("consensus", consensus),
            ("clean", None if adjudicated else consensus),
            ("gold", gold),
        ):
            if reference is not None:
                counter = mine.setdefault(name, {})
                _add(counter, f"{label}{SEPARATOR}{reference}", sign)
                if not counter:
                    del mine[name]
        if not mine:
            del sums["pairs"][str(annotator)]
    sums["adjudicated"] += sign * int(adjudicated)
    comparison_apply(sums["comparison"], record, sign)
    counts_apply(sums["report"], record.get("k"), sign)
    if votes:
        _agreement_apply(sums, [label for _annotator, label in votes], consensus, adjudicated, sign, labels)


def _agreement_apply(sums: dict, cast: Sequence[str], consensus, adjudicated: bool, n: int, labels) -> None:
    """Add `n` items whose votes are the labels `cast` (one at least) to the agreement sums
    (n < 0: take them out)."""
    codes = {label: index for index, label in enumerate(labels)}
    matrix = unit_pair_counts([codes[label] for label in cast], len(labels)) if len(cast) >= 2 else None
    for scope in SCOPES:
        if scope == "without" and adjudicated:
            continue
        figures = sums["agreement"][scope]
        figures["items"] += n
        if consensus is not None:
            figures["compared"] += n * len(cast)
            figures["agree"] += n * sum(label == consensus for label in cast)
        if matrix is not None:
            _add_matrix(figures["pairs"], len(cast), matrix, n)


def sums_add_many(sums: dict, records: Iterable[dict | None], labels: Sequence[str]) -> None:
    """`sums_apply(sums, record, 1, labels)` for each record in turn, in place, at a
    fraction of its cost over many items (a run over every item): equal records' shares —
    the same methods' labels, the same votes against the same consensus — are counted and
    added once, times their number, and the keys first met by an earlier record come first,
    as one by one. Sums of integers, so the result is the same to the last key."""
    durations: dict[tuple, int] = {}
    pairs: dict[tuple, int] = {}
    comparisons: dict[tuple, int] = {}
    agreements: dict[tuple, int] = {}
    adjudicated_items = 0
    report = sums["report"]
    for record in records:
        if not record:
            continue
        for annotator, key in record.get("d", ()):
            durations[annotator, key] = durations.get((annotator, key), 0) + 1
        votes = record.get("v", ())
        consensus, gold, adjudicated = record.get("c"), record.get("g"), bool(record.get("a"))
        references = [
            (name, reference)
            for name, reference in (
                ("consensus", consensus),
                ("clean", None if adjudicated else consensus),
                ("gold", gold),
            )
            if reference is not None
        ]
        for annotator, label in votes:
            for name, reference in references:
                pairs[annotator, name, label, reference] = pairs.get((annotator, name, label, reference), 0) + 1
        adjudicated_items += adjudicated
        methods = record.get("m")
        if methods:
            compared = (tuple(methods.items()), record.get("x"), record.get("e"))
            comparisons[compared] = comparisons.get(compared, 0) + 1
        share = record.get("k")
        if share:
            counts_apply(report, share, 1)
        if votes:
            cast = (tuple(label for _annotator, label in votes), consensus, adjudicated)
            agreements[cast] = agreements.get(cast, 0) + 1
    for (annotator, key), n in durations.items():
        _add(sums["durations"].setdefault(str(annotator), {}), str(key), n)
    for (annotator, name, label, reference), n in pairs.items():
        _add(sums["pairs"].setdefault(str(annotator), {}).setdefault(name, {}), f"{label}{SEPARATOR}{reference}", n)
    sums["adjudicated"] += adjudicated_items
    for (methods, disagree, reference), n in comparisons.items():
        comparison_apply(sums["comparison"], {"m": dict(methods), "x": disagree, "e": reference}, n)
    for (cast, consensus, adjudicated), n in agreements.items():
        _agreement_apply(sums, cast, consensus, adjudicated, n, labels)


def counts_apply(counts: dict, share: dict | None, sign: int) -> None:
    """Add (sign 1) or take out (sign -1) an item's {counter: {key: n}} to the summed ones;
    in place, a counter left empty gone. A counter named with a leading "_" is the item's
    own, not summed: a figure that is no sum (a rank correlation) reads it from the shares."""
    for name, keys in (share or {}).items():
        if name.startswith(ITEM_OWN):
            continue
        counter = counts.setdefault(name, {})
        for key, n in keys.items():
            _add(counter, key, sign * n)
        if not counter:
            del counts[name]


def annotator_figures(durations: dict, pairs: dict, coherence: dict | None, labels: Sequence[str]) -> dict:
    """One annotator's figures from their sums: items, median seconds, agreement with the
    consensus (all items, and those nobody adjudicated) and the gold, kappa, coherence."""

    def counts(name: str) -> dict[tuple[str, str], int]:
        return {tuple(key.split(SEPARATOR, 1)): n for key, n in pairs.get(name, {}).items()}

    with_consensus = agreement_from_counts(counts("consensus"), labels=labels)
    clean = agreement_from_counts(counts("clean"), labels=labels)
    with_gold = agreement_from_counts(counts("gold"), labels=labels)
    return {
        "items": sum(durations.values()),
        "seconds_median": median_of_counts({int(key): n for key, n in durations.items()}),
        "agreement_with_consensus": with_consensus.share,
        "consensus_items": with_consensus.items,
        "agreement_without_adjudicated": clean.share,
        "agreement_with_gold": with_gold.share,
        "gold_items": with_gold.items,
        "kappa": with_consensus.kappa,
        "coherence": coherence,
    }


def annotators_figures(sums: dict, coherence: dict, labels: Sequence[str]) -> dict[int, dict]:
    """{annotator id: `annotator_figures`} for everyone with a claim or a vote counted."""
    people = {int(a) for a in sums["durations"]} | {int(a) for a in sums["pairs"]}
    return {
        annotator: annotator_figures(
            sums["durations"].get(str(annotator), {}),
            sums["pairs"].get(str(annotator), {}),
            coherence.get(annotator),
            labels,
        )
        for annotator in people
    }


def adjudication_agreement(sums: dict, labels: Sequence[str]) -> dict:
    """Nominal alpha and the share of votes equal to their item's consensus, over the items
    with votes, with and without the adjudicated ones."""
    result: dict = {"adjudicated": sums["adjudicated"]}
    for scope, name in zip(SCOPES, ("with_adjudicated", "without_adjudicated")):
        figures = sums["agreement"][scope]
        result[name] = {
            "items": figures["items"],
            "alpha": alpha_from_pair_counts(
                {int(m): counts for m, counts in figures["pairs"].items()}, range(len(labels)), "nominal"
            ),
            "agreement_with_consensus": figures["agree"] / figures["compared"] if figures["compared"] else None,
        }
    return result


# The methods' comparison (selectors.aggregation.aggregation_report_for_project) as sums
# over the items with an aggregate of their current round. An item's record holds `m`:
# {method: label or None} of those aggregates, `x`: 1 where two methods gave different
# labels, and `e`: its reference label (scored against where the kind asks).
def empty_comparison() -> dict:
    return {"items": 0, "decided": {}, "same": {}, "disagree": 0, "scored": 0, "ref_decided": {}, "ref_correct": {}}


def comparison_apply(comparison: dict, record: dict | None, sign: int) -> None:
    """Add (sign 1) or take out (sign -1) one item's share of the comparison; in place."""
    methods = (record or {}).get("m")
    if not methods:
        return
    comparison["items"] += sign
    comparison["disagree"] += sign * int(bool(record.get("x")))  # type: ignore[union-attr]  # methods implies a record
    reference = record.get("e")  # type: ignore[union-attr]
    if reference:
        comparison["scored"] += sign
    for method, label in methods.items():
        if label is None:
            continue
        _add(comparison["decided"], method, sign)
        for other, other_label in methods.items():
            if other_label == label:
                _add(comparison["same"], f"{method}{SEPARATOR}{other}", sign)
        if reference:
            _add(comparison["ref_decided"], method, sign)
            if label == reference:
                _add(comparison["ref_correct"], method, sign)


def comparison_report(comparison: dict, chosen: str, methods: Sequence[str], *, score_against_reference: bool) -> dict:
    """The report's counts from the sums (the listed disagreements are the caller's)."""
    report = {
        "chosen": chosen,
        "items": comparison["items"],
        "decided": {method: comparison["decided"].get(method, 0) for method in methods},
        "agree_with_chosen": {method: comparison["same"].get(f"{method}{SEPARATOR}{chosen}", 0) for method in methods},
        "disagreements": {"count": comparison["disagree"]},
    }
    if score_against_reference:
        scored = comparison["scored"]
        report["accuracy_against_reference"] = {}
        for method in methods:
            correct, decided = comparison["ref_correct"].get(method, 0), comparison["ref_decided"].get(method, 0)
            report["accuracy_against_reference"][method] = {
                "items": scored,
                "decided": decided,
                "accuracy": correct / scored if scored else None,
                "accuracy_decided": correct / decided if decided else None,
            }
    return report


# The values the item browser's filters offer (selectors.items.item_values_compute) as
# counts of items per (name, value): a value is offered while some item holds it.
VALUE_NAMES = ("split", "group", "round", "flag")


def item_value_share(split: str, group: str, round_: int, flags) -> list:
    """An item's `i`: what it adds to the filter values (flags: its distinct strings)."""
    held = sorted({flag for flag in flags if isinstance(flag, str)}) if isinstance(flags, list) else []
    return [split, group, round_, held]


def value_counts_apply(counts: Counter, record: dict | None, sign: int) -> None:
    """Add (sign 1) or take out (sign -1) one item's filter values to {(name, value): items}."""
    share = (record or {}).get("i")
    if not share:
        return
    split, group, round_, flags = share
    if split:
        counts[("split", split)] += sign
    if group:
        counts[("group", group)] += sign
    counts[("round", str(round_))] += sign
    for flag in flags:
        counts[("flag", flag)] += sign


def item_values_from_counts(held: Iterable[tuple[str, str]], groups: Iterable[str]) -> dict:
    """The filter values as selectors.items.item_values_compute gives them, from the
    (name, value) pairs some item holds (groups aside) and the groups offered, in order."""
    values: dict[str, list] = {name: [] for name in VALUE_NAMES}
    for name, value in held:
        values[name].append(int(value) if name == "round" else value)
    return {
        "splits": sorted(values["split"]),
        "groups": list(groups),
        "rounds": sorted(values["round"]),
        "flags": sorted(values["flag"]),
    }
