"""Benchmark: the release stage on synthetic NLI data. Prints figures; a script, not a test.

Sections (run all, or name some with --sections):
- curation: near-duplicates (FarsTail §3.2: premise AND hypothesis cosine > 0.8, bag-of-words)
  and a leak-free grouped split (premise OR hypothesis cosine > 0.9 merges groups; 70/15/15)
  on 100,000 items, through annotation.metrics.similarity — the computation the "duplicates"
  and "splits" jobs run once the items are loaded.

- bias: the bias analysis (FarsTail §4.3) on 10,000 items (--bias-items), bench/curation_bias.py.
- scoring: validating and scoring 100,000 predictions with every figure's bootstrap interval
  (--scoring-items), bench/curation_scoring.py.

A section is a function taking the parsed arguments and returning {figure: value}; main()
times each, with the peak RSS.

The text is generated, not taken from any dataset: Persian-letter pseudo-words, 45 % of the
tokens drawn from 150 function words (Zipf, s = 0.8) and the rest from 200,000 content words
(Zipf–Mandelbrot, s = 1, q = 10), premises of ~200 characters shared by the 3 items of a
group (FarsTail's shape), hypotheses of ~60 characters. Planted near-duplicates: copies of
items in groups of their own, one word of the premise dropped and the hypothesis kept.

    .venv/bin/python bench/curation.py [--items 100000] [--planted 200] [--sections curation bias scoring]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from annotation.metrics.similarity import grouped_split, leak_pairs, near_duplicates, vectorize  # noqa: E402

LETTERS = list("ابپتثجچحخدذرزژسشصضطظعغفقکگلمنوهی")


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kilobytes on Linux


def vocabulary(rng, size: int, low: int, high: int) -> np.ndarray:
    lengths = rng.integers(low, high + 1, size)
    letters = rng.choice(len(LETTERS), int(lengths.sum()))
    words, start = [], 0
    for length in lengths.tolist():
        words.append("".join(LETTERS[k] for k in letters[start : start + length]))
        start += length
    return np.array(list(dict.fromkeys(words)), dtype=object)


def synthetic_nli(items: int, planted: int, seed: int = 0):
    """premises, hypotheses, group per item, and the (original, copy) index pairs planted."""
    rng = np.random.default_rng(seed)
    function_words = vocabulary(rng, 150, 1, 3)
    content_words = vocabulary(rng, 200_000, 4, 7)
    function_p = 1 / np.arange(1, len(function_words) + 1) ** 0.8
    content_p = 1 / (np.arange(1, len(content_words) + 1) + 10.0)

    def sentences(count: int, length: int) -> list[str]:
        chosen_function = function_words[
            rng.choice(len(function_words), (count, length), p=function_p / function_p.sum())
        ]
        chosen_content = content_words[rng.choice(len(content_words), (count, length), p=content_p / content_p.sum())]
        pick = rng.random((count, length)) < 0.45
        return [" ".join(row) for row in np.where(pick, chosen_function, chosen_content)]

    ordinary = items - planted
    groups_n = -(-ordinary // 3)
    group_premises = sentences(groups_n, 40)
    premises = [group_premises[k // 3] for k in range(ordinary)]
    hypotheses = sentences(ordinary, 11)
    groups = [k // 3 for k in range(ordinary)]
    originals = rng.choice(ordinary, planted, replace=False)
    copies = []
    for number, original in enumerate(originals.tolist()):
        words = premises[original].split()
        drop = int(rng.integers(len(words)))
        premises.append(" ".join(words[:drop] + words[drop + 1 :]))
        hypotheses.append(hypotheses[original])
        groups.append(groups_n + number)
        copies.append((original, ordinary + number))
    return premises, hypotheses, groups, copies


def section_curation(args) -> dict:
    started = time.perf_counter()
    premises, hypotheses, groups, copies = synthetic_nli(args.items, args.planted)
    generated = time.perf_counter()
    rss_after_generation = peak_rss_mb()
    cpu_before = cpu_seconds()
    found = near_duplicates(premises, hypotheses, groups, 0.8, vectorize)
    deduplicated = time.perf_counter()
    edges = leak_pairs(premises, hypotheses, 0.9, vectorize)
    plan = grouped_split(groups, edges, {"train": 0.7, "dev": 0.15, "test": 0.15}, seed=1)
    split = time.perf_counter()
    pairs = set(zip(found.a.tolist(), found.b.tolist()))
    return {
        "items": len(premises),
        "mean premise characters": round(sum(map(len, premises)) / len(premises), 1),
        "mean hypothesis characters": round(sum(map(len, hypotheses)) / len(hypotheses), 1),
        "generate text (s)": round(generated - started, 2),
        "peak RSS after generating (MB)": round(rss_after_generation),
        "near-duplicates (s)": round(deduplicated - generated, 2),
        "near-duplicate pairs": len(pairs),
        "planted pairs found": sum(pair in pairs for pair in copies),
        "planted pairs": len(copies),
        "leak pairs (> 0.9)": len(edges),
        "split (s)": round(split - deduplicated, 2),
        "components": plan.components,
        "largest component (items)": plan.largest_component,
        "realised shares": {name: round(count / len(premises), 4) for name, count in plan.counts.items()},
        "near-duplicates + split (s)": round(split - generated, 2),
        "near-duplicates + split, CPU time of the process (s)": round(cpu_seconds() - cpu_before, 2),
    }


def section_bias(args) -> dict:
    from curation_bias import run

    return run(args.bias_items)


def section_scoring(args) -> dict:
    from curation_scoring import run

    return run(args.scoring_items)


SECTIONS = {"curation": section_curation, "bias": section_bias, "scoring": section_scoring}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--planted", type=int, default=200, help="near-duplicate copies planted")
    parser.add_argument("--bias-items", type=int, default=10_000, help="items of the bias section")
    parser.add_argument("--scoring-items", type=int, default=100_000, help="predictions of the scoring section")
    parser.add_argument("--sections", nargs="*", choices=sorted(SECTIONS), default=list(SECTIONS))
    args = parser.parse_args(argv)
    for name in args.sections:
        started = time.perf_counter()
        figures = SECTIONS[name](args)
        print(f"== {name}")
        for key, value in figures.items():
            print(f"  {key}: {value}")
        print(f"  section time (s): {time.perf_counter() - started:.2f}")
        print(f"  load average (1 min) at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        print(f"  peak RSS of the process so far (MB): {peak_rss_mb():.0f}")


if __name__ == "__main__":
    main()
