"""k-of-n label consensus, as used for FarsTail's relabeling round.

Source: Amirkhani et al., "FarsTail: A Persian Natural Language Inference
Dataset", §3.2 "Relabeling and data cleaning" (and Fig. 1): each sample is
relabeled by the four other annotators and kept when at least 80% of the five
labelers agree, i.e. 4 of 5, the author's own label counting as one of the five.
Rejected samples are revised by their author and relabeled once more; that
second round is a fresh call to :func:`decide` with the new labels.

Pure Python: no Django import here (see docs/conventions.md "Pure math").
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Literal, Sequence

Outcome = Literal["accepted", "failed", "pending"]

ACCEPTED: Outcome = "accepted"
FAILED: Outcome = "failed"
PENDING: Outcome = "pending"


@dataclass(frozen=True)
class ConsensusResult:
    """What :func:`decide` concluded for one item.

    ``votes`` maps label -> count, keys in sorted order, author's vote included.
    ``agreement`` is ``top_count / n_votes`` (0.0 when there are no votes).
    ``gold`` is set only when ``outcome == "accepted"``.
    """

    outcome: Outcome
    gold: str | None
    votes: dict[str, int]
    n_votes: int
    top_count: int
    agreement: float
    label_changed: bool


def _tally(labels: Sequence[str | None], author_label: str | None) -> tuple[dict[str, int], int, int, list[str]]:
    """(votes by label in sorted order, number of votes, top count, the labels holding it),
    abstentions left out and the author's label counted as one vote."""
    counts: Counter[str] = Counter(label for label in labels if label is not None)
    if author_label is not None:
        counts[author_label] += 1
    votes = {label: counts[label] for label in sorted(counts)}
    top_count = max(votes.values(), default=0)
    return votes, sum(votes.values()), top_count, [label for label, count in votes.items() if count == top_count]


def _validate_k_n(k: int, n: int) -> None:
    # bool is an int subclass; decide(labels, True) is certainly a mistake.
    if isinstance(k, bool) or isinstance(n, bool) or not isinstance(k, int) or not isinstance(n, int):
        raise ValueError(f"k and n must be integers, got k={k!r}, n={n!r}")
    if n < 1:
        raise ValueError(f"n must be at least 1, got n={n}")
    if not 1 <= k <= n:
        raise ValueError(f"k must satisfy 1 <= k <= n, got k={k}, n={n}")
    # With k <= n/2 two different labels could both reach k among n votes,
    # and "the" consensus label would depend on tie-breaking.
    if 2 * k <= n:
        raise ValueError(f"k must be a strict majority of n (k > n/2), got k={k}, n={n}")


def decide(
    labels: Sequence[str | None],
    k: int = 4,
    n: int = 5,
    author_label: str | None = None,
) -> ConsensusResult:
    """Decide whether an item's labels reach a k-of-n consensus.

    Source: FarsTail (Amirkhani et al.), §3.2: keep a sample when at least 4
    of its 5 labels agree (80%), the author's label being one of the 5.

    Preconditions and conventions:

    * ``labels`` are the relabelers' votes. ``None`` is an abstention ("cannot
      decide" / skipped): it is not a vote and does not count towards ``n``.
    * ``author_label``, when given, is one more vote, so an authored item needs
      ``n - 1`` relabels to be decided.
    * Fewer than ``n`` votes -> ``"pending"`` (``gold`` is None, but ``votes``,
      ``top_count`` and ``agreement`` describe the votes so far).
    * More than ``n`` votes (e.g. an over-assigned item) -> all votes are used
      and ``k`` stays an absolute count: 4 of 7 is accepted. Callers that want
      the 80% *ratio* must trim to ``n`` votes first.
    * ``"accepted"`` when the most frequent label has at least ``k`` votes and
      no other label has as many; ``gold`` is that label.
    * Otherwise ``"failed"``, including a tie at the top (2-2-1, or 4-4 with
      more than ``n`` votes): ``gold`` is None. With exactly ``n`` votes and
      ``k > n/2`` a tie can never reach ``k``; the explicit check matters only
      when there are more than ``n`` votes.
    * ``label_changed`` is True when an accepted gold differs from the
      author's label: the relabelers overruled the author.

    Raises ValueError unless ``1 <= k <= n`` and ``k > n/2``.

    Worked example (FarsTail defaults k=4, n=5; author said "entailment"):

    >>> r = decide(["neutral", "neutral", "neutral", "neutral"], author_label="entailment")
    >>> r.outcome, r.gold, r.votes, r.agreement, r.label_changed
    ('accepted', 'neutral', {'entailment': 1, 'neutral': 4}, 0.8, True)
    >>> decide(["neutral", "neutral", "entailment", None], author_label="entailment").outcome
    'pending'
    >>> decide(["a", "a", "b", "b", "c"]).outcome
    'failed'
    """
    _validate_k_n(k, n)
    votes, n_votes, top_count, leaders = _tally(labels, author_label)

    gold: str | None = None
    if n_votes < n:
        outcome: Outcome = PENDING
    elif top_count >= k and len(leaders) == 1:
        outcome = ACCEPTED
        gold = leaders[0]
    else:
        outcome = FAILED
    return _result(outcome, gold, votes, n_votes, top_count, author_label)


