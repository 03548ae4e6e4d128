"""Cosine similarity between many short texts without an N × N matrix, and the grouped,
leak-free split assignment built on it (FarsTail §3.2; HeQ §3.3 for QA by article). Pure:
no Django.

FarsTail §3.2: "60 more samples were removed including the instances generated from
different questions which both their premises and hypotheses had a cosine similarity higher
than 0.8" (near-duplicates), and "the samples generated from different questions which either
their premises or hypotheses had a cosine similarity higher than 0.9 were included in the same
subset" (leak-free splits), "70/15/15" by share of samples.

Texts are folded for matching (`annotation.metrics.text.fold_for_matching`, through the
project's tokenizer `annotation.metrics.overlap.words`) and turned into scikit-learn sparse
vectors, bag-of-words counts (the paper's own representation in its overlap model) or TF-IDF,
L2-normalised. Pairs above a threshold are found by a blocked sparse product over a *prefix
filter* (Bayardo et al., "Scaling up all pairs similarity search", WWW 2007): with the
features of every vector ordered rarest first, a pair whose cosine exceeds t must share a
feature in the shortest prefix whose remaining suffix has norm <= t (otherwise the product is
at most |suffix| * |y| <= t). With one global order, the rarest feature two such vectors
share lies in *both* prefixes (every shared feature after it would be in the first one's
suffix), so prefixes × prefixes gives every candidate. A cheaper bound then drops most
candidates: x·y <= |x_head| |y_head| + x_tail · y_tail (Cauchy-Schwarz on the head), the head
being the features in many rows (function words) and the tail product a second, sparse,
product over the same block; the cosine of the candidates left is computed exactly. No pair
above the threshold is missed, and no dense N × N array is ever built. Dense vectors
(sentence embeddings) are compared block by block.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from annotation.metrics.overlap import words

REPRESENTATIONS = ("bow", "tfidf", "embedding")
# Rows of the prefix matrix multiplied at once; bounds the memory of one block's product.
BLOCK_ROWS = 4096
# Candidate pairs whose exact cosine is computed at once.
PAIR_CHUNK = 200_000
# Features in more rows than this (a share of them, or a count) are the "head" of the
# head/tail bound (_split_head_tail).
HEAD_SHARE = 0.001
HEAD_ROWS = 50
# Slack on the prefix bound, so that rounding never drops a pair right above the threshold.
EPSILON = 1e-9


def tokenizer(fold_letters: bool) -> Callable[[str], list[str]]:
    """The matching tokens of a text (`overlap.words`: folded, lower-cased, punctuation
    dropped), as scikit-learn's `analyzer`."""

    def analyze(text: str) -> list[str]:
        return words(text, fold_letters=fold_letters)

    return analyze


def vectorize(texts: Sequence[str], representation: str = "bow", *, fold_letters: bool = False) -> sparse.csr_matrix:
    """L2-normalised sparse rows, one per text: `bow` counts or `tfidf` weights over the
    folded tokens. A text without tokens is a zero row (similar to nothing).

    >>> m = vectorize(["a b", "b a", "c"])
    >>> round(float((m[0] @ m[1].T).toarray()[0, 0]), 6), m.shape
    (1.0, (3, 3))
    """
    from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
    from sklearn.preprocessing import normalize

    if representation not in ("bow", "tfidf"):
        raise ValueError(f"representation must be bow or tfidf, not {representation!r}")
    if not len(texts):
        return sparse.csr_matrix((0, 0), dtype=np.float64)
    analyzer = tokenizer(fold_letters)
    vectorizer = CountVectorizer(analyzer=analyzer) if representation == "bow" else TfidfVectorizer(analyzer=analyzer)
    try:
        matrix = vectorizer.fit_transform(texts)
    except ValueError:  # no text has a token: an empty vocabulary
        return sparse.csr_matrix((len(texts), 0), dtype=np.float64)
    return normalize(matrix.astype(np.float64), norm="l2", copy=False).tocsr()


def normalize_dense(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


@dataclass(frozen=True)
class Pairs:
    """Index pairs i < j with their similarity, ordered by (i, j)."""

    i: np.ndarray
    j: np.ndarray
    similarity: np.ndarray

    def __len__(self) -> int:
        return len(self.i)


def _empty_pairs() -> Pairs:
    return Pairs(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64))


