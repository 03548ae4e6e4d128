"""The release card's Table 2-style statistics (annotation/metrics/dataset_statistics.py):
a worked example with FarsTail's layout, and the properties any dataset's table keeps."""

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.metrics.dataset_statistics import split_statistics


def by_key(table):
    return {(row["split"], row["label"]): row for row in table}


def test_a_worked_table():
    rows = [
        ("train", "e", {"premise": ["a b c d"], "hypothesis": ["a b"]}),
        ("train", "c", {"premise": ["a b"], "hypothesis": ["x y z"]}),
        ("train", "e", {"premise": ["e"], "hypothesis": []}),
        ("test", "", {"premise": ["q"]}),
    ]
    table = split_statistics(rows, str.split)
    assert [(row["split"], row["label"]) for row in table] == [
        ("test", None),
        ("test", ""),
        ("train", None),
        ("train", "c"),
        ("train", "e"),
    ]
    train = by_key(table)[("train", None)]
    assert (train["items"], train["share"], train["vocabulary"]) == (3, 1.0, 8)  # a b c d e x y z
    assert train["fields"]["premise"] == {"texts": 3, "tokens_mean": 7 / 3, "tokens_min": 1, "tokens_max": 4}
    assert train["fields"]["hypothesis"] == {"texts": 2, "tokens_mean": 2.5, "tokens_min": 2, "tokens_max": 3}
    entailment = by_key(table)[("train", "e")]
    assert (entailment["items"], entailment["share"]) == (2, 2 / 3)
    assert entailment["fields"]["hypothesis"]["texts"] == 1
    assert by_key(table)[("test", None)]["fields"] == {
        "premise": {"texts": 1, "tokens_mean": 1.0, "tokens_min": 1, "tokens_max": 1}
    }


def test_a_field_without_text_has_no_figures():
    [_all, row] = split_statistics([("dev", "n", {"premise": []})], str.split)
    assert row["fields"]["premise"] == {"texts": 0, "tokens_mean": None, "tokens_min": None, "tokens_max": None}
    assert row["vocabulary"] == 0


WORDS = st.text(alphabet="אבג abc\u200c.", max_size=12)
ROWS = st.lists(
    st.tuples(
        st.sampled_from(["train", "dev", "test"]),
        st.sampled_from(["e", "c", "n", ""]),
        st.dictionaries(st.sampled_from(["premise", "hypothesis"]), st.lists(WORDS, max_size=3), max_size=2),
    ),
    max_size=30,
)


@settings(suppress_health_check=[HealthCheck.too_slow])  # shared machines: a slow draw is no failure
@given(ROWS, st.randoms(use_true_random=False))
def test_the_table_adds_up_whatever_the_items(rows, rnd: random.Random):
    table = split_statistics(rows, str.split)
    rows_by = by_key(table)
    for split in {split for split, _label, _texts in rows}:
        total = rows_by[(split, None)]
        labels = [row for (s, label), row in rows_by.items() if s == split and label is not None]
        # The classes partition the split: items, shares, texts and token counts add up.
        assert total["items"] == sum(1 for s, _l, _t in rows if s == split)
        assert sum(row["items"] for row in labels) == total["items"]
        assert abs(sum(row["share"] for row in labels) - 1) < 1e-9
        for name, figures in total["fields"].items():
            parts = [row["fields"][name] for row in labels if name in row["fields"]]
            assert sum(part["texts"] for part in parts) == figures["texts"]
            if figures["texts"]:
                assert figures["tokens_min"] <= figures["tokens_mean"] <= figures["tokens_max"]
                mean_of_parts = sum(p["tokens_mean"] * p["texts"] for p in parts if p["texts"]) / figures["texts"]
                assert abs(mean_of_parts - figures["tokens_mean"]) < 1e-9
                assert figures["tokens_min"] == min(p["tokens_min"] for p in parts if p["texts"])
                assert figures["tokens_max"] == max(p["tokens_max"] for p in parts if p["texts"])
        # The split's vocabulary holds each class's and no more than all of them together.
        assert max((row["vocabulary"] for row in labels), default=0) <= total["vocabulary"]
        assert total["vocabulary"] <= sum(row["vocabulary"] for row in labels)
        tokens = sum(f["tokens_mean"] * f["texts"] for f in total["fields"].values() if f["texts"])
        assert total["vocabulary"] <= round(tokens)
    # The order of the items changes nothing.
    shuffled = list(rows)
    rnd.shuffle(shuffled)
    assert split_statistics(shuffled, str.split) == table
