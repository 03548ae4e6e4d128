"""k-of-n consensus (FarsTail §3.2: keep a sample when 4 of its 5 labels agree)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from annotation.metrics.consensus import ConsensusResult, decide

E, N, C = "entailment", "neutral", "contradiction"

CASES = [
    # id, relabels, author, outcome, gold, top_count, n_votes, label_changed
    ("5-0", [E, E, E, E], E, "accepted", E, 5, 5, False),
    ("4-1 author in majority", [E, E, E, N], E, "accepted", E, 4, 5, False),
    ("4-1 against the author", [N, N, N, N], E, "accepted", N, 4, 5, True),
    ("3-2", [E, E, N, N], E, "failed", None, 3, 5, False),
    ("2-2-1", [E, N, N, C], E, "failed", None, 2, 5, False),
    ("pending with 3 votes", [E, E], E, "pending", None, 3, 3, False),
    ("abstentions do not count", [E, None, E, None, E], E, "pending", None, 4, 4, False),
    ("abstention filled by a 5th relabel", [E, None, E, E, N], E, "accepted", E, 4, 5, False),
    ("no author: 5 relabels", [C, C, C, C, E], None, "accepted", C, 4, 5, False),
    ("no author: 4 relabels is pending", [C, C, C, C], None, "pending", None, 4, 4, False),
    ("more than n votes are all used", [E, E, E, N, N, N], E, "accepted", E, 4, 7, False),
    ("tie at the top with more than n votes", [E, E, E, N, N, N, N], E, "failed", None, 4, 8, False),
]


@pytest.mark.parametrize(
    "relabels, author, outcome, gold, top_count, n_votes, label_changed",
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_decide_table(relabels, author, outcome, gold, top_count, n_votes, label_changed):
    result = decide(relabels, author_label=author)

    assert result.outcome == outcome
    assert result.gold == gold
    assert result.top_count == top_count
    assert result.n_votes == n_votes
    assert result.agreement == pytest.approx(top_count / n_votes)
    assert result.label_changed is label_changed


def test_votes_are_sorted_by_label_and_include_the_author():
    result = decide([N, C, N, N], author_label=E)

    assert list(result.votes) == [C, E, N]
    assert result.votes == {C: 1, E: 1, N: 3}


def test_result_is_frozen():
    result = decide([E, E, E, E], author_label=E)

    assert isinstance(result, ConsensusResult)
    with pytest.raises(AttributeError):
        result.outcome = "failed"  # type: ignore[misc]


def test_no_votes_at_all_is_pending_with_zero_agreement():
    result = decide([None, None])

    assert (result.outcome, result.n_votes, result.top_count, result.agreement) == ("pending", 0, 0, 0.0)


def test_other_k_of_n_configurations():
    # SNLI kept a pair when 3 of 4 relabelers agreed (FarsTail §2.1).
    assert decide([E, E, E, N], k=3, n=4).outcome == "accepted"
    assert decide([E, E, N, N], k=3, n=4).outcome == "failed"
    assert decide([E], k=1, n=1).gold == E


@pytest.mark.parametrize(
    "k, n, message",
    [
        (0, 5, "1 <= k <= n"),
        (6, 5, "1 <= k <= n"),
        (2, 5, "strict majority"),
        (2, 4, "strict majority"),
        (1, 0, "n must be at least 1"),
        (4.0, 5, "integers"),
        (True, 1, "integers"),
    ],
)
def test_invalid_k_n_raise(k, n, message):
    with pytest.raises(ValueError, match=message):
        decide([E, E, E, E, E], k=k, n=n)


labels_strategy = st.lists(st.sampled_from([E, N, C, None]), min_size=0, max_size=9)
author_strategy = st.one_of(st.none(), st.sampled_from([E, N, C]))


@st.composite
def k_n(draw):
    n = draw(st.integers(min_value=1, max_value=7))
    k = draw(st.integers(min_value=n // 2 + 1, max_value=n))
    return k, n


@given(labels=labels_strategy, author=author_strategy, kn=k_n())
def test_decide_properties(labels, author, kn):
    k, n = kn
    result = decide(labels, k=k, n=n, author_label=author)

    counts = Counter(label for label in labels if label is not None)
    if author is not None:
        counts[author] += 1
    assert result.votes == dict(counts)
    assert result.n_votes == sum(counts.values())
    assert result.top_count == max(counts.values(), default=0)

    if result.n_votes < n:
        assert result.outcome == "pending"
    else:
        unique_top = sum(1 for c in counts.values() if c == result.top_count) == 1
        assert (result.outcome == "accepted") == (result.top_count >= k and unique_top)
        if result.n_votes == n:
            # k > n/2 makes a tie at >= k impossible with exactly n votes.
            assert (result.outcome == "accepted") == (result.top_count >= k)

    if result.outcome == "accepted":
        assert counts[result.gold] == result.top_count
        assert all(c < result.top_count for label, c in counts.items() if label != result.gold)
    else:
        assert result.gold is None

    if result.n_votes:
        assert 0.0 < result.agreement <= 1.0
    assert result.label_changed == (result.gold is not None and author is not None and result.gold != author)
