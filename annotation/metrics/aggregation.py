"""Label aggregation beside the papers' k-of-n rule: majority vote, Dawid-Skene and MACE.

* ``k_of_n``: the papers' rule (FarsTail §3.2: 4 of 5 labels agree, the author's label one
  of them; the label test and phrase pairs use the same rule with their own k and n), by
  :func:`annotation.metrics.consensus.decide`.
* ``majority``: the most frequent label; a tie at the top decides nothing.
* ``dawid_skene``: Dawid & Skene (1979), "Maximum likelihood estimation of observer
  error-rates using the EM algorithm": each annotator has a confusion matrix
  P(observed | true), estimated jointly with the items' true-label posteriors by EM.
* ``mace``: Hovy et al. (2013), "Learning Whom to Trust with MACE": each annotator either
  knows the label or spams from a label distribution of their own; the competence is the
  posterior probability of not spamming.

Dawid-Skene and MACE are crowd-kit's (``crowdkit.aggregation``): the EM is the library's,
this module only turns votes into its frame and its results into plain dicts. crowd-kit
(with pandas) is imported on first use so that the web processes that never aggregate do
not pay for it.

Pure Python: no Django import here (docs/conventions.md "Pure math").
"""

from __future__ import annotations

import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Hashable, Iterable, Sequence

from annotation.metrics.consensus import ACCEPTED, decide

METHODS = ("k_of_n", "majority", "dawid_skene", "mace")

# EM settings: crowd-kit's defaults for Dawid-Skene (100 iterations, tolerance 1e-5);
# MACE with crowd-kit's variational Bayes M-step, 50 iterations, one start instead of
# crowd-kit's 10: its iterations cost a fixed ~10 ms of pandas work each, so ten restarts
# cost seconds even on a handful of votes, and on the simulated crowds of bench/
# aggregation.py one start reaches the same gold accuracy.
DS_MAX_ITER = 100
DS_TOL = 1e-5
MACE_RESTARTS = 1
MACE_ITER = 50

Vote = tuple[Hashable, Hashable, str]


@dataclass(frozen=True)
class AggregationResult:
    """What one method concluded on a pool of votes.

    ``items`` maps item key → (label, confidence): the label is None when the method
    decides nothing (k-of-n short of its rule, a majority tie); the confidence is in [0, 1]
    (k-of-n and majority: the share of the item's votes that the top label holds;
    Dawid-Skene and MACE: the posterior probability of the chosen label).
    ``competence`` maps annotator key → a figure in [0, 1]: for k-of-n and majority the
    share of the annotator's votes that agree with the decided label, over the items the
    method decided (annotators without such an item are absent); Dawid-Skene: the
    annotator's expected accuracy, Σ_c prior(c) · P(answer c | true c); MACE: the posterior
    probability that the annotator is not spamming.
    ``confusion`` maps annotator key → the Dawid-Skene matrix P(observed | true), rows the
    true label and columns the observed label, both in ``labels`` order (a label the
    annotator never gave has a column of zeros). Empty for the other methods.
    """

    method: str
    items: dict[Hashable, tuple[str | None, float]]
    competence: dict[Hashable, float] = field(default_factory=dict)
    confusion: dict[Hashable, list[list[float]]] = field(default_factory=dict)


def _canonical(votes: Iterable[Vote], labels: Sequence[str], *, ordered: bool) -> list[Vote]:
    """The votes, abstentions (None) left out; with ``ordered``, in one order whatever order
    they came in (crowd-kit numbers annotators in order of appearance and MACE draws its
    start from that numbering; counting needs no order). A label outside ``labels`` is a
    caller's mistake."""
    known = set(labels)
    kept = []
    for item_key, annotator_key, label in votes:
        if label is None:
            continue
        if label not in known:
            raise ValueError(f"label {label!r} is not one of {list(labels)!r}")
        kept.append((item_key, annotator_key, label))
    if ordered:
        kept.sort(key=lambda vote: (type(vote[0]).__name__, vote[0], type(vote[1]).__name__, vote[1], vote[2]))
    return kept


def _by_item(votes: list[Vote]) -> dict[Hashable, list[Vote]]:
    grouped: dict[Hashable, list[Vote]] = defaultdict(list)
    for vote in votes:
        grouped[vote[0]].append(vote)
    return grouped


def _agreement_competence(
    votes: list[Vote], decided: dict[Hashable, tuple[str | None, float]]
) -> dict[Hashable, float]:
    agree: Counter = Counter()
    total: Counter = Counter()
    for item_key, annotator_key, label in votes:
        gold = decided[item_key][0]
        if gold is None:
            continue
        total[annotator_key] += 1
        agree[annotator_key] += label == gold
    return {annotator: agree[annotator] / total[annotator] for annotator in total}


