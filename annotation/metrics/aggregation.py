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

Dawid-Skene and MACE are crowd-kit's (``crowdkit.aggregation``) EM, step for step, on
numpy arrays (:func:`aggregate_arrays`): the library's pandas frames held a project's votes
as Python objects, gigabytes at a million items. tests/metrics/test_aggregation.py holds
the results to crowd-kit's on the same votes. numpy is imported on first use so
that the web processes that never aggregate do not pay for it.

Pure Python: no Django import here (docs/conventions.md "Pure math").
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Hashable, Iterable, Sequence

from annotation.metrics.consensus import _validate_k_n

if TYPE_CHECKING:
    import numpy as np

METHODS = ("k_of_n", "majority", "dawid_skene", "mace")

# EM settings: crowd-kit's defaults for Dawid-Skene (100 iterations, tolerance 1e-5);
# MACE with crowd-kit's variational Bayes M-step, 50 iterations, one start instead of
# crowd-kit's 10: crowd-kit draws every restart's start from the same seed, so its ten
# restarts are ten runs of one.
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


def _canonical(votes: Iterable[Vote], labels: Sequence[str]) -> list[Vote]:
    """The votes, abstentions (None) left out. A label outside ``labels`` is a caller's
    mistake."""
    known = set(labels)
    kept = []
    for item_key, annotator_key, label in votes:
        if label is None:
            continue
        if label not in known:
            raise ValueError(f"label {label!r} is not one of {list(labels)!r}")
        kept.append((item_key, annotator_key, label))
    return kept


