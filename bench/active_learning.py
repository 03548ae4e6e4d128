"""Benchmark: does uncertainty order save labels? Simulated annotators label a real NLI pool
with the built-in model (annotation.metrics.baseline, the function the worker's job calls)
retrained as they go; for `random` and `uncertainty` order, prints the model's test accuracy
against the labels spent, and how many labels uncertainty order needs to reach the accuracy
random order reaches with its whole budget. A script, not a test:

    python bench/active_learning.py --pool data/Val-word.csv --test data/Test-word.csv
    python bench/active_learning.py --pool … --test … --seeds 20 --votes 3

Pool and test are FarsTail-shaped files (tab-separated: premise, hypothesis, label e/n/c).
Each item the order picks gets `--votes` simulated votes (each right with probability
`--accuracy`, else one of the other labels at random) and their majority (a tie: the first
vote) becomes its gold, as k-of-n would give; labels spent = items × votes. The model
retrains after every `--batch` items, and uncertainty order then takes the items whose
margin between the two most probable labels is smallest, as the engine's `uncertainty`
order does. Figures are means over `--seeds` runs (the pool's first `--start` items are a
random draw in both orders).
"""

import argparse
import csv
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from annotation.metrics.baseline import fit, predict_proba  # noqa: E402

LABELS = ("e", "n", "c")


def read(path: Path) -> tuple[list[tuple[str, str]], np.ndarray]:
    texts, labels = [], []
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            if row["label"] in LABELS:
                texts.append((row["premise"], row["hypothesis"]))
                labels.append(LABELS.index(row["label"]))
    return texts, np.array(labels)


def margins(probabilities: np.ndarray) -> np.ndarray:
    top = np.sort(probabilities, axis=1)
    return top[:, -1] - top[:, -2]


def crowd_label(rng: np.random.Generator, truth: int, votes: int, accuracy: float) -> int:
    cast = []
    for _ in range(votes):
        if rng.random() < accuracy:
            cast.append(truth)
        else:
            cast.append(int(rng.choice([label for label in range(len(LABELS)) if label != truth])))
    counts = Counter(cast).most_common()
    return cast[0] if len(counts) > 1 and counts[0][1] == counts[1][1] else counts[0][0]


def run(order: str, pool, truth, test, test_truth, args, seed: int) -> list[tuple[int, float]]:
    """(labels spent, test accuracy) after each batch. One training per batch: the model
    scored after a batch is the one that picks the next batch in uncertainty order, as the
    worker's job stores one set that the engine then serves by."""
    rng = np.random.default_rng(seed)
    unlabelled = list(rng.permutation(len(pool)))
    chosen, gold = [], []
    curve = []
    model = None
    while unlabelled:
        if not chosen:
            take = unlabelled[: args.start]
        elif order == "random" or model is None:
            take = unlabelled[: args.batch]
        else:
            uncertain = np.argsort(margins(predict_proba(model, [pool[i] for i in unlabelled])), kind="stable")
            take = [unlabelled[i] for i in uncertain[: args.batch]]
        for index in take:
            unlabelled.remove(index)
            chosen.append(index)
            gold.append(crowd_label(rng, int(truth[index]), args.votes, args.accuracy))
        if len(set(gold)) > 1:
            model = fit([pool[i] for i in chosen], gold, n_labels=len(LABELS), seed=seed)
            accuracy = float((predict_proba(model, test).argmax(axis=1) == test_truth).mean())
            curve.append((len(chosen) * args.votes, accuracy))
    return curve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pool", type=Path, required=True)
    parser.add_argument("--test", type=Path, required=True)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--votes", type=int, default=3)
    parser.add_argument("--accuracy", type=float, default=0.8, help="each simulated vote's chance to be right")
    parser.add_argument("--start", type=int, default=15, help="items labelled in random order first")
    parser.add_argument("--batch", type=int, default=15, help="items between two trainings")
    args = parser.parse_args()
    pool, truth = read(args.pool)
    test, test_truth = read(args.test)
    print(f"pool {len(pool)} items, test {len(test)} items; {args.votes} votes per item at {args.accuracy:.0%}")
    curves = {}
    for order in ("random", "uncertainty"):
        runs = [run(order, pool, truth, test, test_truth, args, seed) for seed in range(args.seeds)]
        spent = [labels for labels, _accuracy in runs[0]]
        curves[order] = (spent, np.mean([[accuracy for _labels, accuracy in curve] for curve in runs], axis=0))
    spent = curves["random"][0]
    print("\n| labels | random | uncertainty |\n|---:|---:|---:|")
    for i, labels in enumerate(spent):
        print(f"| {labels} | {curves['random'][1][i]:.3f} | {curves['uncertainty'][1][i]:.3f} |")
    target = curves["random"][1][-1]
    reached = next((spent[i] for i, value in enumerate(curves["uncertainty"][1]) if value >= target), None)
    majority = Counter(test_truth.tolist()).most_common(1)[0][1] / len(test_truth)
    print(f"\nrandom order, whole budget ({spent[-1]} labels): accuracy {target:.3f} (majority class {majority:.3f})")
    if reached is None:
        print("uncertainty order never reaches it")
    else:
        print(f"uncertainty order reaches it with {reached} labels ({reached / spent[-1]:.0%} of the budget)")
    best_random = max(curves["random"][1])
    print(f"best accuracy on the way: random {best_random:.3f}, uncertainty {max(curves['uncertainty'][1]):.3f}")


if __name__ == "__main__":
    main()
