"""Statistics of a dataset's splits as the seeds' papers tabulate them (FarsTail Table 2:
per subset and per class, the samples and the mean tokens of each text): for each split,
a row for all its items and one per label, each with

- `items` and `share` (of the split's items: the label distribution),
- per text field: how many texts, and the tokens per text, mean, min and max,
- `vocabulary`: the distinct tokens of all the row's texts.

Pure Python; the tokenizer is the caller's (a release uses the bias analysis's tokens:
words joined across ZWNJ, and each punctuation mark, case-folded)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

ALL = None  # the `label` of a split's row for all its items


@dataclass
class _Group:
    items: int = 0
    # field → token counts of its texts
    lengths: dict[str, list[int]] = field(default_factory=dict)
    vocabulary: set[str] = field(default_factory=set)

    def add(self, tokenized: dict[str, list[list[str]]]) -> None:
        self.items += 1
        for name, token_lists in tokenized.items():
            lengths = self.lengths.setdefault(name, [])
            for tokens in token_lists:
                lengths.append(len(tokens))
                self.vocabulary.update(tokens)


def split_statistics(
    rows: Iterable[tuple[str, str | None, dict[str, list[str]]]], tokenize: Callable[[str], list[str]]
) -> list[dict]:
    """Rows of (split, label, {field: [texts]}) → one dict per split and class, splits in
    sorted order, each split's row for all items (`label` None) first, then its labels
    sorted (an item without a label counts under ""):
    {"split", "label", "items", "share", "fields": {field: {"texts", "tokens_mean",
    "tokens_min", "tokens_max"}}, "vocabulary"}. A field appears in a row when at least one
    of the row's items has a text in it; its figures are None when it has no text.

    >>> rows = [("test", "e", {"premise": ["a b c"]}), ("test", "c", {"premise": ["a d"]})]
    >>> [(r["label"], r["items"], r["share"], r["fields"]["premise"]["tokens_mean"], r["vocabulary"])
    ...  for r in split_statistics(rows, str.split)]
    [(None, 2, 1.0, 2.5, 4), ('c', 1, 0.5, 2.0, 2), ('e', 1, 0.5, 3.0, 3)]
    """
    groups: dict[str, dict[str | None, _Group]] = {}
    for split, label, texts in rows:
        tokenized = {name: [tokenize(text) for text in values] for name, values in texts.items()}
        by_label = groups.setdefault(split, {})
        by_label.setdefault(ALL, _Group()).add(tokenized)
        by_label.setdefault(label or "", _Group()).add(tokenized)
    out = []
    for split in sorted(groups):
        by_label = groups[split]
        total = by_label[ALL].items
        for label in [ALL, *sorted(key for key in by_label if key is not ALL)]:
            group = by_label[label]
            out.append(
                {
                    "split": split,
                    "label": label,
                    "items": group.items,
                    "share": group.items / total,
                    "fields": {name: _lengths(lengths) for name, lengths in group.lengths.items()},
                    "vocabulary": len(group.vocabulary),
                }
            )
    return out


def _lengths(lengths: list[int]) -> dict:
    if not lengths:
        return {"texts": 0, "tokens_mean": None, "tokens_min": None, "tokens_max": None}
    return {
        "texts": len(lengths),
        "tokens_mean": sum(lengths) / len(lengths),
        "tokens_min": min(lengths),
        "tokens_max": max(lengths),
    }