def decide_majority(labels: Sequence[str | None], n: int = 1, author_label: str | None = None) -> ConsensusResult:
    """The majority rule beside k-of-n (a project's `aggregation: "majority"`): with at least
    ``n`` votes (the author's label counted as in :func:`decide`), accepted when one label
    has more votes than any other, failed on a tie at the top; fewer votes → pending.

    >>> decide_majority(["a", "a", "b"], n=3).gold
    'a'
    >>> decide_majority(["a", "b"], n=2).outcome
    'failed'
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got n={n!r}")
    votes, n_votes, top_count, leaders = _tally(labels, author_label)
    gold: str | None = None
    if n_votes < n or n_votes == 0:
        outcome: Outcome = PENDING
    elif len(leaders) == 1:
        outcome, gold = ACCEPTED, leaders[0]
    else:
        outcome = FAILED
    return _result(outcome, gold, votes, n_votes, top_count, author_label)


def _result(
    outcome: Outcome, gold: str | None, votes, n_votes: int, top_count: int, author_label: str | None
) -> ConsensusResult:
    """The decision of either rule with the figures every rule reports alike."""
    return ConsensusResult(
        outcome=outcome,
        gold=gold,
        votes=votes,
        n_votes=n_votes,
        top_count=top_count,
        agreement=top_count / n_votes if n_votes else 0.0,
        label_changed=gold is not None and author_label is not None and gold != author_label,
    )


def decide_round(
    labels: Sequence[str | None],
    *,
    method: str,
    k: int,
    n: int,
    adaptive: bool,
    author_label: str | None = None,
) -> ConsensusResult:
    """How a consensus kind's round is decided when it closes: by majority when that is the
    project's method, otherwise by k-of-n (Dawid-Skene and MACE need the whole pool, so
    the round is decided by the paper's rule and the gold follows the pool method later).
    With adaptive overlap the number of votes varies and the engine closes the round only
    once more votes would not change the answer: k agreeing votes (or a majority) accept
    it, anything else fails it.

    >>> decide_round(["a", "a", "a"], method="k_of_n", k=4, n=5, adaptive=True, author_label="a").outcome
    'accepted'
    >>> decide_round(["a", "b"], method="k_of_n", k=4, n=5, adaptive=True, author_label="a").outcome
    'failed'
    """
    if method == "majority":
        result = decide_majority(labels, n=1 if adaptive else n, author_label=author_label)
    else:
        result = decide(labels, k=k, n=k if adaptive else n, author_label=author_label)
    if adaptive and result.outcome == PENDING:
        result = ConsensusResult(FAILED, None, result.votes, result.n_votes, result.top_count, result.agreement, False)
    return result