def prefix_matrix(matrix: sparse.csr_matrix, threshold: float) -> sparse.csr_matrix:
    """The prefix-filter rows of an L2-normalised non-negative matrix: for each row, its
    rarest features (fewest rows holding them; ties by column) up to the first point where
    what is left can add at most `threshold` to a product with any row (its norm, or its
    values times each feature's largest value in any row, is <= `threshold`). Any two rows with cosine > threshold share a
    feature that is in both prefixes (the rarest feature they share)."""
    matrix = matrix.tocsr()
    n_rows = matrix.shape[0]
    if matrix.nnz == 0:
        return matrix.copy()
    document_frequency = np.bincount(matrix.indices, minlength=matrix.shape[1])
    rows = np.repeat(np.arange(n_rows), np.diff(matrix.indptr))
    # Within each row, rarest first; the columns break ties so the order is one order.
    order = np.lexsort((matrix.indices, document_frequency[matrix.indices], rows))
    values = matrix.data[order]
    # Two bounds on what the suffix that starts at an entry (the entry included) can add to
    # a product: its norm (Cauchy-Schwarz), and the sum of its values times each feature's
    # largest value in any row (Bayardo's "maxweight"). The entry is needed while both
    # exceed the threshold.
    largest = np.zeros(matrix.shape[1])
    np.maximum.at(largest, matrix.indices, matrix.data)
    norm_bound = np.sqrt(np.maximum(_suffix_sums(values**2, matrix.indptr, rows), 0.0))
    weight_bound = _suffix_sums(values * largest[matrix.indices[order]], matrix.indptr, rows)
    keep = np.minimum(norm_bound, weight_bound) > threshold - EPSILON
    kept = order[keep]
    return sparse.csr_matrix(
        (matrix.data[kept], (rows[kept], matrix.indices[kept])), shape=matrix.shape, dtype=matrix.dtype
    )


def _suffix_sums(values: np.ndarray, indptr: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """For entries laid out row by row (CSR order), the sum of each entry and those after it
    in its row."""
    cumulative = np.cumsum(values)
    row_end = cumulative[indptr[1:] - 1][rows]
    return row_end - cumulative + values


def _rowwise_dot(matrix: sparse.csr_matrix, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    out = np.empty(len(i), dtype=np.float64)
    for start in range(0, len(i), PAIR_CHUNK):
        stop = start + PAIR_CHUNK
        product = matrix[i[start:stop]].multiply(matrix[j[start:stop]])
        out[start:stop] = np.asarray(product.sum(axis=1)).ravel()
    return out


def pairs_above(
    matrix, threshold: float, *, block_rows: int = BLOCK_ROWS, progress: Callable[[float], None] | None = None
) -> Pairs:
    """Every pair of rows i < j whose cosine similarity is above `threshold` (strictly),
    for L2-normalised rows: sparse non-negative ones (bow, tfidf) through the prefix filter
    and a blocked sparse product; dense ones (embeddings) block by block. Memory: one block
    of `block_rows` rows' products at a time, never N × N.

    >>> m = vectorize(["the cat sat", "the cat sat down", "a dog ran"])
    >>> p = pairs_above(m, 0.8)
    >>> list(zip(p.i.tolist(), p.j.tolist())), [round(s, 3) for s in p.similarity.tolist()]
    ([(0, 1)], [0.866])
    """
    if not 0 <= threshold < 1:
        raise ValueError("threshold must be in [0, 1)")
    n = matrix.shape[0]
    if n < 2:
        return _empty_pairs()
    if sparse.issparse(matrix):
        return _sparse_pairs_above(matrix.tocsr(), threshold, block_rows, progress)
    return _dense_pairs_above(np.asarray(matrix, dtype=np.float32), threshold, block_rows, progress)


def _split_head_tail(matrix: sparse.csr_matrix) -> tuple[np.ndarray, sparse.csr_matrix]:
    """Each row's norm over the frequent ("head") features, and the rows over the others:
    x·y <= |head x| |head y| + tail x · tail y (Cauchy-Schwarz on the head), a bound that
    drops most candidates before their exact cosine is computed. Head: features in more
    than HEAD_SHARE of the rows, or in more than HEAD_ROWS."""
    document_frequency = np.bincount(matrix.indices, minlength=matrix.shape[1])
    head = document_frequency > min(HEAD_ROWS, max(2, HEAD_SHARE * matrix.shape[0]))
    in_head = head[matrix.indices]
    rows = np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr))
    head_norm = np.sqrt(np.bincount(rows[in_head], weights=matrix.data[in_head] ** 2, minlength=matrix.shape[0]))
    tail = sparse.csr_matrix(
        (matrix.data[~in_head], (rows[~in_head], matrix.indices[~in_head])), shape=matrix.shape, dtype=matrix.dtype
    )
    return head_norm, tail


