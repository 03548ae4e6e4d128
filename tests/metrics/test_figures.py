"""The stored figures' sums (annotation.metrics.figures): records added, then some taken out
and replaced, give exactly the sums — and so the figures — of the final records."""

import json
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.metrics.figures import (
    adjudication_agreement,
    annotators_figures,
    empty_sums,
    sums_add_many,
    sums_apply,
)

LABELS = ("entailment", "neutral", "contradiction")
label = st.sampled_from(LABELS)
maybe_label = st.one_of(st.none(), label)


@st.composite
def record(draw):
    voters = draw(st.lists(st.integers(1, 6), unique=True, max_size=5))
    return {
        "d": [[a, draw(st.integers(0, 600))] for a in draw(st.lists(st.integers(1, 6), max_size=4))],
        "v": [[a, draw(label)] for a in voters],
        "c": draw(maybe_label),
        "g": draw(maybe_label),
        "a": draw(st.integers(0, 1)),
        "r": [],
    }


METHODS = ("k_of_n", "majority", "dawid_skene", "mace")


@st.composite
def full_record(draw):
    """A record with every part a run over every item stores: the methods' labels, the
    reference label, the kind's report counts."""
    one = draw(record())
    if draw(st.booleans()):
        methods = {method: draw(maybe_label) for method in draw(st.permutations(METHODS))[: draw(st.integers(1, 4))]}
        given = {label for label in methods.values() if label is not None}
        one.update({"m": methods, "x": int(len(given) > 1), "e": draw(maybe_label)})
    if draw(st.booleans()):
        one["k"] = draw(
            st.dictionaries(
                st.sampled_from(("outcomes", "confusion", "per_annotator")),
                st.dictionaries(st.sampled_from(("1\trows", "2\taccepted", "a\tb", "7\ttotal")), st.integers(1, 3)),
                max_size=3,
            )
        )
    return one


def sums_of(records):
    sums = empty_sums()
    for one in records:
        sums_apply(sums, one, 1, LABELS)
    return sums


def test_no_django_import():
    code = "import sys, annotation.metrics.figures; print('django' in sys.modules)"
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
        == "False"
    )


@settings(max_examples=150, deadline=None)
@given(
    records=st.lists(record(), min_size=1, max_size=12),
    changes=st.lists(st.tuples(st.integers(0, 11), st.one_of(st.none(), record())), max_size=8),
)
def test_sums_after_changes_equal_sums_built_anew(records, changes):
    sums = sums_of(records)
    records = list(records)
    for position, new in changes:
        position %= len(records)
        sums_apply(sums, records[position], -1, LABELS)
        sums_apply(sums, new, 1, LABELS)
        records[position] = new
    anew = sums_of(records)
    assert sums == anew
    assert annotators_figures(sums, {}, LABELS) == annotators_figures(anew, {}, LABELS)
    assert adjudication_agreement(sums, LABELS) == adjudication_agreement(anew, LABELS)


def test_everything_taken_out_leaves_empty_sums():
    one = {"d": [[1, 30]], "v": [[1, "neutral"], [2, "neutral"]], "c": "neutral", "g": None, "a": 1, "r": []}
    sums = sums_of([one])
    sums_apply(sums, one, -1, LABELS)
    assert sums == empty_sums()


@settings(max_examples=200, deadline=None)
@given(records=st.lists(st.one_of(st.none(), full_record()), max_size=30), chunk=st.integers(1, 30))
def test_many_records_added_at_once_give_the_sums_added_one_by_one(records, chunk):
    """A run over every item adds its records a chunk at a time (sums_add_many): the same
    sums as one record at a time, key for key in the same order, and the same figures."""
    one_by_one = sums_of(records)
    at_once = empty_sums()
    for start in range(0, len(records), chunk):
        sums_add_many(at_once, records[start : start + chunk], LABELS)
    assert json.dumps(at_once) == json.dumps(one_by_one)
    assert annotators_figures(at_once, {}, LABELS) == annotators_figures(one_by_one, {}, LABELS)
    assert adjudication_agreement(at_once, LABELS) == adjudication_agreement(one_by_one, LABELS)