def _key_order(keys) -> list:
    """Keys in one order whatever order they came in: within one kind of key by value."""
    return sorted(set(keys), key=lambda key: (type(key).__name__, key))


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
    A large pool is cheaper as arrays (:func:`aggregate_arrays`, which this calls).

    >>> votes = [(1, "a", "x"), (1, "b", "x"), (1, "c", "x"), (2, "a", "y"), (2, "b", "x")]
    >>> aggregate(votes, "k_of_n", labels=["x", "y"], k=3, n=3).items
    {1: ('x', 1.0), 2: (None, 0.5)}
    >>> aggregate(votes, "majority", labels=["x", "y"]).items[2]
    (None, 0.5)
    """
    import numpy as np

    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    canonical = _canonical(votes, labels)
    if not canonical:
        return AggregationResult(method, {})
    labels = tuple(labels)
    item_keys = _key_order(vote[0] for vote in canonical)
    annotator_keys = _key_order(vote[1] for vote in canonical)
    item_of = {key: number for number, key in enumerate(item_keys)}
    annotator_of = {key: number for number, key in enumerate(annotator_keys)}
    label_of = {label: number for number, label in enumerate(labels)}
    arrays, _numbers = VoteArrays.of(
        np.array([item_of[vote[0]] for vote in canonical], dtype=np.int64),
        np.array([annotator_of[vote[1]] for vote in canonical], dtype=np.int64),
        np.array([label_of[vote[2]] for vote in canonical], dtype=np.int64),
        n_annotators=len(annotator_keys),
        labels=labels,
    )
    result = aggregate_arrays(arrays, method, k=k, n=n, seed=seed)
    items = {
        key: (labels[label] if label >= 0 else None, float(confidence))
        for key, label, confidence in zip(item_keys, result.label.tolist(), result.confidence.tolist())
    }
    competence = {
        key: float(value) for key, value in zip(annotator_keys, result.competence.tolist()) if value == value
    }  # NaN: no figure
    confusion = {}
    if result.confusion is not None:
        confusion = {
            key: result.confusion[number].tolist() for key, number in annotator_of.items() if key in competence
        }
    return AggregationResult(method, items, competence, confusion)


# --- the methods on arrays ----------------------------------------------------------------------
#
# A project's votes as three integer arrays instead of one tuple per vote: 1M items × 3
# votes held as tuples, grouped into dicts and framed by pandas for crowd-kit took 2–2.6 GB
# while the methods ran; as arrays the votes take 9 bytes each and every method works on
# arrays of the items' or the votes' length. Dawid-Skene and MACE below are crowd-kit
# 1.4.2's EM step for step (the same initialisation, updates, stopping rule and label
# order, its quirks included), so that they give crowd-kit's results
# (tests/metrics/test_aggregation.py holds them to the library on the same votes).

# crowd-kit's floor of Dawid-Skene's probabilities (dawid_skene._EPS).
DS_EPS = 1e-10
# crowd-kit's MACE settings (its defaults): the variational M-step's priors and the spread
# of the random start.
MACE_ALPHA = 0.5
MACE_BETA = 0.5
MACE_STRATEGY_PRIOR = 10.0
MACE_DEFAULT_NOISE = 0.5
# Votes per chunk of MACE's E-step.
MACE_CHUNK_VOTES = 250_000


@dataclass(frozen=True)
class VoteArrays:
    """A pool of votes, sorted by (item, annotator, label name): ``item`` indexes the
    items (0 … n_items − 1, in the order of their keys), ``annotator`` the annotators
    (likewise), ``label`` the labels of ``labels``. Every item has a vote."""

    item: "np.ndarray"
    annotator: "np.ndarray"
    label: "np.ndarray"
    n_items: int
    n_annotators: int
    labels: tuple[str, ...]

    @classmethod
    def of(cls, item, annotator, label, *, n_annotators: int, labels: Sequence[str]) -> "tuple[VoteArrays, np.ndarray]":
        """(the votes, the item keys by item number): the votes sorted canonically (the
        result must not depend on the order they were read in: MACE's start follows the
        annotators' order of appearance), their items numbered. ``item`` holds integer
        keys whose order is the items' order (ids), ``annotator`` the annotators' numbers
        (0 … n_annotators − 1, in the order of their keys), ``label`` indexes ``labels``."""
        import numpy as np

        labels = tuple(labels)
        rank = np.argsort(np.argsort(np.array(labels, dtype=object))).astype(np.int8)  # by name
        label = np.asarray(label)
        order = np.lexsort((rank[label], annotator, item))
        item = np.asarray(item)[order]
        # Sorted: an item's number counts the distinct keys before it.
        new = np.empty(len(item), dtype=bool)
        new[:1] = True
        np.not_equal(item[1:], item[:-1], out=new[1:])
        keys = item[new]
        del item
        number = np.cumsum(new, dtype=np.int32)
        number -= 1
        del new
        votes = cls(
            item=number,
            annotator=np.asarray(annotator)[order].astype(np.int32, copy=False),
            label=label[order].astype(np.int8, copy=False),
            n_items=len(keys),
            n_annotators=n_annotators,
            labels=labels,
        )
        return votes, keys

    def starts(self) -> "np.ndarray":
        """Where each item's votes start (and, last, where they end)."""
        import numpy as np

        return np.searchsorted(self.item, np.arange(self.n_items + 1))

    def __len__(self) -> int:
        return len(self.item)

    def counts(self) -> "np.ndarray":
        """Votes per (item, label): an n_items × len(labels) array."""
        import numpy as np

        size = len(self.labels)
        flat = np.bincount(self.item.astype(np.int64) * size + self.label, minlength=self.n_items * size)
        return flat.reshape(self.n_items, size)


@dataclass(frozen=True)
class ArrayResult:
    """:class:`AggregationResult` on arrays: per item (the votes' item numbers) the label's
    index in ``labels`` (−1: none) and the confidence; per annotator the competence (NaN:
    none) and, for Dawid-Skene, the confusion matrix (n_annotators × labels × labels, rows
    the true label)."""

    method: str
    label: "np.ndarray"
    confidence: "np.ndarray"
    competence: "np.ndarray"
    confusion: "np.ndarray | None" = None


def aggregate_arrays(
    votes: VoteArrays, method: str, *, k: int | None = None, n: int | None = None, seed: int = 0
) -> ArrayResult:
    """:func:`aggregate` on a pool of :class:`VoteArrays` (its preconditions the same)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if method == "k_of_n":
        if k is None or n is None:
            raise ValueError("k_of_n needs k and n")
        _validate_k_n(k, n)
    if method in ("k_of_n", "majority"):
        return _by_count(votes, method, k, n)
    if method == "dawid_skene":
        return _dawid_skene_arrays(votes)
    return _mace_arrays(votes, seed)


def _by_count(votes: VoteArrays, method: str, k: int | None, n: int | None) -> ArrayResult:
    """k-of-n (consensus.decide: n votes at least, the top label k of them and alone at the
    top) and majority (the top label alone at the top); the confidence is the top label's
    share; the competence the annotator's agreement with the label over the items with one."""
    import numpy as np

    counts = votes.counts()
    top = counts.max(axis=1)
    total = counts.sum(axis=1)
    alone = (counts == top[:, None]).sum(axis=1) == 1
    if method == "k_of_n":
        assert k is not None and n is not None
        alone &= (total >= n) & (top >= k)
    label = np.where(alone, np.argmax(counts, axis=1), -1).astype(np.int8)
    return ArrayResult(method, label, top / total, agreement_competence(votes, label))


def agreement_competence(votes: VoteArrays, label: "np.ndarray") -> "np.ndarray":
    """Per annotator: the share of their votes on items with a label that agree with it."""
    import numpy as np

    given = label[votes.item]
    counted = given >= 0
    total = np.bincount(votes.annotator[counted], minlength=votes.n_annotators)
    agreed = np.bincount(votes.annotator[counted & (given == votes.label)], minlength=votes.n_annotators)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, agreed / np.maximum(total, 1), np.nan)