def _k_of_n(votes: list[Vote], k: int, n: int) -> dict[Hashable, tuple[str | None, float]]:
    items = {}
    for item_key, item_votes in _by_item(votes).items():
        result = decide([label for _, _, label in item_votes], k=k, n=n)
        items[item_key] = (result.gold if result.outcome == ACCEPTED else None, result.agreement)
    return items


def _majority(votes: list[Vote]) -> dict[Hashable, tuple[str | None, float]]:
    items = {}
    for item_key, item_votes in _by_item(votes).items():
        counts = Counter(label for _, _, label in item_votes)
        top = max(counts.values())
        leaders = [label for label, count in counts.items() if count == top]
        items[item_key] = (leaders[0] if len(leaders) == 1 else None, top / len(item_votes))
    return items


def _frame(votes: list[Vote]):
    import pandas as pd

    return pd.DataFrame(votes, columns=["task", "worker", "label"])


def _posterior_items(probas, labels_) -> dict[Hashable, tuple[str | None, float]]:
    best = probas.max(axis=1)
    return {task: (str(labels_[task]), float(min(1.0, max(0.0, best[task])))) for task in probas.index}


def _dawid_skene(votes: list[Vote], labels: Sequence[str]) -> AggregationResult:
    from crowdkit.aggregation import DawidSkene

    model = DawidSkene(n_iter=DS_MAX_ITER, tol=DS_TOL).fit(_frame(votes))
    items = _posterior_items(model.probas_, model.labels_)
    priors = model.priors_
    errors = model.errors_  # index (worker, observed label), columns the true label
    # crowd-kit types its fitted attributes Optional (None until fit), and fit has run.
    assert priors is not None and errors is not None
    confusion: dict[Hashable, list[list[float]]] = {}
    competence: dict[Hashable, float] = {}
    for worker, block in errors.groupby(level=0, sort=False):
        observed = block.droplevel(0)
        matrix = [
            [
                float(observed.at[seen, true]) if seen in observed.index and true in observed.columns else 0.0
                for seen in labels
            ]
            for true in labels
        ]
        confusion[worker] = matrix
        competence[worker] = float(
            sum(float(priors.get(label, 0.0)) * matrix[index][index] for index, label in enumerate(labels))
        )
    return AggregationResult("dawid_skene", items, competence, confusion)


def _mace(votes: list[Vote], seed: int) -> AggregationResult:
    import pandas as pd
    from crowdkit.aggregation import MACE

    frame = _frame(votes)
    model = MACE(n_restarts=MACE_RESTARTS, n_iter=MACE_ITER, random_state=seed).fit(frame)
    items = _posterior_items(model.probas_, model.labels_)
    _, workers = pd.factorize(frame["worker"])  # MACE's own numbering of the annotators
    competence = {worker: float(model.spamming_[index, 1]) for index, worker in enumerate(workers)}
    return AggregationResult("mace", items, competence, {})


