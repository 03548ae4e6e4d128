"""What active-learning order sorts by (docs/kinds.md "Model in the loop"): a prediction's
margin — the gap between its two most probable labels (margin sampling, Scheffer, Decomain
and Wrobel 2001) — and the share of a round's votes that its most frequent label holds."""

from collections import Counter


def margin_of(probabilities) -> float:
    """The gap between the two highest probabilities (the most probable label's alone when
    there is one): small is uncertain.

    >>> round(margin_of([0.5, 0.3, 0.2]), 3), margin_of([1.0])
    (0.2, 1.0)
    """
    top = sorted(probabilities, reverse=True)
    return float(top[0] - (top[1] if len(top) > 1 else 0.0))


def agreement_share(labels: list) -> float:
    """The most frequent label's share of the votes (None is no label); 1.0 below two votes
    (no disagreement yet).

    >>> agreement_share(["a", "b", "a"]), agreement_share(["a"]), agreement_share([])
    (0.6666666666666666, 1.0, 1.0)
    """
    labels = [label for label in labels if label is not None]
    if len(labels) < 2:
        return 1.0
    return Counter(labels).most_common(1)[0][1] / len(labels)