def _sparse_pairs_above(matrix, threshold, block_rows, progress) -> Pairs:
    n = matrix.shape[0]
    prefixes = prefix_matrix(matrix, threshold)
    transposed = prefixes.T.tocsc()
    head_norm, tail = _split_head_tail(matrix)
    tail_transposed = tail.T.tocsc()
    found_i, found_j, found_s = [], [], []
    for start in range(0, n, block_rows):
        pattern = prefixes[start : start + block_rows] @ transposed
        pattern.data[:] = 1.0
        # 1 + the tail product on every candidate (the tail product elsewhere is dropped).
        bounded = (pattern + (tail[start : start + block_rows] @ tail_transposed).multiply(pattern)).tocoo()
        del pattern
        rows = bounded.row.astype(np.int64) + start
        cols = bounded.col.astype(np.int64)
        upper = cols > rows  # the product is symmetric: each pair once
        bound = bounded.data - 1.0 + head_norm[rows] * head_norm[cols]
        del bounded
        keep = upper & (bound > threshold - EPSILON)
        rows, cols = rows[keep], cols[keep]
        similarity = _rowwise_dot(matrix, rows, cols)
        above = similarity > threshold
        found_i.append(rows[above])
        found_j.append(cols[above])
        found_s.append(np.minimum(similarity[above], 1.0))
        if progress is not None:
            progress(min(n, start + block_rows) / n)
    i, j, s = np.concatenate(found_i), np.concatenate(found_j), np.concatenate(found_s)
    order = np.lexsort((j, i))
    return Pairs(i[order], j[order], s[order])


def _dense_pairs_above(matrix, threshold, block_rows, progress) -> Pairs:
    n = matrix.shape[0]
    block_rows = max(1, min(block_rows, 256))  # a dense block is block_rows × n floats
    found_i, found_j, found_s = [], [], []
    for start in range(0, n, block_rows):
        block = matrix[start : start + block_rows] @ matrix[start:].T
        rows, cols = np.nonzero(block > threshold)
        rows_abs, cols_abs = rows + start, cols + start
        upper = cols_abs > rows_abs
        found_i.append(rows_abs[upper].astype(np.int64))
        found_j.append(cols_abs[upper].astype(np.int64))
        found_s.append(block[rows[upper], cols[upper]].astype(np.float64))
        if progress is not None:
            progress(min(n, start + block_rows) / n)
    i, j, s = np.concatenate(found_i), np.concatenate(found_j), np.concatenate(found_s)
    order = np.lexsort((j, i))
    return Pairs(i[order], j[order], np.minimum(s[order], 1.0))


