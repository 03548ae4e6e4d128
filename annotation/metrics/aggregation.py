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

Pure Python: no Django import here (STYLE.md, "Pure math, proven").
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Hashable, Iterable, Sequence

from annotation.metrics.consensus import ACCEPTED, decide

METHODS = ("k_of_n", "majority", "dawid_skene", "mace")

# EM settings: crowd-kit's defaults for Dawid-Skene (100 iterations, tolerance 1e-5);
# MACE with crowd-kit's variational Bayes M-step and its 10 restarts of 50 iterations.
DS_MAX_ITER = 100
DS_TOL = 1e-5
MACE_RESTARTS = 10
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


def _canonical(votes: Iterable[Vote], labels: Sequence[str]) -> list[Vote]:
    """The votes in one order whatever order they came in (crowd-kit numbers annotators in
    order of appearance and MACE draws its start from that numbering), abstentions (None)
    left out. A label outside ``labels`` is a caller's mistake."""
    known = set(labels)
    kept = []
    for item_key, annotator_key, label in votes:
        if label is None:
            continue
        if label not in known:
            raise ValueError(f"label {label!r} is not one of {list(labels)!r}")
        kept.append((item_key, annotator_key, label))
    kept.sort(key=lambda vote: (type(vote[0]).__name__, vote[0], type(vote[1]).__name__, vote[1], vote[2]))
    return kept


def _by_item(votes: list[Vote]) -> dict[Hashable, list[Vote]]:
    grouped: dict[Hashable, list[Vote]] = defaultdict(list)
    for vote in votes:
        grouped[vote[0]].append(vote)
    return grouped


def _agreement_competence(votes: list[Vote], decided: dict[Hashable, tuple[str | None, float]]) -> dict[Hashable, float]:
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
    confusion: dict[Hashable, list[list[float]]] = {}
    competence: dict[Hashable, float] = {}
    for worker, block in errors.groupby(level=0, sort=False):
        observed = block.droplevel(0)
        matrix = [
            [float(observed.at[seen, true]) if seen in observed.index and true in observed.columns else 0.0 for seen in labels]
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
    canonical = _canonical(votes, labels)
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
    if method == "dawid_skene":
        return _dawid_skene(canonical, labels)
    return _mace(canonical, seed)