def _dawid_skene_arrays(votes: VoteArrays) -> ArrayResult:
    """crowd-kit's DawidSkene.fit: the true labels are the labels given (columns in name
    order), started from majority vote's shares; the M-step sums the posteriors per
    (annotator, observed label), floors them at DS_EPS and normalises over the labels the
    annotator gave; the E-step in log2; stops after DS_MAX_ITER or once the evidence lower
    bound per vote gains less than DS_TOL."""
    import numpy as np

    n_labels = len(votes.labels)
    given = np.flatnonzero(np.bincount(votes.label, minlength=n_labels))
    given = given[np.argsort(np.array([votes.labels[index] for index in given], dtype=object))]
    column = np.full(n_labels, -1, dtype=np.int64)
    column[given] = np.arange(len(given))
    size = len(given)
    # (annotator, observed label) pairs numbered annotator × size + its label's column.
    pair = votes.annotator * np.int32(size) + column.astype(np.int32)[votes.label]
    pairs = votes.n_annotators * size
    observed = np.bincount(pair, minlength=pairs) > 0

    def m_step(probas):
        sums = np.empty((pairs, size))
        for true in range(size):
            sums[:, true] = np.bincount(pair, weights=probas[votes.item, true], minlength=pairs)
        errors = np.where(observed[:, None], np.maximum(sums, DS_EPS), 0.0).reshape(votes.n_annotators, size, size)
        with np.errstate(invalid="ignore", divide="ignore"):
            errors /= errors.sum(axis=1, keepdims=True)
        return errors.reshape(pairs, size)

    def log_of(errors, log):
        with np.errstate(divide="ignore"):
            return log(np.where(observed[:, None], errors, 1.0))

    def e_step(priors, errors):
        logs = log_of(errors, np.log2)
        likelihood = np.empty((votes.n_items, size))
        for true in range(size):
            likelihood[:, true] = np.bincount(votes.item, weights=logs[pair, true], minlength=votes.n_items)
        likelihood += np.log2(priors)
        likelihood = np.exp2(likelihood - likelihood.max(axis=1, keepdims=True))
        return likelihood / likelihood.sum(axis=1, keepdims=True)

    def lower_bound(probas, priors, errors):
        logs = log_of(errors, np.log) + np.log(priors)
        joint = sum(float(np.dot(probas[votes.item, true], logs[pair, true])) for true in range(size))
        np.maximum(probas, DS_EPS, out=probas)  # crowd-kit floors the posteriors it keeps here
        return joint - float((np.log(probas) * probas).sum())

    counts = votes.counts()[:, given]
    probas = counts / counts.sum(axis=1, keepdims=True)
    del counts
    priors = np.maximum(probas.mean(axis=0), DS_EPS)
    errors = m_step(probas)
    loss = -np.inf
    for _ in range(DS_MAX_ITER):
        probas = e_step(priors, errors)
        priors = np.maximum(probas.mean(axis=0), DS_EPS)
        errors = m_step(probas)
        new_loss = lower_bound(probas, priors, errors) / len(votes)
        if new_loss - loss < DS_TOL:
            break
        loss = new_loss
    best = probas.max(axis=1)
    label = given[np.argmax(probas, axis=1)].astype(np.int8)
    # Rows the true label, columns the observed one, both in `labels` order.
    confusion = np.zeros((votes.n_annotators, n_labels, n_labels))
    by_pair = errors.reshape(votes.n_annotators, size, size)  # [annotator, observed, true]
    confusion[np.ix_(np.arange(votes.n_annotators), given, given)] = by_pair.transpose(0, 2, 1)
    prior = np.zeros(n_labels)
    prior[given] = priors
    competence = (confusion[:, np.arange(n_labels), np.arange(n_labels)] * prior).sum(axis=1)
    voted = np.bincount(votes.annotator, minlength=votes.n_annotators) > 0
    return ArrayResult("dawid_skene", label, np.clip(best, 0.0, 1.0), np.where(voted, competence, np.nan), confusion)


