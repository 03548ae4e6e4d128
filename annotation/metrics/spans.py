"""Answer-span scores for extractive QA: exact match, token F1 and TLNLS.

Source: Cohen et al., "HeQ: a Large and Diverse Hebrew Reading Comprehension
Benchmark" (heq.txt), section 4 and appendix B, as implemented in
google-research/mrl_eval ``evaluation/metrics_utils.py`` (2025).

Every public function takes one prediction and one or more gold answers and
returns a float in [0, 1]: the best score over the golds. Strings are compared
after SQuAD normalisation (:func:`normalize_squad`); lengths and edit
distances count code points of the normalised text. With ``fold_letters``
both sides first go through ``annotation.metrics.text.fold_for_matching``
with Persian letters (Arabic yeh/kaf as Persian, Arabic-Indic and Persian
digits as ASCII; docs/text.md "Matching"); without it no folding happens, so
scores stay comparable with published HeQ numbers.

"No answer" (an unanswerable question) is ``None``, never ``""``. mrl_eval
writes it as a fixed sentence (``NULL_ANSWER_TEXT`` in
``datasets/heq/heq_lib.py``) and scores it as SQuAD 2.0 does (footnote 3:
"abstaining receives a score of 1, and any other response gets 0, for both
exact match and F1"). Mashov follows that rule for all three metrics:
``None`` against ``None`` scores 1, ``None`` against any string scores 0.
For EM and F1 this differs from mrl_eval only where its sentence would share
tokens with a real answer (its F1 would give partial credit to a prediction
that repeats words of the sentence); ``None`` has no words. For TLNLS the
rule is mrl_eval's own: when the prediction or ANY gold is "no answer", the
whole question is scored by exact match of the texts as given (see
:func:`tlnls`).

>>> round(tlnls("המוזיאון", ["מוזיאון"]), 3)
0.875
>>> f1("המוזיאון", ["מוזיאון"])
0.0
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Optional

from rapidfuzz.distance import Levenshtein

from annotation.metrics.text import fold_for_matching

__all__ = ["exact_match", "f1", "tlnls", "normalize_squad"]

Answer = Optional[str]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)


def normalize_squad(text: str) -> str:
    """Return ``text`` as the official SQuAD script compares it.

    Lower-case, delete ASCII punctuation (``string.punctuation`` only: Hebrew
    maqaf U+05BE, geresh U+05F3 and Persian punctuation are kept), replace the
    English articles a/an/the by a space, collapse whitespace. Niqqud, ZWNJ
    (U+200C) and LRM/RLM are not whitespace and are kept, so a Persian word
    written with ZWNJ stays one token.

    >>> normalize_squad("The  House-Party!")
    'houseparty'
    """
    text = text.lower()
    # Delete before removing articles, as mrl_eval does: "the-house" becomes
    # "thehouse", which then keeps its "the".
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _tokens(text: str) -> list[str]:
    return normalize_squad(text).split()


def _is_half_or_more_digits(text: str) -> bool:
    # mrl_eval tests the raw text, not the normalised one, and counts every
    # Unicode digit (Arabic-Indic ones included) against len(text), spaces
    # and punctuation included. The empty string counts as "half digits".
    return sum(ch.isdigit() for ch in text) >= len(text) / 2


def _fold(answer: Answer, fold_letters: bool) -> Answer:
    if answer is None or not fold_letters:
        return answer
    return fold_for_matching(answer, persian_letters=True)


def _exact_match_pair(gold: str, prediction: str) -> float:
    return 1.0 if normalize_squad(gold) == normalize_squad(prediction) else 0.0


def _f1_pair(gold: str, prediction: str) -> float:
    gold_tokens = _tokens(gold)
    prediction_tokens = _tokens(prediction)
    if not gold_tokens or not prediction_tokens:
        # Official SQuAD 2.0 rule. mrl_eval returns 0 when both are empty,
        # which would score the identical answers "the" and "the" 0.
        return 1.0 if gold_tokens == prediction_tokens else 0.0
    common = Counter(gold_tokens) & Counter(prediction_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(prediction_tokens)
    recall = same / len(gold_tokens)
    # No 1e-13 in the denominator (mrl_eval has one): same > 0 here, and
    # without it identical answers score exactly 1.
    return 2 * precision * recall / (precision + recall)


def _levenshtein_similarity(a: str, b: str) -> float:
    # HeQ appendix B.1.1: ls = 1 - lev / max(|a|, |b|). Tokens are never
    # empty (they come from str.split), so the denominator is positive.
    return 1.0 - Levenshtein.distance(a, b) / max(len(a), len(b))


def _tlnls_pair(gold: str, prediction: str) -> float:
    gold_tokens = _tokens(gold)
    prediction_tokens = _tokens(prediction)
    if not gold_tokens or not prediction_tokens:
        # mrl_eval: 0 when one side is empty; it divides by zero when both
        # are, where we follow the SQuAD 2.0 rule used by F1.
        return 1.0 if gold_tokens == prediction_tokens else 0.0
    total = sum(max(_levenshtein_similarity(g, p) for p in prediction_tokens) for g in gold_tokens)
    # Dividing by the larger count penalises extra predicted tokens as well
    # as missing gold ones (HeQ equation 1).
    return total / max(len(gold_tokens), len(prediction_tokens))


def _check_golds(golds: Sequence[Answer]) -> None:
    if isinstance(golds, str) or not golds:
        # A bare string would be iterated letter by letter.
        raise ValueError("golds must be a non-empty list of answers")


def _max_over_golds(
    prediction: Answer,
    golds: Sequence[Answer],
    pair_score: Callable[[str, str], float],
    fold_letters: bool,
) -> float:
    _check_golds(golds)
    prediction = _fold(prediction, fold_letters)
    best = 0.0
    for gold in golds:
        gold = _fold(gold, fold_letters)
        if prediction is None or gold is None:
            score = 1.0 if prediction is None and gold is None else 0.0
        else:
            score = pair_score(gold, prediction)
        best = max(best, score)
    return best


def exact_match(prediction: Answer, golds: Sequence[Answer], *, fold_letters: bool = False) -> float:
    """Exact match after SQuAD normalisation, best over ``golds`` (HeQ section 4).

    Returns 1.0 or 0.0. ``None`` means "no answer" (see the module docstring).
    Raises ValueError when ``golds`` is empty.

    >>> exact_match("The house.", ["house", "בית"])
    1.0
    >>> exact_match(None, ["בבית"])
    0.0
    >>> exact_match("كتاب علي", ["کتاب علی"]), exact_match("كتاب علي", ["کتاب علی"], fold_letters=True)
    (0.0, 1.0)
    """
    return _max_over_golds(prediction, golds, _exact_match_pair, fold_letters)


def f1(prediction: Answer, golds: Sequence[Answer], *, fold_letters: bool = False) -> float:
    """Token F1 over whitespace tokens, best over ``golds`` (HeQ appendix B.1).

    Tokens come from :func:`normalize_squad`; overlap is counted as a
    multiset, as in the SQuAD script. When either side normalises to no
    tokens (e.g. "the", "?!"), the pair scores 1 if both do, else 0 (SQuAD
    2.0). Raises ValueError when ``golds`` is empty.

    HeQ section 4: gold "in the house", prediction "house": the article is
    dropped, precision 1, recall 1/2, F1 = 2/3.

    >>> round(f1("house", ["in the house"]), 3)
    0.667
    """
    return _max_over_golds(prediction, golds, _f1_pair, fold_letters)


def tlnls(prediction: Answer, golds: Sequence[Answer], *, fold_letters: bool = False) -> float:
    """Token-Level Normalized Levenshtein Similarity, best over ``golds``.

    HeQ section 4.2, equation 1, with ``ls`` from appendix B.1.1::

        TLNLS(P, G) = 1 / max(|G|, |P|) * sum over g in G of max over p in P
                      of (1 - lev(g, p) / max(|g|, |p|))

    P and G are the whitespace tokens of the normalised prediction and gold;
    lengths and edit distances count code points (a niqqud mark is one).
    The pair score is chosen ONCE PER QUESTION, as mrl_eval's ``tlnls_calc``
    does (``evaluation/metrics_utils.py``), and then maximised over the golds:

    1. the prediction or any gold is ``None`` ("no answer"): exact match of
       the texts as given (not SQuAD-normalised, as in mrl_eval), ``None``
       equal only to ``None``;
    2. else the raw prediction or ANY raw gold is at least half digits: token
       F1 for every gold ("Dates and numbers", section 4.2);
    3. else TLNLS for every gold.

    So one number-like gold switches the other golds to F1 too, and adding a
    gold can lower the score: the published HeQ figures are computed this
    way. Raises ValueError when ``golds`` is empty.

    HeQ Table 3: "המוזיאון" (8 letters) vs "מוזיאון" (7): one deletion,
    1 - 1/8 = 0.875, while F1 is 0.

    >>> tlnls("המוזיאון", ["מוזיאון"])
    0.875
    >>> tlnls("1948", ["1921"])
    0.0
    >>> round(tlnls("בשנת 1948", ["1948", "בשנת 1949"]), 3)  # F1 for both golds
    0.667
    """
    _check_golds(golds)
    prediction = _fold(prediction, fold_letters)
    golds = [_fold(gold, fold_letters) for gold in golds]
    texts = [gold for gold in golds if gold is not None]
    if prediction is None or len(texts) < len(golds):
        return max(1.0 if gold == prediction else 0.0 for gold in golds)
    if _is_half_or_more_digits(prediction) or any(_is_half_or_more_digits(gold) for gold in texts):
        # "1948" vs "1921" would get 0.5 from Levenshtein (section 4.2).
        pair_score = _f1_pair
    else:
        pair_score = _tlnls_pair
    return max(pair_score(gold, prediction) for gold in texts)