def aggregate(
    votes: Iterable[Vote],
    method: str,
    *,
    labels: Sequence[str],
    k: int | None = None,
    n: int | None = None,
    seed: int = 0,
) -> AggregationResult:
    """Aggregate ``votes`` — (item key, annotator key, label) triples, None for an
    abstention — with ``method`` (one of :data:`METHODS`).

    Preconditions: every label is one of ``labels`` (ValueError otherwise); keys are
    hashable and, within one kind of key, comparable (they are sorted so that the result
    does not depend on the votes' order); ``k`` and ``n`` are given for ``k_of_n`` (the
    rule of :func:`annotation.metrics.consensus.decide`: ``n`` votes at least, ``k`` of
    them agreeing, k > n/2). An author's or dataset's label that counts as a vote is passed
    as a vote of its own annotator key. Dawid-Skene and MACE estimate every annotator from
    the whole pool, so pass a project's votes together. ``seed`` fixes MACE's random start.

    >>> votes = [(1, "a", "x"), (1, "b", "x"), (1, "c", "x"), (2, "a", "y"), (2, "b", "x")]
    >>> aggregate(votes, "k_of_n", labels=["x", "y"], k=3, n=3).items
    {1: ('x', 1.0), 2: (None, 0.5)}
    >>> aggregate(votes, "majority", labels=["x", "y"]).items[2]
    (None, 0.5)
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    canonical = _canonical(votes, labels, ordered=method in ("dawid_skene", "mace"))
    if not canonical:
        return AggregationResult(method, {})
    if method == "k_of_n":
        if k is None or n is None:
            raise ValueError("k_of_n needs k and n")
        items = _k_of_n(canonical, k, n)
        return AggregationResult(method, items, _agreement_competence(canonical, items))
    if method == "majority":
        items = _majority(canonical)
        return AggregationResult(method, items, _agreement_competence(canonical, items))
    with warnings.catch_warnings():
        # crowd-kit 1.4.2 calls pandas APIs that pandas 3 deprecates (inplace=): not ours to fix.
        warnings.filterwarnings("ignore", module=r"crowdkit\.")
        if method == "dawid_skene":
            return _dawid_skene(canonical, labels)
        return _mace(canonical, seed)


# --- adaptive overlap -----------------------------------------------------------------------


def needs_another_vote(
    labels: Sequence[str],
    *,
    k: int,
    votes_left: int,
    confidence: float | None = None,
    confidence_target: float | None = None,
) -> bool:
    """Whether an item whose votes so far are ``labels`` should get one more vote (adaptive
    overlap, as crowdsourcing platforms' "dynamic overlap" does it), given that it may still
    get ``votes_left`` more.

    The rule, in order:

    * no vote left (``overlap_max`` reached) → no;
    * the k-of-n rule not reached (no single label has ``k`` votes): one more vote while some
      label can still reach ``k`` with the votes left; once none can, more votes cannot
      decide the item and it closes (failed, as a k-of-n round with n votes fails);
    * the rule reached, but the chosen method's ``confidence`` below ``confidence_target``
      → one more vote; otherwise the item is decided.

    ``k`` is absolute, as in :func:`annotation.metrics.consensus.decide` (the author's or
    original label is one of ``labels`` where it counts as a vote).

    >>> needs_another_vote(["a", "a", "a"], k=3, votes_left=2)
    False
    >>> needs_another_vote(["a", "a", "b"], k=3, votes_left=2)
    True
    >>> needs_another_vote(["a", "b", "c"], k=4, votes_left=2)
    False
    >>> needs_another_vote(["a", "a", "a"], k=3, votes_left=2, confidence=0.6, confidence_target=0.9)
    True
    """
    if votes_left <= 0:
        return False
    counts = Counter(label for label in labels if label is not None)
    top = max(counts.values(), default=0)
    leaders = sum(1 for count in counts.values() if count == top)
    if top < k or leaders > 1:
        return top + votes_left >= k
    if confidence_target is not None and confidence is not None and confidence < confidence_target:
        return True
    return False


def vote_confidence(labels: Sequence[str]) -> float:
    """k-of-n's and majority's confidence in an item: the share of its votes the top label
    holds (0.0 without votes)."""
    counts = Counter(label for label in labels if label is not None)
    total = sum(counts.values())
    return max(counts.values()) / total if total else 0.0


def posterior_from_competence(
    votes: Sequence[tuple[str, float | None, list[list[float]] | None]],
    labels: Sequence[str],
    *,
    default_competence: float,
) -> dict[str, float]:
    """The posterior over ``labels`` of one item's true label given its votes and the
    annotators' parameters estimated earlier on the pool: the E-step of Dawid & Skene (1979)
    for a single item with the parameters held fixed, not a re-estimation. Each vote is
    (label, competence, confusion): a Dawid-Skene confusion matrix (rows true, columns
    observed, ``labels`` order) is used when given; otherwise the one-coin model — the
    annotator answers the true label with probability ``competence`` (MACE's probability
    of not spamming, or ``default_competence`` for an annotator not yet estimated) and any
    other label uniformly. Uniform prior. Probabilities are floored at 1e-6 so that one
    vote cannot rule a label out.

    >>> p = posterior_from_competence([("a", 0.9, None), ("a", 0.9, None)], ["a", "b"], default_competence=0.7)
    >>> round(p["a"], 4)
    0.9878
    """
    import numpy as np

    size = len(labels)
    index = {label: position for position, label in enumerate(labels)}
    log_posterior = np.zeros(size)
    for label, competence, confusion in votes:
        observed = index[label]
        if confusion:
            column = np.array([row[observed] for row in confusion], dtype=float)
        else:
            c = default_competence if competence is None else competence
            column = np.full(size, (1.0 - c) / max(size - 1, 1))
            column[observed] = c
        log_posterior += np.log(np.maximum(column, 1e-6))
    log_posterior -= log_posterior.max()
    posterior = np.exp(log_posterior)
    posterior /= posterior.sum()
    return {label: float(posterior[position]) for position, label in enumerate(labels)}


def ratings_spread(ratings: Iterable[dict[str, dict[str, object]]]) -> float:
    """The largest difference between two raters' scores of one candidate on one criterion:
    ``ratings`` holds one ``{candidate: {criterion: score}}`` per rater; only integer scores
    count (booleans and tag lists are not points). 0.0 with fewer than two raters.

    >>> ratings_spread([{"0": {"fluency": 5, "label_valid": True}}, {"0": {"fluency": 2}}])
    3.0
    """
    scores: dict[tuple[str, str], list[float]] = defaultdict(list)
    for rater in ratings:
        for candidate, criteria in rater.items():
            if not isinstance(criteria, dict):
                continue
            for criterion, score in criteria.items():
                if isinstance(score, (int, float)) and not isinstance(score, bool):
                    scores[(candidate, criterion)].append(float(score))
    return max((max(values) - min(values) for values in scores.values() if len(values) > 1), default=0.0)