def _first_seen(values: "np.ndarray", size: int) -> "np.ndarray":
    """Each value's number in order of first appearance (pandas.factorize), −1 if absent."""
    import numpy as np

    present, first = np.unique(values, return_index=True)
    number = np.full(size, -1, dtype=np.int64)
    number[present[np.argsort(first)]] = np.arange(len(present))
    return number


def _digamma(x: "np.ndarray") -> "np.ndarray":
    """ψ(x) for x > 0 (scipy.special.digamma, whose import costs 40 MB): ψ(x) = ψ(x + 1) − 1/x
    up to x ≥ 10, then the asymptotic series (the first term left out < 1e-13)."""
    import numpy as np

    x = np.array(x, dtype=float)
    result = np.zeros_like(x)
    while (small := x < 10).any():
        result[small] -= 1.0 / x[small]
        x = np.where(small, x + 1.0, x)
    inverse = 1.0 / (x * x)
    series = inverse * (1 / 12 - inverse * (1 / 120 - inverse * (1 / 252 - inverse * (1 / 240 - inverse / 132))))
    return result + np.log(x) - 0.5 / x - series


def _variational_normalize(counts, priors):
    import numpy as np

    norm = np.exp(_digamma((counts + priors).sum(axis=1)))[:, None]
    return np.divide(
        np.exp(_digamma(counts + priors)), norm, out=np.zeros_like(counts), where=~np.isclose(norm, np.zeros_like(norm))
    )


