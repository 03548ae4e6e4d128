"""Benchmark: label aggregation and adaptive overlap on simulated crowds.

A crowd of annotators with known confusion matrices (a share of them spammers who answer
at random) labels items of 3 classes. Prints, for fixed overlap (every item gets `--overlap`
votes) and for adaptive overlap (the engine's rule, annotation.metrics.aggregation.
needs_another_vote, the function the product calls on submit), the votes spent and the
accuracy of the gold against the true labels for k-of-n, majority, Dawid-Skene and MACE;
then times aggregate() on `--big` items × `--overlap` votes. A script, not a test:

    python bench/aggregation.py                       # 10,000 items, 100,000 for the timing
    python bench/aggregation.py --items 2000 --big 0  # quick

Accuracy counts every item: an item a method leaves undecided (k-of-n short of its rule, a
majority tie) counts as wrong; `decided` says how many it decided.
"""

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from annotation.metrics.aggregation import METHODS, aggregate, needs_another_vote  # noqa: E402

LABELS = ("a", "b", "c")


def make_crowd(rng: np.random.Generator, annotators: int, spammers: float) -> list[np.ndarray]:
    """Confusion matrices P(observed | true): honest annotators with an accuracy drawn from
    U(0.55, 0.95) per true class and their errors spread by a Dirichlet draw; spammers answer
    uniformly whatever the truth."""
    crowd = []
    n_spam = int(round(annotators * spammers))
    for index in range(annotators):
        if index < n_spam:
            crowd.append(np.full((3, 3), 1 / 3))
            continue
        matrix = np.zeros((3, 3))
        for true in range(3):
            accuracy = rng.uniform(0.55, 0.95)
            errors = rng.dirichlet([1.0, 1.0]) * (1 - accuracy)
            others = [c for c in range(3) if c != true]
            matrix[true, true] = accuracy
            matrix[true, others] = errors
        crowd.append(matrix)
    return crowd


class Simulation:
    def __init__(self, items: int, annotators: int, spammers: float, seed: int):
        self.rng = np.random.default_rng(seed)
        self.crowd = make_crowd(self.rng, annotators, spammers)
        self.truth = self.rng.integers(0, 3, size=items)
        self.order = [self.rng.permutation(annotators) for _ in range(items)]

    def vote(self, item: int, position: int) -> tuple[int, int, str]:
        """The `position`-th annotator of the item's own random order (never twice the same
        annotator) and their label, drawn from their confusion row."""
        annotator = int(self.order[item][position])
        label = int(self.rng.choice(3, p=self.crowd[annotator][self.truth[item]]))
        return item, annotator, LABELS[label]

    def fixed(self, overlap: int) -> list[tuple]:
        return [self.vote(item, position) for item in range(len(self.truth)) for position in range(overlap)]

    def adaptive(self, low: int, high: int, k: int) -> list[tuple]:
        """The engine's rule item by item: `low` votes, then one more while
        needs_another_vote says so, up to `high`."""
        votes = []
        for item in range(len(self.truth)):
            cast = [self.vote(item, position) for position in range(low)]
            while needs_another_vote([label for _i, _a, label in cast], k=k, votes_left=high - len(cast)):
                cast.append(self.vote(item, len(cast)))
            votes.extend(cast)
        return votes


def scores(sim: Simulation, votes: list[tuple], k: int, n: int) -> dict:
    """Gold accuracy per method. `n` is the k-of-n rule's n; with adaptive overlap pass
    n = k: the number of votes varies and k agreeing votes decide, as the product's job
    does (annotation.services.aggregation)."""
    out = {}
    for method in METHODS:
        started = time.perf_counter()
        result = aggregate(votes, method, labels=LABELS, k=k, n=n)
        elapsed = time.perf_counter() - started
        correct = sum(1 for item, (label, _c) in result.items.items() if label == LABELS[sim.truth[item]])
        decided = sum(1 for label, _c in result.items.values() if label is not None)
        out[method] = {"accuracy": correct / len(sim.truth), "decided": decided / len(sim.truth), "seconds": elapsed}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--annotators", type=int, default=30)
    parser.add_argument("--spammers", type=float, default=0.2, help="share of annotators who answer at random")
    parser.add_argument("--overlap", type=int, default=5, help="fixed overlap, and overlap_max of the adaptive run")
    parser.add_argument("--overlap-min", type=int, default=3)
    parser.add_argument("--big", type=int, default=100_000, help="items of the timing run (0: skip it)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    # The k-of-n rule of the run: a strict majority of the fixed overlap (3 of 5), as the
    # label test and phrase pairs use it; with adaptive overlap k stays absolute.
    n = args.overlap
    k = n // 2 + 1

    sim = Simulation(args.items, args.annotators, args.spammers, args.seed)
    fixed = sim.fixed(n)
    adaptive = sim.adaptive(args.overlap_min, n, k)
    print(
        f"{args.items} items, 3 classes, {args.annotators} annotators ({args.spammers:.0%} spammers), "
        f"k-of-n rule {k} of {n}; adaptive overlap {args.overlap_min}..{n}"
    )
    print()
    print("| overlap | votes | votes/item | method | gold accuracy | decided | seconds |")
    print("|---|---:|---:|---|---:|---:|---:|")
    results = {}
    for name, votes, rule_n in (("fixed", fixed, n), ("adaptive", adaptive, k)):
        figures = results[name] = scores(sim, votes, k, rule_n)
        for method in METHODS:
            row = figures[method]
            print(
                f"| {name} | {len(votes)} | {len(votes) / args.items:.2f} | {method} | {row['accuracy']:.4f} | "
                f"{row['decided']:.4f} | {row['seconds']:.2f} |"
            )
    saved = 1 - len(adaptive) / len(fixed)
    per_item = Counter(Counter(item for item, _a, _l in adaptive).values())
    print()
    print(f"adaptive overlap spent {saved:.1%} fewer votes than fixed overlap")
    print(
        "  items by votes spent: "
        + ", ".join(f"{votes}: {per_item[votes] / args.items:.1%}" for votes in sorted(per_item))
    )
    for method in METHODS:
        delta = results["adaptive"][method]["accuracy"] - results["fixed"][method]["accuracy"]
        print(f"  {method}: gold accuracy adaptive − fixed = {delta:+.4f}")

    if args.big:
        big = Simulation(args.big, args.annotators, args.spammers, args.seed + 1)
        votes = big.fixed(n)
        print()
        print(f"timing: {args.big} items × {n} votes = {len(votes)} votes")
        total = 0.0
        for method in METHODS:
            started = time.perf_counter()
            aggregate(votes, method, labels=LABELS, k=k, n=n)
            elapsed = time.perf_counter() - started
            total += elapsed
            print(f"  {method}: {elapsed:.1f} s")
        print(f"  all four methods: {total:.1f} s")


if __name__ == "__main__":
    main()
