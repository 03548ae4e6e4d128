"""Benchmark: scoring 100,000 NLI predictions (the goal: within 5 s on this machine).

A script, not a test; no database. Synthetic gold — three labels, each item with FarsTail's
two bias flags (hard(hypothesis), hard(overlap); some unknown) — and a model right on about
70 % of items, written as a JSONL predictions file. Timed as the evaluation job runs it
(annotation/release/evaluation.py): read and validate the file against the gold, build the
per-item arrays (NliScorer), and the seeded 1,000-resample bootstrap of every figure
(accuracy, macro F1, per-class P/R/F1, Table 5's easy/hard accuracies) plus scikit-learn's
point figures. The gold query from PostgreSQL is not part of it, nor scikit-learn's first
import (once per worker process; reported apart).

bench/curation.py (the release stage's benchmark) calls `run` as a named section.

    .venv/bin/python bench/curation_scoring.py [--items 100000]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LABELS = ("entailment", "neutral", "contradiction")
LIMIT_SECONDS = 5.0


def _setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    import django

    django.setup()


def synthetic(n: int, seed: int = 7) -> tuple[dict, bytes]:
    """(gold as NliScorer.gold gives it, a JSONL predictions file)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    gold_labels = rng.integers(0, 3, n)
    right = rng.random(n) < 0.7
    predicted = np.where(right, gold_labels, (gold_labels + rng.integers(1, 3, n)) % 3)
    flags = rng.choice(np.array([True, False, None], dtype=object), size=(n, 2), p=[0.3, 0.6, 0.1])
    gold = {f"Test-word-{i}": (int(gold_labels[i]), flags[i, 0], flags[i, 1]) for i in range(n)}
    lines = "".join(json.dumps({"id": f"Test-word-{i}", "prediction": LABELS[predicted[i]]}) + "\n" for i in range(n))
    return gold, lines.encode("utf-8")


def run(n: int = 100_000) -> dict:
    """Time the scoring of `n` predictions; returns the figures of the run (seconds per step,
    total, peak resident memory) and whether it held the 5 s limit."""
    _setup_django()
    from annotation.kinds.nli.evaluation import NliScorer
    from annotation.release.evaluation import score
    from annotation.release.predictions import read_predictions, validate_predictions

    gold, data = synthetic(n)
    scorer = NliScorer(LABELS)
    steps: dict[str, float] = {}
    # A worker imports scikit-learn once per process, not once per evaluation: timed apart.
    mark = time.perf_counter()
    import sklearn.metrics  # noqa: F401

    imports = time.perf_counter() - mark
    start, cpu_start = time.perf_counter(), time.process_time()
    predictions = validate_predictions(
        read_predictions(data, "predictions.jsonl", "", scorer), gold, scorer, "split 'test'"
    )
    steps["read_and_validate"] = time.perf_counter() - start
    mark = time.perf_counter()
    figures, _arrays = score(scorer, None, gold, predictions)
    steps["arrays_bootstrap_and_point"] = time.perf_counter() - mark
    total = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    return {
        "items": n,
        "file_bytes": len(data),
        "seconds": {name: round(value, 3) for name, value in steps.items()},
        "total_seconds": round(total, 3),
        # CPU time of this process: what the run costs when other work shares the cores.
        "total_cpu_seconds": round(cpu, 3),
        "first_import_of_scikit_learn_seconds": round(imports, 3),
        "limit_seconds": LIMIT_SECONDS,
        "within_limit": total <= LIMIT_SECONDS,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "accuracy": figures["accuracy"],
        "macro_f1": figures["macro_f1"],
        "subsets": figures["subsets"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    args = parser.parse_args()
    result = run(args.items)
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return 0 if result["within_limit"] else 1


if __name__ == "__main__":
    sys.exit(main())