def _mace_arrays(votes: VoteArrays, seed: int) -> ArrayResult:
    """crowd-kit's MACE.fit with the variational M-step, MACE_ITER iterations (its restarts
    all start from the same random draw, so one is all of them). As in the library, the
    annotators and labels are numbered in order of first appearance, while the strategy
    counts of the M-step come out of a groupby in sorted order and are used under the
    first numbering: kept, so that the results stay the library's."""
    import numpy as np

    worker = _first_seen(votes.annotator, votes.n_annotators)
    label_number = _first_seen(votes.label, len(votes.labels))
    w = worker.astype(np.int32)[votes.annotator]
    seen = label_number.astype(np.int8)[votes.label]
    n_workers = int(w.max()) + 1
    n_labels = int(seen.max()) + 1
    # The groupby's numbering: annotators and labels in sorted order.
    sorted_worker = np.cumsum(np.bincount(votes.annotator, minlength=votes.n_annotators) > 0) - 1
    names = np.array(votes.labels, dtype=object)
    given = np.flatnonzero(label_number >= 0)
    sorted_label = np.full(len(votes.labels), -1, dtype=np.int64)
    sorted_label[given[np.argsort(names[given])]] = np.arange(len(given))
    strategy_pair = (sorted_worker * n_labels).astype(np.int32)[votes.annotator] + sorted_label.astype(np.int32)[
        votes.label
    ]

    # crowd-kit's scipy.stats.uniform(1, 1 + noise).rvs(size, random_state=seed), drawn as
    # scipy draws it, without importing scipy.stats (70 MB).
    spamming = 1 + (1 + MACE_DEFAULT_NOISE) * np.random.RandomState(seed).uniform(0.0, 1.0, size=(n_workers, 2))
    thetas = 1 + (1 + MACE_DEFAULT_NOISE) * np.random.RandomState(seed).uniform(0.0, 1.0, size=(n_workers, n_labels))
    spamming = spamming / spamming.sum(axis=1, keepdims=True)
    thetas = thetas / thetas.sum(axis=1, keepdims=True)
    theta_priors = np.empty((n_workers, 2))
    theta_priors[:, 0], theta_priors[:, 1] = MACE_ALPHA, MACE_BETA
    strategy_priors = np.full((n_workers, n_labels), MACE_STRATEGY_PRIOR)

    # The E-step a range of items at a time (about MACE_CHUNK_VOTES votes): its per-vote
    # temporaries, a dozen arrays as long as the votes, stay a few MB each.
    every_start = votes.starts()
    step = max(1, MACE_CHUNK_VOTES * votes.n_items // max(len(votes), 1))
    edges = [*range(0, votes.n_items, step), votes.n_items]

    def e_step(spamming, thetas):
        gold = np.empty((votes.n_items, n_labels))
        strategy_counts = np.zeros(n_workers * n_labels)
        knowing = np.zeros((n_workers, 2))
        for low, high in zip(edges, edges[1:]):
            begin, end = int(every_start[low]), int(every_start[high])
            cw, cseen, citem = w[begin:end], seen[begin:end], votes.item[begin:end] - low
            spam = spamming[cw, 0] * thetas[cw, cseen]
            knows = spamming[cw, 1]
            part = gold[low:high]
            for number in range(n_labels):
                part[:, number] = (
                    np.multiply.reduceat(spam + knows * (cseen == number), every_start[low:high] - begin) / n_labels
                )
            instance = part.sum(axis=1)[citem]
            strategy = np.zeros(end - begin)
            for number in range(n_labels):
                strategy += part[citem, number] / (spam + knows * (cseen == number))
            strategy = strategy * spam / instance
            strategy_counts += np.bincount(strategy_pair[begin:end], weights=strategy, minlength=n_workers * n_labels)
            knowing[:, 0] += np.bincount(cw, weights=strategy, minlength=n_workers)
            knowing[:, 1] += np.bincount(
                cw, weights=part[citem, cseen] * knows / (spam + knows) / instance, minlength=n_workers
            )
        return gold, strategy_counts.reshape(n_workers, n_labels), knowing

    gold, strategy_counts, knowing = e_step(spamming, thetas)
    for _ in range(MACE_ITER):
        spamming = _variational_normalize(knowing, theta_priors)
        thetas = _variational_normalize(strategy_counts, strategy_priors)
        gold, strategy_counts, knowing = e_step(spamming, thetas)
    probas = gold / gold.sum(axis=1, keepdims=True)
    by_number = np.empty(n_labels, dtype=np.int64)
    by_number[label_number[given]] = given
    label = by_number[np.argmax(probas, axis=1)].astype(np.int8)
    competence = np.where(worker >= 0, spamming[np.maximum(worker, 0), 1], np.nan)
    return ArrayResult("mace", label, np.clip(probas.max(axis=1), 0.0, 1.0), competence)


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
        log_posterior += _log_column(index[label], competence, confusion, size, default_competence)
    log_posterior -= log_posterior.max()
    posterior = np.exp(log_posterior)
    posterior /= posterior.sum()
    return {label: float(posterior[position]) for position, label in enumerate(labels)}


def _log_column(observed: int, competence, confusion, size: int, default_competence: float) -> "np.ndarray":
    """log P(observed | true) over the true labels for one vote (posterior_from_competence)."""
    import numpy as np

    if confusion:
        column = np.array([row[observed] for row in confusion], dtype=float)
    else:
        c = default_competence if competence is None else competence
        column = np.full(size, (1.0 - c) / max(size - 1, 1))
        column[observed] = c
    return np.log(np.maximum(column, 1e-6))


def posteriors_from_competence_arrays(
    votes: VoteArrays, parameters: Sequence[tuple[float | None, list[list[float]] | None]], *, default_competence: float
) -> tuple["np.ndarray", "np.ndarray"]:
    """posterior_from_competence for every item of a pool at once: (each item's label index
    — the first of equals in ``labels`` order — and its posterior). ``parameters`` holds
    (competence, confusion) per annotator number, (None, None) for one not estimated."""
    import numpy as np

    size = len(votes.labels)
    logs = np.empty((votes.n_annotators, size, size))  # [annotator, observed, true]
    for number, (competence, confusion) in enumerate(parameters):
        for observed in range(size):
            logs[number, observed] = _log_column(observed, competence, confusion, size, default_competence)
    log_posterior = np.empty((votes.n_items, size))
    for true in range(size):
        log_posterior[:, true] = np.bincount(
            votes.item, weights=logs[votes.annotator, votes.label, true], minlength=votes.n_items
        )
    log_posterior -= log_posterior.max(axis=1, keepdims=True)
    posterior = np.exp(log_posterior)
    posterior /= posterior.sum(axis=1, keepdims=True)
    best = np.argmax(posterior, axis=1)
    return best.astype(np.int8), posterior[np.arange(votes.n_items), best]


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
