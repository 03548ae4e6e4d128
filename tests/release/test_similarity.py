"""annotation.metrics.similarity against a brute-force computation with scikit-learn's dense
cosine_similarity (small inputs only), and the split rules as properties (hypothesis): no
group is ever split, no cross-split pair stays above the leak threshold, and realised
shares are within one component of the target."""

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics.pairwise import cosine_similarity

from annotation.metrics.similarity import (
    assign_splits,
    grouped_split,
    item_pairs_above,
    leak_pairs,
    near_duplicates,
    normalize_dense,
    pairs_above,
    prefix_matrix,
    vectorize,
)

# A small vocabulary, some words frequent, so that random texts are often similar.
WORDS = ["کتاب", "می\u200cخواند", "او", "را", "در", "خانه", "مدرسه", "۱۲", "12", "الف", "ب", "آب"]
texts = st.lists(st.lists(st.sampled_from(WORDS), min_size=0, max_size=6).map(" ".join), min_size=2, max_size=25)
thresholds = st.sampled_from([0.3, 0.5, 0.8, 0.9])


def brute_similarities(matrix) -> dict:
    """Every pair (i < j) with its cosine, by scikit-learn on the dense matrix."""
    dense = matrix.toarray() if hasattr(matrix, "toarray") else np.asarray(matrix)
    similarity = cosine_similarity(dense) if dense.shape[1] else np.zeros((len(dense), len(dense)))
    i, j = np.triu_indices(len(dense), 1)
    return {(int(a), int(b)): float(s) for a, b, s in zip(i, j, similarity[i, j])}


def brute_pairs(matrix, threshold):
    return {key: s for key, s in brute_similarities(matrix).items() if s > threshold}


@settings(max_examples=80, deadline=None)
@given(texts, thresholds, st.sampled_from(["bow", "tfidf"]), st.sampled_from([1, 3, 4096]))
def test_pairs_above_is_every_pair_a_dense_computation_finds(corpus, threshold, representation, block_rows):
    matrix = vectorize(corpus, representation)
    found = pairs_above(matrix, threshold, block_rows=block_rows)
    expected = brute_pairs(matrix, threshold)
    # Pairs right at the threshold (9/10 against 0.9) may fall either side by rounding, in
    # either computation; everything else agrees.
    close = {key for key, s in brute_similarities(matrix).items() if abs(s - threshold) < 1e-9}
    got = {(int(a), int(b)): float(s) for a, b, s in zip(found.i, found.j, found.similarity)}
    assert set(got) - close == set(expected) - close
    for key in set(got) & set(expected):
        assert got[key] == pytest.approx(expected[key], abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.floats(-1, 1, allow_nan=False), min_size=3, max_size=3), min_size=2, max_size=20), thresholds
)
def test_dense_vectors_are_compared_block_by_block(rows, threshold):
    matrix = normalize_dense(np.asarray(rows))
    found = pairs_above(matrix, threshold, block_rows=2)
    expected = brute_pairs(matrix, threshold)
    close = {key for key, s in brute_similarities(matrix).items() if abs(s - threshold) < 1e-5}
    assert {(int(a), int(b)) for a, b in zip(found.i, found.j)} - close == set(expected) - close


@settings(max_examples=50, deadline=None)
@given(texts, thresholds)
def test_every_pair_above_the_threshold_shares_a_feature_of_both_prefixes(corpus, threshold):
    """The prefix filter's claim (Bayardo et al. 2007), checked directly."""
    matrix = vectorize(corpus)
    prefixes = (prefix_matrix(matrix, threshold) > 0).astype(int)
    shared = (prefixes @ prefixes.T).toarray()
    for a, b in brute_pairs(matrix, threshold):
        assert shared[a, b] > 0