def unique_texts(texts: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """The distinct texts in first-seen order, and for each input its index among them.

    >>> unique_texts(["a", "b", "a"])
    (['a', 'b'], array([0, 1, 0]))
    """
    index: dict[str, int] = {}
    positions = np.fromiter((index.setdefault(text, len(index)) for text in texts), dtype=np.int64, count=len(texts))
    return list(index), positions


# --- grouped splits ----------------------------------------------------------------------------


def merge_groups(n_groups: int, edges_a: Iterable[int], edges_b: Iterable[int]) -> tuple[int, np.ndarray]:
    """Union-find over groups joined by edges (a[k], b[k]): the number of components and
    each group's component (scipy.sparse.csgraph.connected_components, undirected).

    >>> merge_groups(4, [0, 2], [1, 1])
    (2, array([0, 0, 0, 1], dtype=int32))
    """
    a = np.fromiter(edges_a, dtype=np.int64)
    b = np.fromiter(edges_b, dtype=np.int64)
    graph = sparse.coo_matrix((np.ones(len(a), dtype=np.int8), (a, b)), shape=(n_groups, n_groups)).tocsr()
    return connected_components(graph, directed=False)


def check_shares(shares: dict) -> dict[str, float]:
    """Shares by split name, each in [0, 1], summing to 1 (within 1e-6); raises ValueError."""
    if not shares:
        raise ValueError("must name at least one split")
    total = sum(shares.values())
    if any(not 0 <= value <= 1 for value in shares.values()) or abs(total - 1) > 1e-6:
        raise ValueError("each share must be between 0 and 1 and the shares must sum to 1")
    return {name: float(value) for name, value in shares.items()}


def assign_splits(component_sizes: Sequence[int], shares: dict[str, float], seed: int) -> list[str]:
    """A split for each component so that the realised share of items comes close to
    `shares`: components in a seeded random order, largest first, each to the split
    furthest below its target count (ties in the order `shares` names them). Each split ends
    within one (largest) component of its target. Same inputs → same answer.

    >>> assign_splits([3, 3, 3, 1], {"train": 0.7, "dev": 0.3}, seed=1)
    ['train', 'train', 'dev', 'train']
    """
    shares = check_shares(shares)
    sizes = np.asarray(component_sizes, dtype=np.int64)
    names = list(shares)
    targets = np.array([shares[name] for name in names]) * sizes.sum()
    counts = np.zeros(len(names))
    shuffled = np.random.default_rng(seed).permutation(len(sizes))
    order = shuffled[np.argsort(-sizes[shuffled], kind="stable")]
    chosen = [""] * len(sizes)
    for component in order:
        split = int(np.argmax(targets - counts))
        counts[split] += sizes[component]
        chosen[component] = names[split]
    return chosen


# --- from texts to item pairs -------------------------------------------------------------------

Vectorizer = Callable[[Sequence[str]], "sparse.csr_matrix | np.ndarray"]


def rowwise_similarity(matrix, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Cosine of rows i[k] and j[k] for every k, for L2-normalised rows (sparse or dense)."""
    i, j = np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64)
    if sparse.issparse(matrix):
        return np.minimum(_rowwise_dot(matrix.tocsr(), i, j), 1.0)
    matrix = np.asarray(matrix)
    out = np.empty(len(i), dtype=np.float64)
    for start in range(0, len(i), PAIR_CHUNK):
        stop = start + PAIR_CHUNK
        out[start:stop] = np.einsum("ij,ij->i", matrix[i[start:stop]], matrix[j[start:stop]])
    return np.minimum(out, 1.0)


def _self_similarity(matrix) -> np.ndarray:
    """Each row's cosine with itself: 1, or 0 for a text without tokens."""
    if sparse.issparse(matrix):
        return (np.diff(matrix.tocsr().indptr) > 0).astype(np.float64)
    return (np.abs(np.asarray(matrix)).sum(axis=1) > 0).astype(np.float64)


@dataclass(frozen=True)
class TextPairs:
    """Item pairs i < j (indices into the texts given) whose texts' cosine is above the
    threshold, identical texts included; `vectors` are the distinct texts' vectors and
    `text_of` each item's row among them, for further comparisons."""

    pairs: Pairs
    vectors: object
    text_of: np.ndarray


def item_pairs_above(
    texts: Sequence[str], threshold: float, vectorizer: Vectorizer, *, progress: Callable[[float], None] | None = None
) -> TextPairs:
    """Every pair of items whose texts have cosine above `threshold`. Each distinct text is
    vectorised and compared once (pairs_above); a pair of similar texts gives every pair of
    their items, and a text several items share gives every pair of those items (similarity
    1, unless the text has no tokens).

    >>> tp = item_pairs_above(["a b", "x y", "a b"], 0.8, vectorize)
    >>> list(zip(tp.pairs.i.tolist(), tp.pairs.j.tolist(), tp.pairs.similarity.tolist()))
    [(0, 2, 1.0)]
    """
    distinct, text_of = unique_texts(texts)
    vectors = vectorizer(distinct)
    text_pairs = pairs_above(vectors, threshold, progress=progress)
    order = np.argsort(text_of, kind="stable")
    starts = np.searchsorted(text_of[order], np.arange(len(distinct) + 1))
    members = [order[starts[k] : starts[k + 1]] for k in range(len(distinct))]
    found_i, found_j, found_s = [], [], []
    alone = _self_similarity(vectors)
    for k in np.flatnonzero(np.diff(starts) > 1):
        if alone[k] > threshold:
            a, b = np.triu_indices(len(members[k]), 1)
            found_i.append(members[k][a])
            found_j.append(members[k][b])
            found_s.append(np.full(len(a), alone[k]))
    for u, v, similarity in zip(text_pairs.i.tolist(), text_pairs.j.tolist(), text_pairs.similarity.tolist()):
        a, b = np.meshgrid(members[u], members[v], indexing="ij")
        found_i.append(np.minimum(a, b).ravel())
        found_j.append(np.maximum(a, b).ravel())
        found_s.append(np.full(a.size, similarity))
    if not found_i:
        return TextPairs(_empty_pairs(), vectors, text_of)
    i, j, s = (np.concatenate(x) for x in (found_i, found_j, found_s))
    order = np.lexsort((j, i))
    return TextPairs(Pairs(i[order].astype(np.int64), j[order].astype(np.int64), s[order]), vectors, text_of)


@dataclass(frozen=True)
class NearDuplicates:
    """Item pairs a < b (indices) from different groups, with both similarities."""

    a: np.ndarray
    b: np.ndarray
    premise_similarity: np.ndarray
    hypothesis_similarity: np.ndarray


def near_duplicates(
    premises: Sequence[str],
    hypotheses: Sequence[str],
    groups: Sequence[int],
    threshold: float,
    vectorizer: Vectorizer,
    *,
    progress: Callable[[float], None] | None = None,
) -> NearDuplicates:
    """FarsTail §3.2's near-duplicates: pairs of items of different groups whose premises
    AND hypotheses both have cosine similarity above `threshold`. Premises are searched
    (item_pairs_above); only the pairs found there have their hypotheses compared.

    >>> d = near_duplicates(["a b c", "a b c", "a b d"], ["x y", "x y", "x z"], [0, 1, 2], 0.8, vectorize)
    >>> d.a.tolist(), d.b.tolist()
    ([0], [1])
    """
    group_of_item = np.asarray(groups)
    found = item_pairs_above(premises, threshold, vectorizer, progress=progress)
    i, j = found.pairs.i, found.pairs.j
    apart = group_of_item[i] != group_of_item[j]
    i, j, premise_similarity = i[apart], j[apart], found.pairs.similarity[apart]
    distinct, text_of = unique_texts(hypotheses)
    if len(i):
        hypothesis_similarity = rowwise_similarity(vectorizer(distinct), text_of[i], text_of[j])
    else:
        hypothesis_similarity = np.zeros(0)
    both = hypothesis_similarity > threshold
    return NearDuplicates(i[both], j[both], premise_similarity[both], hypothesis_similarity[both])


def leak_pairs(premises: Sequence[str], hypotheses: Sequence[str], threshold: float, vectorizer: Vectorizer) -> Pairs:
    """Item pairs whose premises OR hypotheses have cosine above `threshold` (FarsTail
    §3.2's leak rule), each once, with the higher of the two similarities."""
    by_premise = item_pairs_above(premises, threshold, vectorizer).pairs
    by_hypothesis = item_pairs_above(hypotheses, threshold, vectorizer).pairs
    n = max(len(premises), 1)
    keys = np.concatenate([by_premise.i * n + by_premise.j, by_hypothesis.i * n + by_hypothesis.j])
    similarity = np.concatenate([by_premise.similarity, by_hypothesis.similarity])
    if not len(keys):
        return _empty_pairs()
    order = np.lexsort((-similarity, keys))
    keys, similarity = keys[order], similarity[order]
    first = np.concatenate([[True], keys[1:] != keys[:-1]])
    keys, similarity = keys[first], similarity[first]
    return Pairs(keys // n, keys % n, similarity)


@dataclass(frozen=True)
class SplitPlan:
    """A split per item, with the components behind it."""

    split_of_item: list[str]
    components: int  # components of groups after merging
    merged_components: int  # of them, those holding more than one group
    largest_component: int  # items in the largest component
    counts: dict[str, int]  # items per split


def grouped_split(groups: Sequence[int], edges: Pairs | None, shares: dict[str, float], seed: int) -> SplitPlan:
    """Leak-free grouped split: items of one group stay together; groups that an edge
    (item pair) joins are merged (union-find); then components go to splits by realised
    share of items (assign_splits). `groups` are group indices 0..G-1 per item.

    >>> plan = grouped_split([0, 0, 1, 2], Pairs(np.array([1]), np.array([2]), np.array([1.0])), {"a": 0.5, "b": 0.5}, 0)
    >>> plan.split_of_item, plan.components, plan.largest_component
    (['a', 'a', 'a', 'b'], 2, 3)
    """
    group_of_item = np.asarray(groups, dtype=np.int64)
    n_groups = int(group_of_item.max()) + 1 if len(group_of_item) else 0
    a = group_of_item[edges.i] if edges is not None else np.zeros(0, np.int64)
    b = group_of_item[edges.j] if edges is not None else np.zeros(0, np.int64)
    n_components, component_of_group = merge_groups(n_groups, a, b)
    component_of_item = component_of_group[group_of_item]
    sizes = np.bincount(component_of_item, minlength=n_components)
    groups_per_component = np.bincount(component_of_group, minlength=n_components)
    chosen = assign_splits(sizes.tolist(), shares, seed)
    split_of_item = [chosen[c] for c in component_of_item.tolist()]
    counts = {name: 0 for name in shares}
    for name, size in zip(chosen, sizes.tolist()):
        counts[name] += size
    return SplitPlan(
        split_of_item=split_of_item,
        components=int(n_components),
        merged_components=int((groups_per_component > 1).sum()),
        largest_component=int(sizes.max()) if len(sizes) else 0,
        counts=counts,
    )
