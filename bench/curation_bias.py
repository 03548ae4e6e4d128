"""Benchmark: the bias analysis (FarsTail §4.3) on synthetic NLI items — tokenising, Table 2,
Table 4's PMI, both biased models fitted on train and applied to dev and test, the hard flags.

Items are made here (Persian-looking words built from letters, some joined by ZWNJ, with
punctuation): premises of about 200 characters, hypotheses of about 60, three labels whose hypotheses copy
more or less of the premise and now and then carry a clue word (so the models have something
to find, and about as little as in FarsTail), split 70/15/15. What is timed is the job's computation (annotation.metrics.bias.analyse and
the tokenising before it); reading items from the database and writing the flags are not.

    .venv/bin/python bench/curation_bias.py [--items 10000]

`run(n_items)` returns the figures, for bench/curation.py to call as a section.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from annotation.metrics import bias  # noqa: E402 (after the path is set)

LETTERS = "ابپتثجچحخدذرزژسشصضطظعغفقکگلمنوهی"
LABELS = ("entailment", "neutral", "contradiction")
BUDGET_SECONDS = 10.0


def _vocabulary(rng: random.Random, size: int = 5000) -> list[str]:
    words = set()
    while len(words) < size:
        word = "".join(rng.choice(LETTERS) for _ in range(rng.randint(2, 7)))
        if rng.random() < 0.1:
            word += "\u200c" + "".join(rng.choice(LETTERS) for _ in range(2))  # e.g. a plural with ZWNJ
        words.add(word)
    return sorted(words)


def _sentence(rng: random.Random, words: list[str], characters: int) -> list[str]:
    out, length = [], 0
    while length < characters:
        word = rng.choice(words)
        out.append(word)
        length += len(word) + 1
    return out


def make_items(n_items: int, seed: int = 7) -> list[tuple[str, str, str, str]]:
    """(premise, hypothesis, label, split) for `n_items` items."""
    rng = random.Random(seed)
    words = _vocabulary(rng)
    items = []
    for index in range(n_items):
        premise = _sentence(rng, words, 200)
        label = LABELS[index % 3]
        # Copied premise words and new words, overlapping between the classes as in FarsTail
        # (Table 2: overlap 0.67 / 0.57 / 0.40), so the models are as unsure as the paper's.
        copied = {"entailment": (3, 9), "contradiction": (2, 8), "neutral": (0, 6)}[label]
        start = rng.randrange(max(1, len(premise) - 9))
        hypothesis = premise[start : start + rng.randint(*copied)] + _sentence(rng, words, rng.randint(5, 35))
        rng.shuffle(hypothesis)
        if label == "contradiction" and rng.random() < 0.2:
            hypothesis.insert(0, "تنها")  # "only", a contradiction clue (§4.3)
        if label == "neutral" and rng.random() < 0.2:
            hypothesis.append("نیز")  # "also"
        share = rng.random()
        split = "train" if share < 0.7 else "dev" if share < 0.85 else "test"
        items.append((" ".join(premise) + ".", "«" + " ".join(hypothesis) + "»", label, split))
    return items


def run(n_items: int = 10_000) -> dict:
    """Time the analysis of `n_items` synthetic items; returns the figures."""
    items = make_items(n_items)
    started, cpu_started = time.perf_counter(), time.process_time()
    splits: dict[str, bias.Split] = {}
    for premise, hypothesis, label, split in items:
        target = splits.setdefault(split, bias.Split([], [], []))
        target.premises.append(bias.tokens(premise, fold_letters=True))
        target.hypotheses.append(bias.tokens(hypothesis, fold_letters=True))
        target.labels.append(label)
    tokenised = time.perf_counter()
    result, flags = bias.analyse(
        splits, split="train", smoothing=100.0, stoplist=bias.stopwords("fa"), label_order=LABELS
    )
    finished, cpu_finished = time.perf_counter(), time.process_time()
    return {
        "items": n_items,
        "split_sizes": {name: len(split.labels) for name, split in sorted(splits.items())},
        "tokenise_seconds": round(tokenised - started, 3),
        "analyse_seconds": round(finished - tokenised, 3),
        "total_seconds": round(finished - started, 3),
        "cpu_seconds": round(cpu_finished - cpu_started, 3),
        "budget_seconds": BUDGET_SECONDS,
        "within_budget": finished - started <= BUDGET_SECONDS,
        "accuracy": {model: result["baselines"][model]["test"]["accuracy"] for model in ("hypothesis_only", "overlap")},
        "hard": {column: summary["hard"] for column, summary in result["flags"].items()},
        "top_pmi": [(row["word"], row["label"], round(row["pmi"], 3)) for row in result["pmi"][:3]],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    figures = run(parser.parse_args().items)
    print(json.dumps(figures, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
