"""annotation.metrics.aggregation against crowd-kit's own results on the same votes, with
property tests (no database)."""

import random
import subprocess
import sys

import pandas as pd
import pytest
from crowdkit.aggregation import MACE, DawidSkene, MajorityVote
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.metrics.aggregation import (
    DS_MAX_ITER,
    DS_TOL,
    MACE_ITER,
    MACE_RESTARTS,
    METHODS,
    aggregate,
    needs_another_vote,
    posterior_from_competence,
    ratings_spread,
)

LABELS = ("entailment", "neutral", "contradiction")


def simulated_votes(items=300, seed=7):
    """Five annotators of known accuracy (two near-spammers) on three classes."""
    rng = random.Random(seed)
    accuracy = {"good1": 0.9, "good2": 0.85, "mid": 0.7, "spam1": 0.34, "spam2": 0.4}
    votes, truth = [], {}
    for item in range(items):
        truth[item] = rng.choice(LABELS)
        for annotator, p in accuracy.items():
            label = truth[item] if rng.random() < p else rng.choice([x for x in LABELS if x != truth[item]])
            votes.append((item, annotator, label))
    return votes, truth


def frame(votes):
    return pd.DataFrame(votes, columns=["task", "worker", "label"])


def test_dawid_skene_equals_crowd_kit_on_the_same_votes():
    votes, _truth = simulated_votes()
    ours = aggregate(votes, "dawid_skene", labels=LABELS)
    model = DawidSkene(n_iter=DS_MAX_ITER, tol=DS_TOL).fit(frame(sorted(votes)))
    assert {item: label for item, (label, _c) in ours.items.items()} == model.labels_.to_dict()
    for item, (_label, confidence) in ours.items.items():
        assert confidence == pytest.approx(model.probas_.loc[item].max())
    # Confusion rows are the true label, columns the observed one, in LABELS order.
    for worker in ("good1", "spam1"):
        for t, true in enumerate(LABELS):
            for o, seen in enumerate(LABELS):
                assert ours.confusion[worker][t][o] == pytest.approx(model.errors_.loc[(worker, seen), true])
    # Expected accuracy: the spammers rank below the good annotators.
    assert min(ours.competence["good1"], ours.competence["good2"]) > max(
        ours.competence["spam1"], ours.competence["spam2"]
    )
    assert ours.competence["good1"] == pytest.approx(
        sum(
            model.priors_[label] * model.errors_.loc[(worker, label), label] for label in LABELS for worker in ["good1"]
        )
    )


def assert_mace_is_crowd_kits(votes, canonical, *, seed):
    """Our MACE on `votes` gives crowd-kit's on the same votes in the canonical order."""
    ours = aggregate(votes, "mace", labels=LABELS, seed=seed)
    model = MACE(n_restarts=MACE_RESTARTS, n_iter=MACE_ITER, random_state=seed).fit(frame(canonical))
    assert {item: label for item, (label, _c) in ours.items.items()} == model.labels_.to_dict()
    for item, (_label, confidence) in ours.items.items():
        assert confidence == pytest.approx(model.probas_.loc[item].max())
    workers = list(pd.factorize(frame(canonical)["worker"])[1])
    for worker, competence in ours.competence.items():
        assert competence == pytest.approx(model.spamming_[workers.index(worker), 1])
    return ours


def test_mace_equals_crowd_kit_on_the_same_votes():
    votes, _truth = simulated_votes()
    canonical = sorted(votes, key=lambda v: (type(v[0]).__name__, v[0], type(v[1]).__name__, v[1], v[2]))
    ours = assert_mace_is_crowd_kits(votes, canonical, seed=3)
    assert ours.confusion == {}
    assert ours.competence["good1"] > ours.competence["spam1"]


def project_like_votes(items=400, seed=11):
    """Votes as a project holds them: integer item and annotator ids, the annotators met
    in an order that is not their ids' (MACE numbers them as it meets them), one to four
    votes per item from a pool of twelve of mixed accuracy, and a label order of
    appearance that is not the labels' names' order."""
    rng = random.Random(seed)
    annotators = rng.sample(range(100, 200), 12)
    accuracy = {annotator: rng.uniform(0.3, 0.95) for annotator in annotators}
    votes = []
    for item in range(1000, 1000 + items):
        truth = LABELS[0] if item == 1000 else rng.choice(LABELS)
        chosen = annotators[:3] if item == 1000 else rng.sample(annotators, rng.randint(1, 4))
        for annotator in chosen:
            good = rng.random() < accuracy[annotator]
            votes.append((item, annotator, truth if good else rng.choice([x for x in LABELS if x != truth])))
    return votes


