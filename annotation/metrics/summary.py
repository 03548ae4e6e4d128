"""Intrinsic measures of a summary against its article, and score correlations.

Source: Paz-Argaman et al., "HeSum: a Novel Dataset for Abstractive Text
Summarization in Hebrew" (hesum.txt), section 3.3 and Table 2 (intrinsic
measures), section 4 (correlation of human and automatic scores).

Tokens are whitespace-separated words (``str.split()``), as in HeSum's
word-based rows of Tables 2 and 5: no lower-casing, no punctuation
splitting, no normalisation, so Hebrew and Persian words are kept whole
(ZWNJ is not whitespace) and "בית," differs from "בית". Callers that want
the project's matching folding apply it to both texts first.

Every measure is a fraction in [0, 1] (the paper's tables print it times
100), or None when it is undefined for the input.

>>> novel_ngrams("שר האוצר התפטר", "שר האוצר הודיע היום", 1)
0.3333333333333333
>>> compression_ratio("שר האוצר התפטר", "שר האוצר הודיע היום על התפטרותו")
0.5
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = [
    "novel_ngrams",
    "compression_ratio",
    "redundancy",
    "correlations",
    "sentence_count",
    "TextProfile",
    "ROUGE_TYPES",
    "RougeScorer",
    "BertScorer",
]


def _ngrams(tokens: list[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def _check_n(n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")


def novel_ngrams(summary: str, article: str, n: int) -> Optional[float]:
    """Share of the summary's distinct n-grams that never occur in the article.

    HeSum section 3.3 (i), "Abstractness", after Narayan et al. (2018);
    Table 2 reports it for n = 1..4. Counted over distinct n-grams (types),
    as HeSum reads its own figure: "approximately half of its unique
    vocabulary ... unseen in the original articles". The texts are not split
    into sentences, so an n-gram may run across a sentence end.

    Returns None when the summary has fewer than ``n`` words. Raises
    ValueError unless ``n`` is a positive int.

    Summary "a b c a", article "a b d": unigram types {a, b, c}, one novel
    (1/3); bigram types {ab, bc, ca}, two novel (2/3).

    >>> novel_ngrams("a b c a", "a b d", 2)
    0.6666666666666666
    """
    _check_n(n)
    summary_ngrams = set(_ngrams(summary.split(), n))
    if not summary_ngrams:
        return None
    article_ngrams = set(_ngrams(article.split(), n))
    return len(summary_ngrams - article_ngrams) / len(summary_ngrams)


def compression_ratio(summary: str, article: str) -> Optional[float]:
    """Word-level compression ``CMP_w(S, A) = 1 - |S| / |A|``.

    HeSum section 3.3 (ii), after Bommasani and Cardie (2020); |S| and |A|
    are word counts. The prose there says "the word count in summary divided
    by the word count in article", but the formula, and Table 2's values
    around 90-95 %, are one minus that ratio: higher means more compression.
    A summary longer than its article gives a negative value.

    Returns None when the article has no words.

    >>> compression_ratio("a b", "a b c d e f g h")
    0.75
    """
    article_words = len(article.split())
    if article_words == 0:
        return None
    return 1 - len(summary.split()) / article_words


def redundancy(summary: str, n: int) -> Optional[float]:
    """Share of repeated n-gram occurrences in a summary.

    HeSum section 3.3 (iii), citing Hasan et al. (2021)::

        RED(S) = sum over i of (f_i - 1) / sum over i of f_i

    where i runs over the m distinct n-grams of S and f_i >= 1 is how often
    n-gram i occurs. Equivalently 1 - distinct / total. Table 2 reports
    n = 1 and n = 2.

    Returns None when the summary has fewer than ``n`` words. Raises
    ValueError unless ``n`` is a positive int.

    "a b a b a": unigrams a x3, b x2, so (2 + 1) / 5 = 0.6; bigrams
    ab x2, ba x2, so (1 + 1) / 4 = 0.5.

    >>> redundancy("a b a b a", 1)
    0.6
    >>> redundancy("a b a b a", 2)
    0.5
    """
    _check_n(n)
    counts = Counter(_ngrams(summary.split(), n))
    total = sum(counts.values())
    if total == 0:
        return None
    return sum(f - 1 for f in counts.values()) / total


def correlations(human_scores: ArrayLike, automatic_scores: ArrayLike) -> dict[str, Optional[float]]:
    """Pearson r and Kendall tau between paired human and automatic scores.

    HeSum section 4 correlates human ratings with ROUGE using Pearson's
    coefficient and Kendall's tau, with p-values. Computed by
    ``scipy.stats.pearsonr`` and ``scipy.stats.kendalltau`` (tau-b, which
    corrects for ties: Likert ratings tie often; exact p-value for small
    samples without ties, otherwise the normal approximation). p-values are
    two-sided.

    Returns ``{"n", "pearson_r", "pearson_p", "kendall_tau", "kendall_p"}``.
    Every value but ``n`` is None when there are fewer than 3 pairs (Pearson's
    p-value needs at least one degree of freedom) or when either list is
    constant (the coefficients are undefined). Raises ValueError when the
    lists differ in length.

    Human [1, 2, 3, 4] against automatic [1, 3, 2, 4]: r = 4 / 5 = 0.8 with
    t = 0.8 * sqrt(2 / 0.36) on 2 degrees of freedom, p = 0.2; 5 concordant
    and 1 discordant pair, tau = 4 / 6, exact p = 2 * 4/24.

    >>> result = correlations([1, 2, 3, 4], [1, 3, 2, 4])
    >>> round(result["pearson_r"], 6), round(result["pearson_p"], 6)
    (0.8, 0.2)
    >>> round(result["kendall_tau"], 6), round(result["kendall_p"], 6)
    (0.666667, 0.333333)
    """
    # Arrays, not lists: a large report correlates millions of pairs.
    import numpy as np

    human = np.asarray(human_scores, dtype=float)
    automatic = np.asarray(automatic_scores, dtype=float)
    if len(human) != len(automatic):
        raise ValueError(f"{len(human)} human scores but {len(automatic)} automatic scores")
    result: dict[str, Optional[float]] = {
        "n": len(human),
        "pearson_r": None,
        "pearson_p": None,
        "kendall_tau": None,
        "kendall_p": None,
    }
    if len(human) < 3 or human.min() == human.max() or automatic.min() == automatic.max():
        return result
    # Imported here: scipy.stats costs every process that imports it ~55 MiB (see intervals.py).
    from scipy import stats

    pearson = stats.pearsonr(human, automatic)
    kendall = stats.kendalltau(human, automatic)
    result.update(
        pearson_r=_plain(pearson.statistic),
        pearson_p=_plain(pearson.pvalue),
        kendall_tau=_plain(kendall.statistic),
        kendall_p=_plain(kendall.pvalue),
    )
    return result


def _plain(value: float) -> Optional[float]:
    # numpy floats out, plain floats (or None for NaN, e.g. from NaN input)
    # back, so results serialise to JSON as they are.
    value = float(value)
    return None if math.isnan(value) else value


# A sentence ends at a run of terminal marks followed by whitespace or the end of the text:
# the full stop, "!", "?", the Arabic-script question mark "؟", Hebrew sof pasuq "׃" and the
# ellipsis. Requiring the whitespace after the mark keeps decimals ("1.2", "70.7") inside their
# sentence.
# A direction mark (LRM, RLM, ALM) between the mark and the space is part of the ending.
_SENTENCE_END = re.compile(r"[.!?؟׃…]+[\u200e\u200f\u061c]*(?=\s|$)")


def sentence_count(text: str) -> int:
    """Number of sentences in `text`: the non-blank stretches between sentence ends
    (`_SENTENCE_END`); a text without a terminal mark is one sentence, a text of nothing but
    spaces and marks none.

    HeSum Table 1 gives document lengths; Mashov reports them in words and sentences.
    No trained sentence splitter covers Hebrew and Persian, and news sentences end in
    these marks, so the rule is the punctuation itself.

    >>> sentence_count("הממשלה התכנסה. השר הודיע על התפטרותו! מה הלאה?")
    3
    >>> sentence_count("المبلغ 1.2 میلیارد بود")
    1
    >>> sentence_count("   ")
    0
    """
    return sum(1 for part in _SENTENCE_END.split(text) if part.strip())


class TextProfile:
    """Running figures of a collection of texts, for HeSum Table 1's linguistic profile:
    how many texts, the vocabulary size (distinct whitespace tokens, as the module's other
    measures count words), and the mean length in words and in sentences. Texts are added
    one at a time, so a corpus is read once without being held in memory; only its
    vocabulary is kept.

    Punctuation stays on its word, so "b." and "b" are two types:

    >>> profile = TextProfile()
    >>> profile.add("a b. c a")
    >>> profile.add("b d")
    >>> profile.figures()
    {'texts': 2, 'vocabulary': 5, 'words_mean': 3.0, 'sentences_mean': 1.5}
    """

    def __init__(self) -> None:
        self.texts = 0
        self.words = 0
        self.sentences = 0
        self.vocabulary: set[str] = set()

    def add(self, text: str) -> None:
        tokens = text.split()
        self.texts += 1
        self.words += len(tokens)
        self.sentences += sentence_count(text)
        self.vocabulary.update(tokens)

    def figures(self) -> dict:
        """{"texts", "vocabulary", "words_mean", "sentences_mean"}; the means are None
        without texts."""
        return {
            "texts": self.texts,
            "vocabulary": len(self.vocabulary),
            "words_mean": self.words / self.texts if self.texts else None,
            "sentences_mean": self.sentences / self.texts if self.texts else None,
        }


ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")


class RougeScorer:
    """ROUGE-1, ROUGE-2 and ROUGE-L F-measures of a summary against a reference, as HeSum
    Table 3 reports them: with the multilingual ROUGE of the XL-Sum authors (the
    `multilingual-rouge` package, a port of their scorer onto Google's rouge-score), whose
    tokenisation keeps Hebrew and Persian letters. Google's own tokeniser keeps only a-z and
    0-9, so every Hebrew summary would score 0. Lower-cased, punctuation removed by Unicode
    category, letters and digits split apart ("ה-19" gives "ה" and "19"), no stemming (there
    is no Hebrew or Persian stemmer in the package).

    Built once per job: importing the package takes seconds.

    >>> scorer = RougeScorer()
    >>> scores = scorer.score("שר האוצר התפטר אתמול.", "שר האוצר הודיע כי התפטר")
    >>> round(scores["rouge1"], 4), round(scores["rouge2"], 4)
    (0.6667, 0.2857)
    """

    def __init__(self) -> None:
        from multilingual_rouge import rouge_scorer, tokenization_wrapper

        self._scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=False)
        self._tokenizer = rouge_scorer.MultiTokenizer()
        self._tokenize = tokenization_wrapper.tokenize

    def score(self, summary: str, reference: str) -> dict[str, Optional[float]]:
        """{"rouge1", "rouge2", "rougeL"}: F-measures in [0, 1]; all None when the summary or
        the reference has no word left after tokenisation (nothing to compare)."""
        if not (self._tokenize(summary, None, self._tokenizer) and self._tokenize(reference, None, self._tokenizer)):
            return dict.fromkeys(ROUGE_TYPES)
        scores = self._scorer.score(reference, summary)
        return {name: float(scores[name].fmeasure) for name in ROUGE_TYPES}


class BertScorer:
    """BERTScore F1 (Zhang et al., 2020) of candidate texts against references, with the
    `bert-score` package over a local model directory in the Hugging Face layout. HeSum
    Table 3 scores each system summary against the reference this way, and Table 1 gives the
    article-summary similarity "only on article-summary pairs within the model's 512-token
    limit" (HeSum section 3.2): `fits` tells which texts are within it. The paper's backbone
    was AlephBERT; the model is whatever directory the caller names, and `name` says which.

    `layers` is the hidden layer whose embeddings are matched (bert-score's `num_layers`);
    None takes the model's last. Built once per job: loading the model takes seconds.
    """

    MAX_TOKENS = 512

    def __init__(self, model_path: str, layers: int | None = None) -> None:
        from bert_score import BERTScorer as _Scorer
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(model_path)
        self.layers = layers or config.num_hidden_layers
        self.name = f"{model_path.rstrip('/').rsplit('/', 1)[-1]} (layer {self.layers})"
        self._scorer = _Scorer(model_type=model_path, num_layers=self.layers, lang=None)
        self._tokenizer = self._scorer._tokenizer
        self._limit = min(self.MAX_TOKENS, int(getattr(self._tokenizer, "model_max_length", self.MAX_TOKENS)))

    def fits(self, text: str) -> bool:
        """Whether `text`, with the model's special tokens, is within the model's limit."""
        return len(self._tokenizer.encode(text, add_special_tokens=True)) <= self._limit

    def f1(self, candidates: Sequence[str], references: Sequence[str]) -> list[Optional[float]]:
        """BERTScore F1 of each candidate against the reference at the same position, in
        [-1, 1] (in practice well above 0); None where either text is blank, which
        bert-score would score as an empty sequence."""
        if len(candidates) != len(references):
            raise ValueError("candidates and references must have the same length")
        scored = [i for i, (c, r) in enumerate(zip(candidates, references)) if c.strip() and r.strip()]
        result: list[Optional[float]] = [None] * len(candidates)
        if scored:
            _p, _r, f1 = self._scorer.score([candidates[i] for i in scored], [references[i] for i in scored])
            for i, value in zip(scored, f1.tolist()):
                result[i] = float(value)
        return result
