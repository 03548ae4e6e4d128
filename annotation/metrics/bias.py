"""Dataset bias of an NLI dataset (FarsTail §4.3, Tables 2 and 4; Fig. 4). Pure: no Django.

- Tokens as a Persian (or Hebrew) reader sees them, the way Hazm's word tokenizer cuts
  FarsTail: a word is a run of letters, marks and digits, and a ZWNJ (or ZWJ) between two
  such runs joins them into one word ("می‌خواهم" is one token); every other visible
  character (punctuation, quotes, «», ؟ ، :) stands alone as a token of its own. Text is
  folded for matching first (`text.fold_for_matching`) and case-folded. A caller may pass
  its own `tokenizer` (a function from the folded text to its tokens), such as Hazm's
  itself where it is installed; this module never imports one.
- Table 2: per class, mean token counts of premise and hypothesis, the mean number of
  distinct "processed" tokens of each (without stopwords and one-character tokens,
  punctuation included), and the mean share of the hypothesis's token *set* found in the
  premise's — once over all tokens, once over the processed ones; the corpus line counts
  the distinct tokens of every text and how many of them are stopwords or one character.
- Table 4: PMI(word, class) = log p(word, class) / (p(word, ·) p(·, class)) over the tokens
  of the hypotheses, with add-`smoothing` smoothing of every (word, class) count as in
  Gururangan et al. (2018) and FarsTail (add-100): with n(w, c) the occurrences of w in
  hypotheses of class c, V words and C classes,
  PMI = log [(n(w,c) + s) · (N + sVC)] / [(n(w) + sC) · (N(c) + sV)], natural log.
- Fig. 4: two biased models. Hypothesis-only: TF-IDF of the hypothesis and a logistic
  regression (FarsTail fine-tuned mBERT on the hypotheses; a linear model on TF-IDF is the
  light stand-in). Overlap-based: the cosine of the premise's and the hypothesis's
  bag-of-words count vectors as the one feature of an SVM, as in the paper (the bag of words
  is scikit-learn's default one, see `bag_of_words`).
- Easy/hard (§4.3): a test item is *hard* for a biased model when the model misclassifies it.

>>> tokens("«کتاب‌ها» را خواندم: ۲ بار.")
['«', 'کتاب\u200cها', '»', 'را', 'خواندم', ':', '2', 'بار', '.']
>>> [(r["word"], r["label"], round(r["pmi"], 4)) for r in pmi_table([["a"], ["a"], ["b"]], ["x", "x", "y"], smoothing=1)]
[('b', 'y', 0.4418), ('a', 'x', 0.2719)]
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import regex

from annotation.metrics.text import fold_for_matching

RANDOM_STATE = 0
STOPWORD_LANGUAGES = ("fa", "he")
_STOPWORDS_DIR = Path(__file__).with_name("stopwords")

# A word: letters, marks, digits (and _), joined across ZWNJ/ZWJ; else one visible character.
_WORD = r"[\p{L}\p{M}\p{N}_]+(?:[\u200c\u200d]+[\p{L}\p{M}\p{N}_]+)*"
_TOKEN = regex.compile(rf"{_WORD}|[^\s\p{{L}}\p{{M}}\p{{N}}_\p{{Cf}}]")


Tokenizer = Callable[[str], list[str]]


def reader_tokens(folded: str) -> list[str]:
    """Mashov's own tokenizer, on text already folded (see the module's docstring)."""
    return _TOKEN.findall(folded)


def tokens(text: str, *, fold_letters: bool = False, tokenizer: Tokenizer = reader_tokens) -> list[str]:
    """The tokens of `text`: folded and case-folded, then cut by `tokenizer`.

    >>> tokens("كتاب خواندم", fold_letters=True, tokenizer=str.split)
    ['کتاب', 'خواندم']
    """
    return tokenizer(fold_for_matching(text, persian_letters=fold_letters).casefold())


def fold_stoplist(words: Iterable[str]) -> frozenset[str]:
    """A stoplist as tokens are folded: each word as listed and with Arabic yeh/kaf folded to
    Persian, so it matches whichever way the project folds.

    >>> sorted(fold_stoplist(["  ", "علي"]))
    ['علي', 'علی']
    """
    words = [word.strip() for word in words if word.strip()]
    return frozenset(
        fold_for_matching(word, persian_letters=fold).casefold() for word in words for fold in (False, True)
    )


@cache
def stopwords(language: str) -> frozenset[str]:
    """The shipped stopword list of `language` (stopwords/README.md names the source),
    folded (`fold_stoplist`); empty for a language without a list."""
    if language not in STOPWORD_LANGUAGES:
        return frozenset()
    return fold_stoplist((_STOPWORDS_DIR / f"{language}.txt").read_text(encoding="utf-8").splitlines())


def content_tokens(words: Sequence[str], stoplist: frozenset[str]) -> set[str]:
    """The token set without stopwords and one-character tokens (Table 2's "processed")."""
    return {word for word in words if len(word) > 1 and word not in stoplist}


def set_overlap(hypothesis: set[str], premise: set[str]) -> float | None:
    """The share of the hypothesis's token set found in the premise's; None when empty."""
    return len(hypothesis & premise) / len(hypothesis) if hypothesis else None


def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def class_statistics(
    premises: Sequence[Sequence[str]],
    hypotheses: Sequence[Sequence[str]],
    labels: Sequence[str],
    stoplist: frozenset[str],
    *,
    total: bool = False,
) -> dict[str, dict]:
    """Table 2 per class: items, mean premise and hypothesis tokens, mean number of distinct
    processed tokens of each (`content_tokens`), mean overlap of the token sets and the same
    over the processed ones (items whose processed hypothesis is empty are left out of that
    mean). With `total`, a "total" row over every item as well (the paper's Total line).

    >>> table = class_statistics([["ab", "cd", "cd"], ["ab"]], [["cd", "x"], ["yz"]], "en", frozenset({"yz"}), total=True)
    >>> table["total"]["premise_processed_tokens"], table["total"]["hypothesis_processed_tokens"]
    (1.5, 0.5)
    """
    rows: dict[str, list] = {}
    for premise, hypothesis, label in zip(premises, hypotheses, labels, strict=True):
        rows.setdefault(label, []).append((premise, hypothesis))
    groups = {label: rows[label] for label in sorted(rows)}
    if total and rows:
        groups["total"] = [pair for label in groups for pair in groups[label]]
    table = {}
    for label, pairs in groups.items():
        processed = [(content_tokens(p, stoplist), content_tokens(h, stoplist)) for p, h in pairs]
        table[label] = {
            "items": len(pairs),
            "premise_tokens": _mean(len(p) for p, _ in pairs),
            "hypothesis_tokens": _mean(len(h) for _, h in pairs),
            "premise_processed_tokens": _mean(len(p) for p, _ in processed),
            "hypothesis_processed_tokens": _mean(len(h) for _, h in processed),
            "overlap": _mean(set_overlap(set(h), set(p)) for p, h in pairs),
            "processed_overlap": _mean(set_overlap(h, p) for p, h in processed),
        }
    return table


def corpus_tokens(texts: Iterable[Sequence[str]], stoplist: frozenset[str]) -> dict[str, int]:
    """The paper's corpus line under Table 2: the distinct tokens of all `texts` and how many
    of them are stopwords or one character long (what "processed" leaves out).

    >>> corpus_tokens([["a", "book", "the"], ["book", "."]], frozenset({"the"}))
    {'tokens': 4, 'stopwords_or_one_character': 3}
    """
    vocabulary = set().union(*map(set, texts))
    return {
        "tokens": len(vocabulary),
        "stopwords_or_one_character": len(vocabulary) - len(content_tokens(list(vocabulary), stoplist)),
    }


def pmi_table(
    hypotheses: Sequence[Sequence[str]], labels: Sequence[str], *, smoothing: float = 100.0, top: int = 10
) -> list[dict]:
    """The `top` words of each class (among those it has) by smoothed PMI(word, class) over
    hypothesis tokens, all classes together, highest first (ties by word, then class):
    Table 4's rows with the word's occurrences in the class (`count`) and in all classes
    (`total`). The first `top` rows are the dataset's top words over all classes."""
    if not math.isfinite(smoothing) or smoothing <= 0:
        raise ValueError("smoothing must be a positive finite number")
    classes = sorted(set(labels))
    per_class: dict[str, Counter[str]] = {label: Counter() for label in classes}
    for words, label in zip(hypotheses, labels, strict=True):
        per_class[label].update(words)
    vocabulary = sorted(set().union(*per_class.values())) if per_class else []
    if not vocabulary:
        return []
    counts = np.array([[per_class[label][word] for label in classes] for word in vocabulary], dtype=float)
    n_words, n_classes = counts.shape
    word_totals = counts.sum(axis=1)
    class_totals = counts.sum(axis=0)
    grand = counts.sum() + smoothing * n_words * n_classes
    pmi = (
        np.log(counts + smoothing)
        + math.log(grand)
        - np.log(word_totals + smoothing * n_classes)[:, None]
        - np.log(class_totals + smoothing * n_words)[None, :]
    )
    rows: list[dict[str, Any]] = []
    for j, label in enumerate(classes):
        present = [i for i in np.flatnonzero(counts[:, j])]
        order = sorted(present, key=lambda i: (-pmi[i, j], vocabulary[i]))[:top]
        rows.extend(
            {
                "word": vocabulary[i],
                "label": label,
                "pmi": float(pmi[i, j]),
                "count": int(counts[i, j]),
                "total": int(word_totals[i]),
            }
            for i in order
        )
    rows.sort(key=lambda row: (-row["pmi"], row["word"], row["label"]))
    return rows


def _identity(words):
    return words


# The overlap model's bag of words: scikit-learn CountVectorizer's default token pattern, words
# of two or more word characters (a ZWNJ or a combining mark splits; punctuation and
# one-letter words are left out). FarsTail's published hard(overlap) column follows it: on the
# shipped samples (fitted on Val, applied to Test) the flags agree on 59 of 61 test items,
# against 48 of 61 with the reader's tokens above.
# Python's `re` (as scikit-learn uses): its \w, unlike the `regex` module's, excludes ZWNJ.
_BOW_WORD = re.compile(r"\w\w+")


def bag_of_words(words: Sequence[str]) -> list[str]:
    """The overlap model's words from a text's tokens (the same words CountVectorizer's
    default analyzer finds in the folded text)."""
    return [word for token in words for word in _BOW_WORD.findall(token)]


def overlap_feature(premises: Sequence[Sequence[str]], hypotheses: Sequence[Sequence[str]]) -> np.ndarray:
    """Cosine of each pair's bag-of-words count vectors (0 when either side has no word),
    as a column: the overlap-based model's one feature. Takes the texts' tokens."""
    return overlap_feature_of_words(
        [bag_of_words(words) for words in premises], [bag_of_words(words) for words in hypotheses]
    )


def overlap_feature_of_words(premises: Sequence[Sequence[str]], hypotheses: Sequence[Sequence[str]]) -> np.ndarray:
    """`overlap_feature` on the texts' bags of words themselves."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.preprocessing import normalize

    if not any(premises) or not any(hypotheses):  # no word on one side: every cosine is 0
        return np.zeros((len(premises), 1))
    vectorizer = CountVectorizer(analyzer=_identity).fit([*premises, *hypotheses])
    p = normalize(vectorizer.transform(premises))
    h = normalize(vectorizer.transform(hypotheses))
    return np.asarray(p.multiply(h).sum(axis=1)).reshape(-1, 1)


@dataclass(frozen=True)
class Split:
    """One split's pairs as tokens, with gold labels."""

    premises: list[list[str]]
    hypotheses: list[list[str]]
    labels: list[str]
    # The overlap model's words of each text, where the tokens do not give them: a tokenizer
    # that joins words (Hazm joins verb parts, "شده_باشد") would make one word of two, and
    # the published hard(overlap) column follows the words of the text (`bag_of_words`; on
    # the shipped samples 59 of 61 flags agree with them, 55 with Hazm's joined tokens).
    premise_words: list[list[str]] | None = None
    hypothesis_words: list[list[str]] | None = None

    def overlap_words(self) -> tuple[Sequence[Sequence[str]], Sequence[Sequence[str]]]:
        """The bags of words of premises and hypotheses (see `premise_words`)."""
        if self.premise_words is not None and self.hypothesis_words is not None:
            return self.premise_words, self.hypothesis_words
        return [bag_of_words(p) for p in self.premises], [bag_of_words(h) for h in self.hypotheses]


def hypothesis_only_predictions(train: Split, targets: Sequence[Split]) -> list[list[str]]:
    """TF-IDF of the hypothesis tokens + logistic regression, fitted on `train`."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    if not any(train.hypotheses):  # no word to learn from: the majority class
        from sklearn.dummy import DummyClassifier

        model = DummyClassifier().fit(np.zeros((len(train.labels), 1)), train.labels)
        return [list(model.predict(np.zeros((len(t.labels), 1)))) if t.labels else [] for t in targets]
    vectorizer = TfidfVectorizer(analyzer=_identity)
    features = vectorizer.fit_transform(train.hypotheses)
    model = LogisticRegression(solver="newton-cg", max_iter=1000, random_state=RANDOM_STATE).fit(features, train.labels)
    return [list(model.predict(vectorizer.transform(t.hypotheses))) if t.labels else [] for t in targets]


def overlap_predictions(train: Split, targets: Sequence[Split]) -> list[list[str]]:
    """An SVM (RBF kernel) on the premise-hypothesis cosine alone, fitted on `train`."""
    from sklearn.svm import SVC

    model = SVC(random_state=RANDOM_STATE).fit(overlap_feature_of_words(*train.overlap_words()), train.labels)
    return [list(model.predict(overlap_feature_of_words(*t.overlap_words()))) if t.labels else [] for t in targets]


def confusion(gold: Sequence[str], predicted: Sequence[str], labels: Sequence[str]) -> dict:
    """Accuracy and the confusion matrix (rows gold, columns predicted) over `labels`."""
    from sklearn.metrics import confusion_matrix

    if not gold:
        return {
            "accuracy": None,
            "confusion": {"labels": list(labels), "rows": "gold", "columns": "predicted", "matrix": []},
        }
    matrix = confusion_matrix(gold, predicted, labels=list(labels))
    return {
        "accuracy": float(np.trace(matrix) / len(gold)),
        "confusion": {"labels": list(labels), "rows": "gold", "columns": "predicted", "matrix": matrix.tolist()},
    }


def hard_flags(gold: Sequence[str], predicted: Sequence[str]) -> list[bool]:
    """FarsTail's hard(...) column: True where the biased model got the item wrong."""
    return [g != p for g, p in zip(gold, predicted, strict=True)]


def agreement(computed: Sequence[bool], imported: Sequence[bool | None]) -> float | None:
    """The share of items with an imported flag whose computed flag equals it."""
    pairs = [(c, i) for c, i in zip(computed, imported, strict=True) if i is not None]
    return sum(c == i for c, i in pairs) / len(pairs) if pairs else None


def parse_flag(value) -> bool | None:
    """An imported hard(...) cell ("0"/"1", a number or a boolean) as a boolean; None otherwise."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip() in ("0", "1"):
        return value.strip() == "1"
    return None


FLAG_MODELS = {"hard(hypothesis)": "hypothesis_only", "hard(overlap)": "overlap"}
# Where an item keeps the flag this analysis computed, apart from the column a file brought.
COMPUTED_PREFIX = "computed_"


def computed_column(column: str) -> str:
    """The name of a computed flag: `computed_` before the file's column name.

    >>> computed_column("hard(overlap)")
    'computed_hard(overlap)'
    """
    return COMPUTED_PREFIX + column


JOINT_CELLS = ("both", "hypothesis_only", "overlap_only", "neither")


def joint_hard(hypothesis: Sequence[bool | None], overlap: Sequence[bool | None]) -> dict[str, int] | None:
    """FarsTail §4.3's crosstab of the two hard flags: how many items are hard for both
    biased models, for the hypothesis-only model only, for the overlap model only, or for
    neither. Items with an unknown flag are left out; None when no item has both.

    >>> joint_hard([True, True, False, False, None], [True, False, True, False, True])
    {'both': 1, 'hypothesis_only': 1, 'overlap_only': 1, 'neither': 1}
    """
    counts = dict.fromkeys(JOINT_CELLS, 0)
    known = 0
    for by_hypothesis, by_overlap in zip(hypothesis, overlap, strict=True):
        if by_hypothesis is None or by_overlap is None:
            continue
        known += 1
        cell = ("neither", "overlap_only", "hypothesis_only", "both")[2 * bool(by_hypothesis) + bool(by_overlap)]
        counts[cell] += 1
    return counts if known else None


TARGET_SPLITS = ("dev", "test")


def analyse(
    splits: dict[str, Split],
    *,
    split: str,
    smoothing: float,
    stoplist: frozenset[str],
    label_order: Sequence[str] = (),
    imported_flags: dict[str, Sequence[bool | None]] | None = None,
    given_flags: dict[str, Sequence[bool | None]] | None = None,
    progress=None,
) -> tuple[dict, dict[str, list[bool | None]]]:
    """The whole analysis on tokenised splits: Table 2 and Table 4 on `split`, both biased
    models fitted on it and applied to dev and test (each one that is not `split`), and the
    test split's hard flags (empty when `split` is test). Returns (result, flags by column);
    `imported_flags` (column → the test items' imported flags) gives the agreement;
    `given_flags` (column → the test items' flags from a model trained elsewhere, None where
    it has none) replace that column's computed ones."""
    from threadpoolctl import threadpool_limits  # scikit-learn's own dependency

    # One BLAS thread: the models are small, and threads that spin on a busy machine cost
    # ten times the work (measured by bench/curation_bias.py).
    with threadpool_limits(limits=1):
        return _analyse(
            splits,
            split,
            smoothing,
            stoplist,
            label_order,
            imported_flags,
            given_flags or {},
            progress or (lambda fraction: None),
        )


def _analyse(splits, split, smoothing, stoplist, label_order, imported_flags, given_flags, report):
    train = splits[split]
    empty = Split([], [], [])
    classes = class_statistics(train.premises, train.hypotheses, train.labels, stoplist)
    pmi = pmi_table(train.hypotheses, train.labels, smoothing=smoothing)
    report(0.4)
    targets = [name for name in TARGET_SPLITS if name != split]
    target_splits = [splits.get(name, empty) for name in targets]
    seen = set(train.labels).union(*(t.labels for t in target_splits))
    labels = [*label_order, *sorted(seen - set(label_order))]
    predictions = {
        "hypothesis_only": hypothesis_only_predictions(train, target_splits),
        "overlap": overlap_predictions(train, target_splits),
    }
    report(0.8)
    baselines = {
        model: {
            "train_split": split,
            **{
                name: confusion(t.labels, p, labels)
                for name, t, p in zip(targets, target_splits, predicted, strict=True)
            },
        }
        for model, predicted in predictions.items()
    }
    test = splits.get("test", empty) if "test" in targets else empty
    flags, summary = {}, {}
    for column, model in FLAG_MODELS.items():
        flags[column] = hard_flags(test.labels, predictions[model][targets.index("test")] if test.labels else [])
        if column in given_flags and test.labels:
            flags[column] = list(given_flags[column])
        imported = (imported_flags or {}).get(column) or [None] * len(flags[column])
        known = [(flag, i) for flag, i in zip(flags[column], imported, strict=True) if flag is not None]
        summary[column] = {
            "hard": sum(bool(flag) for flag, _ in known),
            "items": len(known),
            "agreement_with_imported": agreement([flag for flag, _ in known], [i for _, i in known]),
        }
    imported = imported_flags or {}
    joint = {
        "computed": joint_hard(flags["hard(hypothesis)"], flags["hard(overlap)"]),
        "imported": joint_hard(
            imported.get("hard(hypothesis)") or [None] * len(test.labels),
            imported.get("hard(overlap)") or [None] * len(test.labels),
        ),
    }
    result = {
        "split": split,
        "smoothing": smoothing,
        "classes": classes,
        # Table 2 whole: every split's classes and total, and the corpus line over all texts.
        "splits": {
            name: class_statistics(s.premises, s.hypotheses, s.labels, stoplist, total=True)
            for name, s in sorted(splits.items())
        },
        "corpus": corpus_tokens((text for s in splits.values() for text in (*s.premises, *s.hypotheses)), stoplist),
        "pmi": pmi,
        "baselines": baselines,
        "flags": summary,
        "joint_hard": joint,
    }
    return result, flags