@pytest.mark.parametrize("seed", [11, 12])
def test_the_array_methods_equal_crowd_kit_on_a_project_like_pool(seed):
    """Dawid-Skene and MACE run on arrays (aggregate_arrays): crowd-kit's EM step for step,
    its numbering of annotators and labels by appearance included."""
    votes = project_like_votes(seed=seed)
    canonical = sorted(votes)
    ds = aggregate(votes, "dawid_skene", labels=LABELS)
    model = DawidSkene(n_iter=DS_MAX_ITER, tol=DS_TOL).fit(frame(canonical))
    assert {item: label for item, (label, _c) in ds.items.items()} == model.labels_.to_dict()
    for item, (_label, confidence) in ds.items.items():
        assert confidence == pytest.approx(model.probas_.loc[item].max())
    for worker, matrix in ds.confusion.items():
        for t, true in enumerate(LABELS):
            for o, seen in enumerate(LABELS):
                expected = model.errors_.loc[(worker, seen), true] if (worker, seen) in model.errors_.index else 0.0
                assert matrix[t][o] == pytest.approx(expected)
    for method_seed in (0, 5):
        assert_mace_is_crowd_kits(votes, canonical, seed=method_seed)


def test_mace_by_chunks_of_votes_is_mace_on_the_whole_pool(monkeypatch):
    """The E-step's chunks of items (MACE_CHUNK_VOTES, for memory) change no result."""
    from annotation.metrics import aggregation

    votes = project_like_votes(items=120)
    whole = aggregate(votes, "mace", labels=LABELS, seed=2)
    monkeypatch.setattr(aggregation, "MACE_CHUNK_VOTES", 7)
    chunked = aggregate(votes, "mace", labels=LABELS, seed=2)
    assert {item: label for item, (label, _c) in chunked.items.items()} == {
        item: label for item, (label, _c) in whole.items.items()
    }
    for item, (_label, confidence) in whole.items.items():
        assert chunked.items[item][1] == pytest.approx(confidence, rel=1e-9)
    assert chunked.competence == pytest.approx(whole.competence, rel=1e-9)


def test_majority_agrees_with_crowd_kit_where_there_is_no_tie():
    votes, _truth = simulated_votes(items=100)
    ours = aggregate(votes, "majority", labels=LABELS)
    theirs = MajorityVote().fit_predict(frame(votes)).to_dict()
    decided = {item: label for item, (label, _c) in ours.items.items() if label is not None}
    assert decided and all(theirs[item] == label for item, label in decided.items())


def test_k_of_n_follows_the_consensus_rule():
    votes = [(1, w, "neutral") for w in "abcd"] + [(1, "e", "entailment")]
    votes += [(2, w, label) for w, label in zip("abcde", ["neutral", "neutral", "neutral", "entailment", "entailment"])]
    result = aggregate(votes, "k_of_n", labels=LABELS, k=4, n=5)
    assert result.items == {1: ("neutral", 0.8), 2: (None, 0.6)}
    # Competence for k-of-n: agreement with the decided label on decided items only.
    assert result.competence == {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0, "e": 0.0}
    assert result.confusion == {}


def test_abstentions_are_left_out_and_unknown_labels_refused():
    result = aggregate([(1, "a", "neutral"), (1, "b", None)], "majority", labels=LABELS)
    assert result.items == {1: ("neutral", 1.0)}
    with pytest.raises(ValueError):
        aggregate([(1, "a", "maybe")], "majority", labels=LABELS)
    with pytest.raises(ValueError):
        aggregate([(1, "a", "neutral")], "k_of_n", labels=LABELS)
    with pytest.raises(ValueError):
        aggregate([(1, "a", "neutral")], "vote", labels=LABELS)
    assert aggregate([], "mace", labels=LABELS).items == {}


def test_importing_the_module_imports_neither_django_nor_crowd_kit():
    code = (
        "import sys; import annotation.metrics.aggregation; "
        "print('django' in sys.modules, 'crowdkit' in sys.modules, 'pandas' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False", "False"]


def test_aggregating_imports_neither_pandas_nor_scipy():
    """The worker that aggregates a large project pays for numpy alone: pandas (crowd-kit's
    frames) and scipy (70 MB for scipy.stats) stay out of its process."""
    code = (
        "import sys; from annotation.metrics.aggregation import aggregate; "
        "votes = [(1, 'a', 'x'), (1, 'b', 'y'), (2, 'a', 'x')]; "
        "[aggregate(votes, m, labels=['x', 'y'], k=1, n=1) for m in ('k_of_n', 'majority', 'dawid_skene', 'mace')]; "
        "print(*(name in sys.modules for name in ('pandas', 'scipy', 'crowdkit')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False", "False"]


# --- properties ---------------------------------------------------------------------------------

