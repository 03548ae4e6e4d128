"""The built-in model of the model in the loop: TF-IDF over character n-grams and logistic
regression (scikit-learn). Character n-grams within word boundaries suit Hebrew and
Persian, whose prefixes and suffixes (the article, prepositions, pronoun suffixes) glue to
the word, so that the forms of one word share most of their n-grams.

An item is a tuple of texts (a premise and a hypothesis, two phrases). One vectorizer is
fitted on every text of the training items; an item's features are each text's vector
side by side, and for a pair also their element-wise product: the n-grams both texts share
(what word-overlap baselines read, FarsTail §4.3).

>>> texts = [("the cat sat", "a cat sat"), ("the cat sat", "no dog ran"), ("dogs run", "a dog runs"), ("dogs run", "cats sleep")]
>>> model = fit(texts, [0, 1, 0, 1], n_labels=2)
>>> probabilities = predict_proba(model, [("the dog ran", "a dog ran")])
>>> probabilities.shape, bool(abs(probabilities.sum() - 1) < 1e-9)
((1, 2), True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

NGRAMS = (2, 4)
MAX_FEATURES = 200_000
# Inverse regularisation; the usual 1.0 fits small pools' noise less than larger values.
C = 1.0


@dataclass
class Baseline:
    vectorizer: TfidfVectorizer
    classifier: LogisticRegression
    n_labels: int


def _features(vectorizer: TfidfVectorizer, texts: list[tuple[str, ...]]):
    width = len(texts[0])
    columns = [vectorizer.transform([item[i] for item in texts]) for i in range(width)]
    if width == 2:
        columns.append(columns[0].multiply(columns[1]))
    return sparse.hstack(columns).tocsr()


def fit(texts: list[tuple[str, ...]], labels: list[int], *, n_labels: int, seed: int = 0) -> Baseline:
    """Train on `texts` (equal-length tuples) and their label indexes in range(n_labels);
    at least two distinct labels."""
    vectorizer = TfidfVectorizer(
        analyzer="char_wb", ngram_range=NGRAMS, sublinear_tf=True, max_features=MAX_FEATURES, lowercase=True
    )
    vectorizer.fit([text for item in texts for text in item])
    classifier = LogisticRegression(C=C, max_iter=2000, random_state=seed)
    classifier.fit(_features(vectorizer, texts), np.asarray(labels))
    return Baseline(vectorizer, classifier, n_labels)


def predict_proba(model: Baseline, texts: list[tuple[str, ...]]) -> np.ndarray:
    """(len(texts), n_labels) probabilities; a label the training set lacked gets 0."""
    out = np.zeros((len(texts), model.n_labels))
    if texts:
        out[:, model.classifier.classes_] = model.classifier.predict_proba(_features(model.vectorizer, texts))
    return out