def test_folding_makes_persian_digits_and_letter_variants_one_token():
    matrix = vectorize(["علي ۱۲ كتاب", "علی 12 کتاب"], fold_letters=True)
    assert pairs_above(matrix, 0.99).similarity.tolist() == [pytest.approx(1.0)]
    assert len(pairs_above(vectorize(["علي كتاب", "علی کتاب"]), 0.5)) == 0


@settings(max_examples=60, deadline=None)
@given(texts, st.data(), thresholds)
def test_near_duplicates_are_pairs_of_different_groups_similar_in_premise_and_hypothesis(premises, data, threshold):
    n = len(premises)
    hypotheses = data.draw(
        st.lists(st.sampled_from(["او در خانه", "او در مدرسه", "کتاب را", "آب"]), min_size=n, max_size=n)
    )
    groups = data.draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    result = near_duplicates(premises, hypotheses, groups, threshold, vectorize)
    found = set(zip(result.a.tolist(), result.b.tolist()))

    def expected(t):
        by_premise, by_hypothesis = brute_pairs(vectorize(premises), t), brute_pairs(vectorize(hypotheses), t)
        return {key for key in by_premise if key in by_hypothesis and groups[key[0]] != groups[key[1]]}

    # Pairs right at the threshold may fall either side by rounding.
    assert expected(threshold + 1e-9) <= found <= expected(threshold - 1e-9)


@settings(max_examples=60, deadline=None)
@given(texts, st.data(), st.sampled_from([0.5, 0.9]), st.integers(0, 2**32))
def test_grouped_splits_keep_groups_whole_leave_no_leak_and_hit_the_shares(premises, data, threshold, seed):
    n = len(premises)
    hypotheses = data.draw(
        st.lists(st.sampled_from(["او در خانه", "او در مدرسه", "کتاب را", "آب", "ب"]), min_size=n, max_size=n)
    )
    group_labels = data.draw(st.lists(st.integers(0, 6), min_size=n, max_size=n))
    index = {}
    groups = [index.setdefault(label, len(index)) for label in group_labels]
    shares = {"train": 0.7, "dev": 0.15, "test": 0.15}
    plan = grouped_split(groups, leak_pairs(premises, hypotheses, threshold, vectorize), shares, seed)
    split = plan.split_of_item
    for a in range(n):
        for b in range(n):
            if groups[a] == groups[b]:
                assert split[a] == split[b]
    # (pairs right at the threshold may fall either side by rounding)
    leaks = set(brute_pairs(vectorize(premises), threshold + 1e-9)) | set(
        brute_pairs(vectorize(hypotheses), threshold + 1e-9)
    )
    assert all(split[a] == split[b] for a, b in leaks)
    for name, share in shares.items():
        assert abs(split.count(name) - share * n) <= plan.largest_component
    assert plan == grouped_split(groups, leak_pairs(premises, hypotheses, threshold, vectorize), shares, seed)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(1, 50), min_size=1, max_size=60),
    st.integers(0, 2**63),
    st.sampled_from([(0.7, 0.15, 0.15), (0.9, 0.05, 0.05), (0.5, 0.5, 0.0)]),
)
def test_assigned_shares_are_within_one_component_of_the_target(sizes, seed, targets):
    shares = dict(zip(("train", "dev", "test"), targets))
    chosen = assign_splits(sizes, shares, seed)
    total = sum(sizes)
    for name, share in shares.items():
        realised = sum(size for size, split in zip(sizes, chosen) if split == name)
        assert abs(realised - share * total) <= max(sizes)
    assert chosen == assign_splits(sizes, shares, seed)


def test_identical_texts_of_several_items_give_every_pair():
    found = item_pairs_above(["a b", "c", "a b", "a b", ""], 0.5, vectorize).pairs
    assert list(zip(found.i.tolist(), found.j.tolist())) == [(0, 2), (0, 3), (2, 3)]


def test_the_module_imports_no_django():
    code = "import sys, annotation.metrics.similarity; print(any(m.startswith('django') for m in sys.modules))"
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
        == "False"
    )