labels_st = st.sampled_from(LABELS)


@settings(max_examples=15, deadline=None)
@given(label=labels_st, voters=st.integers(min_value=3, max_value=7), items=st.integers(min_value=1, max_value=5))
def test_unanimous_votes_give_that_label_with_confidence_one(label, voters, items):
    votes = [(item, f"w{w}", label) for item in range(items) for w in range(voters)]
    for method, extra in (("k_of_n", {"k": voters // 2 + 1, "n": voters}), ("majority", {})):
        result = aggregate(votes, method, labels=LABELS, **extra)
        assert result.items == {item: (label, 1.0) for item in range(items)}
    for method in ("dawid_skene", "mace"):
        result = aggregate(votes, method, labels=LABELS)
        assert all(got == label and confidence > 0.5 for got, confidence in result.items.values())


vote_lists = st.lists(
    st.tuples(st.integers(min_value=0, max_value=6), st.sampled_from(["a", "b", "c", "d"]), labels_st),
    min_size=1,
    max_size=40,
    unique_by=lambda v: (v[0], v[1]),
)


@settings(max_examples=12, deadline=None)
@given(votes=vote_lists, order=st.randoms(use_true_random=False), method=st.sampled_from(METHODS))
def test_the_result_does_not_depend_on_the_votes_order(votes, order, method):
    shuffled = list(votes)
    order.shuffle(shuffled)
    first = aggregate(votes, method, labels=LABELS, k=2, n=3)
    second = aggregate(shuffled, method, labels=LABELS, k=2, n=3)
    assert {item: label for item, (label, _c) in first.items.items()} == {
        item: label for item, (label, _c) in second.items.items()
    }
    for item, (_label, confidence) in first.items.items():
        assert 0.0 <= confidence <= 1.0
        assert second.items[item][1] == pytest.approx(confidence, abs=1e-9)
    assert first.competence.keys() == second.competence.keys()
    for annotator, competence in first.competence.items():
        assert 0.0 <= competence <= 1.0 + 1e-9
        assert second.competence[annotator] == pytest.approx(competence, abs=1e-9)


# --- adaptive overlap's rule, vote by vote ------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "k", "left", "confidence", "target", "more"),
    [
        (["a", "a", "a"], 3, 2, None, None, False),  # rule reached: decided
        (["a", "a", "b"], 3, 2, None, None, True),  # 2 + 2 can still reach 3
        (["a", "a", "b"], 3, 0, None, None, False),  # overlap_max reached
        (["a", "b", "c"], 4, 2, None, None, False),  # 1 + 2 < 4: no label can still reach k
        (["a", "b"], 2, 1, None, None, True),  # a tie: one more vote can break it
        (["a", "a", "a"], 3, 2, 0.8, 0.9, True),  # reached, but not confident enough
        (["a", "a", "a"], 3, 2, 0.95, 0.9, False),
        ([], 2, 3, None, None, True),
    ],
)
def test_needs_another_vote(labels, k, left, confidence, target, more):
    assert needs_another_vote(labels, k=k, votes_left=left, confidence=confidence, confidence_target=target) is more


@settings(max_examples=80, deadline=None)
@given(
    labels=st.lists(labels_st, max_size=8),
    k=st.integers(min_value=1, max_value=6),
    left=st.integers(min_value=0, max_value=5),
)
def test_another_vote_only_when_it_can_matter(labels, k, left):
    more = needs_another_vote(labels, k=k, votes_left=left)
    counts = [labels.count(label) for label in LABELS]
    top = max(counts)
    if left == 0:
        assert not more
    elif top >= k and counts.count(top) == 1:
        assert not more  # decided, and no confidence target
    else:
        assert more == (top + left >= k)


def test_posterior_from_dawid_skene_parameters_is_one_e_step():
    confusion = [[0.8, 0.1, 0.1], [0.2, 0.6, 0.2], [0.1, 0.1, 0.8]]
    posterior = posterior_from_competence(
        [("neutral", None, confusion), ("neutral", 0.9, None)], LABELS, default_competence=0.5
    )
    unnormalised = [confusion[t][1] * (0.9 if t == 1 else 0.05) for t in range(3)]
    total = sum(unnormalised)
    assert [posterior[label] for label in LABELS] == pytest.approx([x / total for x in unnormalised])


def test_ratings_spread_counts_points_not_flags_or_tags():
    raters = [
        {"0": {"accuracy": 5, "label_valid": True, "errors": ["hallucination"]}, "1": {"accuracy": 3}},
        {"0": {"accuracy": 4, "label_valid": False, "errors": []}, "1": {"accuracy": 1}},
    ]
    assert ratings_spread(raters) == 2.0
    assert ratings_spread(raters[:1]) == 0.0
