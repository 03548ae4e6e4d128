"""annotation.metrics.bias: FarsTail §4.3's rules on small constructed data, checked by hand
and against independent numpy / scikit-learn computations, plus property tests."""

import math
import unicodedata
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.metrics import bias

ZWNJ = "\u200c"


# --- tokens -------------------------------------------------------------------------------------


def test_a_zwnj_joins_and_punctuation_stands_alone():
    assert bias.tokens(f"می{ZWNJ}خواهم «تنها» این را، نه آن؟") == [
        f"می{ZWNJ}خواهم",
        "«",
        "تنها",
        "»",
        "این",
        "را",
        "،",
        "نه",
        "آن",
        "؟",
    ]
    # Quotes and colons are tokens of their own (Table 4 lists " and :).
    assert bias.tokens('گفت: "بله"') == ["گفت", ":", '"', "بله", '"']
    # A ZWNJ at a word's edge joins nothing; bidi marks are not tokens.
    assert bias.tokens(f"کتاب{ZWNJ} \u200fخوب") == ["کتاب", "خوب"]
    # Folded for matching: Persian digits, and Arabic yeh/kaf when the project folds them.
    assert bias.tokens("۱۲ كتاب علي", fold_letters=True) == ["12", "کتاب", "علی"]
    assert bias.tokens("Hello World") == ["hello", "world"]


PERSIAN_TEXT = st.text(
    alphabet=st.sampled_from(list("کتابمیخوهد ") + [ZWNJ, ".", "،", "«", "»", ":", '"', "\n", "\u200f"]), max_size=40
)


@settings(max_examples=200, deadline=None)
@given(text=PERSIAN_TEXT)
def test_tokens_lose_only_spaces_and_invisible_joiners(text):
    words = bias.tokens(text)
    for token in words:
        assert token and not any(ch.isspace() for ch in token)
        assert len(token) == 1 or all(unicodedata.category(ch)[0] in "LMN" or ch == ZWNJ for ch in token)
        assert not token.startswith(ZWNJ) and not token.endswith(ZWNJ)
    visible = [ch for ch in text if not ch.isspace() and ch not in (ZWNJ, "\u200f")]
    assert [ch for ch in "".join(words) if ch != ZWNJ] == visible


# --- Table 2 ------------------------------------------------------------------------------------


def test_class_statistics_worked_by_hand():
    pairs = [
        ("the cat sat .", "the cat .", "entailment"),
        ("the dog ran", "a bird sang", "neutral"),
        ("the dog ran", "the dog flew", "neutral"),
    ]
    premises = [bias.tokens(p) for p, _, _ in pairs]
    hypotheses = [bias.tokens(h) for _, h, _ in pairs]
    table = bias.class_statistics(premises, hypotheses, [label for *_, label in pairs], frozenset({"the"}))
    # entailment: 4 and 3 tokens; every hypothesis token is in the premise; without "the"
    # and the one-character ".", {cat} ⊂ {cat, sat}.
    # Processed tokens: the distinct ones left, {cat, sat} and {cat}.
    assert table["entailment"] == {
        "items": 1,
        "premise_tokens": 4,
        "hypothesis_tokens": 3,
        "premise_processed_tokens": 2,
        "hypothesis_processed_tokens": 1,
        "overlap": 1.0,
        "processed_overlap": 1.0,
    }
    # neutral: overlaps 0 and 2/3 ({the, dog} of {the, dog, flew}); processed 0 ({bird, sang}
    # vs {dog, ran}; "a" is one character) and 1/2 ({dog} of {dog, flew}).
    neutral = table["neutral"]
    assert (neutral["items"], neutral["premise_tokens"], neutral["hypothesis_tokens"]) == (2, 3, 3)
    assert (neutral["premise_processed_tokens"], neutral["hypothesis_processed_tokens"]) == (2, 2)
    assert neutral["overlap"] == pytest.approx(1 / 3)
    assert neutral["processed_overlap"] == pytest.approx(1 / 4)
    assert "total" not in table
    # The paper's Total line: every item, whatever its class.
    total = bias.class_statistics(premises, hypotheses, [label for *_, label in pairs], frozenset({"the"}), total=True)[
        "total"
    ]
    assert total["items"] == 3
    assert total["premise_tokens"] == pytest.approx(10 / 3)
    assert total["hypothesis_processed_tokens"] == pytest.approx(5 / 3)
    assert total["overlap"] == pytest.approx((1 + 0 + 2 / 3) / 3)
    assert total["processed_overlap"] == pytest.approx((1 + 0 + 1 / 2) / 3)


WORDS = st.lists(st.sampled_from(["a", ".", "the", "of", "cat", "dog", "sat", "ran"]), max_size=12)


@settings(max_examples=200, deadline=None)
@given(pairs=st.lists(st.tuples(WORDS, WORDS, st.sampled_from(["e", "n", "c"])), min_size=1, max_size=20))
def test_processed_tokens_are_the_distinct_content_words_and_the_total_weighs_every_item(pairs):
    stoplist = frozenset({"the", "of"})
    premises, hypotheses, labels = ([p[i] for p in pairs] for i in range(3))
    table = bias.class_statistics(premises, hypotheses, labels, stoplist, total=True)
    for label, row in table.items():
        chosen = [i for i, found in enumerate(labels) if label in ("total", found)]
        assert row["items"] == len(chosen)
        for side, texts in (("premise", premises), ("hypothesis", hypotheses)):
            expected = [len({w for w in texts[i] if len(w) > 1 and w not in stoplist}) for i in chosen]
            assert row[f"{side}_processed_tokens"] == pytest.approx(sum(expected) / len(expected))
            assert row[f"{side}_processed_tokens"] <= row[f"{side}_tokens"]
    assert sum(table[label]["items"] for label in table if label != "total") == table["total"]["items"]


def test_the_corpus_line_counts_distinct_tokens_and_those_processing_leaves_out():
    texts = [["the", "cat", "sat", "."], ["the", "dog"], ["a", "cat"]]
    # {the, cat, sat, ., dog, a}: "the" is a stopword, "." and "a" one character.
    assert bias.corpus_tokens(texts, frozenset({"the"})) == {"tokens": 6, "stopwords_or_one_character": 3}
    assert bias.corpus_tokens([], frozenset()) == {"tokens": 0, "stopwords_or_one_character": 0}


def test_a_given_tokenizer_cuts_the_folded_text():
    seen = []

    def tokenizer(text):
        seen.append(text)
        return text.split("|")

    assert bias.tokens("۱۲|كتاب|Hello", fold_letters=True, tokenizer=tokenizer) == ["12", "کتاب", "hello"]
    assert seen == ["12|کتاب|hello"]


def test_a_hypothesis_of_stopwords_only_is_left_out_of_the_processed_mean():
    table = bias.class_statistics([["the", "x"], ["ab", "cd"]], [["the"], ["ab"]], ["e", "e"], frozenset({"the"}))
    assert table["e"]["overlap"] == 1.0
    assert table["e"]["processed_overlap"] == 1.0  # only the second pair counts


# --- Table 4: PMI -------------------------------------------------------------------------------


def test_pmi_worked_by_hand():
    """Hypotheses e: "x y", n: "x", n: "z"; add-1. V = 3, C = 2, N = 4, so the smoothed total
    is 4 + 1·3·2 = 10. PMI(y, e) = ln[(1+1)·10 / ((1+2)·(2+3))] = ln(4/3); PMI(x, e) =
    ln[(1+1)·10 / ((2+2)·5)] = 0; likewise z and x for n."""
    rows = bias.pmi_table([["x", "y"], ["x"], ["z"]], ["e", "n", "n"], smoothing=1, top=10)
    assert [(r["word"], r["label"], r["count"], r["total"]) for r in rows] == [
        ("y", "e", 1, 1),
        ("z", "n", 1, 1),
        ("x", "e", 1, 2),
        ("x", "n", 1, 2),
    ]
    assert [r["pmi"] for r in rows] == pytest.approx([math.log(4 / 3), math.log(4 / 3), 0.0, 0.0])


def test_pmi_reproduces_farstail_table4_from_its_counts():
    """FarsTail Table 4 prints counts and PMI: with add-100 smoothing and a vocabulary large
    against the counts, PMI ≈ ln[(n(w,c)+100)/(n(w)+300) / (1/3)]; ':' Neutral 95/158 → 0.244,
    'تنها' Contradiction 61/87 → 0.221. Three classes of equal size and a filler vocabulary
    reproduce both within 0.005."""
    filler = [[f"w{i}"] for i in range(60000)]
    hypotheses = filler + [[":"]] * 158 + [["تنها"]] * 87
    labels = ["e", "n", "c"] * 20000 + ["n"] * 95 + ["e"] * 63 + ["c"] * 61 + ["e"] * 26
    rows = {(r["word"], r["label"]): r for r in bias.pmi_table(hypotheses, labels, smoothing=100, top=3)}
    assert rows[(":", "n")]["pmi"] == pytest.approx(0.244, abs=0.005)
    assert (rows[(":", "n")]["count"], rows[(":", "n")]["total"]) == (95, 158)
    assert rows[("تنها", "c")]["pmi"] == pytest.approx(0.221, abs=0.005)


def independent_pmi(hypotheses, labels, smoothing):
    """Probabilities from a smoothed joint count table, straight from the formula."""
    vocabulary = sorted({w for h in hypotheses for w in h})
    classes = sorted(set(labels))
    table = np.full((len(vocabulary), len(classes)), float(smoothing))
    for words, label in zip(hypotheses, labels):
        for word in words:
            table[vocabulary.index(word), classes.index(label)] += 1
    joint = table / table.sum()
    pmi = np.log(joint / (joint.sum(axis=1, keepdims=True) * joint.sum(axis=0, keepdims=True)))
    return {(w, c): pmi[i, j] for i, w in enumerate(vocabulary) for j, c in enumerate(classes)}


HYPOTHESES = st.lists(st.lists(st.sampled_from("abcdefg"), min_size=1, max_size=6), min_size=2, max_size=30)


@settings(max_examples=150, deadline=None)
@given(hypotheses=HYPOTHESES, data=st.data(), smoothing=st.sampled_from([0.5, 1, 100, 1e6]), top=st.integers(1, 8))
def test_pmi_agrees_with_an_independent_computation(hypotheses, data, smoothing, top):
    labels = data.draw(st.lists(st.sampled_from(["e", "n", "c"]), min_size=len(hypotheses), max_size=len(hypotheses)))
    rows = bias.pmi_table(hypotheses, labels, smoothing=smoothing, top=top)
    expected = independent_pmi(hypotheses, labels, smoothing)
    counts = Counter((w, label) for h, label in zip(hypotheses, labels) for w in h)
    totals = Counter(w for h in hypotheses for w in h)
    assert [r["pmi"] for r in rows] == sorted((r["pmi"] for r in rows), reverse=True)
    for label in set(labels):
        mine = [r for r in rows if r["label"] == label]
        present = [w for (w, c) in counts if c == label]
        assert len(mine) == min(top, len(present))
        # the class's best words: none left out scores higher than the lowest kept
        if mine:
            floor = min(r["pmi"] for r in mine)
            assert all(expected[(w, label)] <= floor + 1e-9 for w in present if w not in {r["word"] for r in mine})
    for row in rows:
        assert row["pmi"] == pytest.approx(expected[(row["word"], row["label"])], abs=1e-9)
        assert row["count"] == counts[(row["word"], row["label"])] >= 1
        assert row["total"] == totals[row["word"]]


@pytest.mark.parametrize("smoothing", [0, -1, math.nan, math.inf])
def test_pmi_refuses_a_smoothing_that_is_not_positive_and_finite(smoothing):
    with pytest.raises(ValueError):
        bias.pmi_table([["a"]], ["e"], smoothing=smoothing)


# --- the biased models --------------------------------------------------------------------------

TEXT = st.lists(st.sampled_from(["ab", "cd", "ef", "g", "کتاب", "ها", "،", "«", "12", "x_y"]), max_size=8).flatmap(
    lambda words: st.lists(st.sampled_from([" ", ZWNJ, ". "]), min_size=len(words), max_size=len(words)).map(
        lambda gaps: "".join(w + g for w, g in zip(words, gaps))
    )
)


@settings(max_examples=150, deadline=None)
@given(pairs=st.lists(st.tuples(TEXT, TEXT), min_size=1, max_size=20))
def test_overlap_feature_is_the_cosine_of_scikit_learns_default_count_vectors(pairs):
    """Against CountVectorizer's default analyzer on the raw text and a cosine by hand."""
    from sklearn.feature_extraction.text import CountVectorizer

    analyzer = CountVectorizer().build_analyzer()
    feature = bias.overlap_feature([bias.tokens(p) for p, _ in pairs], [bias.tokens(h) for _, h in pairs])[:, 0]
    for value, (p, h) in zip(feature, pairs):
        a, b = Counter(analyzer(p)), Counter(analyzer(h))
        dot = sum(a[w] * b[w] for w in a)
        norm = math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values()))
        assert value == pytest.approx(dot / norm if norm else 0.0)
        assert -1e-12 <= value <= 1 + 1e-12


def test_the_bag_of_words_splits_at_zwnj_and_drops_punctuation_and_single_letters():
    assert bias.bag_of_words(bias.tokens(f"«کتاب{ZWNJ}ها» و ۲۰ بار.")) == ["کتاب", "ها", "20", "بار"]


def test_the_overlap_model_takes_the_words_a_split_gives_over_its_tokens():
    """A tokenizer that joins two words into one token ("x_y") would hide their overlap; a
    split that carries the text's own words is fitted and applied on those."""
    labels = ["entailment", "neutral"] * 6
    premises = [["x", "y", "zz"]] * 12
    joined = [["x_y"] if label == "entailment" else ["qq"] for label in labels]
    words = [["x", "y"] if label == "entailment" else ["qq"] for label in labels]
    plain = bias.Split(premises, joined, labels)
    np.testing.assert_allclose(
        bias.overlap_feature_of_words(*plain.overlap_words()), bias.overlap_feature(premises, joined)
    )
    given = bias.Split(premises, joined, labels, [["x", "y", "zz"]] * 12, words)
    assert given.overlap_words() == ([["x", "y", "zz"]] * 12, words)
    feature = bias.overlap_feature_of_words(*given.overlap_words())[:, 0]
    # The entailed hypotheses share two of the premise's three words; with the joined token, none.
    assert feature[0] == pytest.approx(2 / math.sqrt(2 * 3)) and feature[1] == 0
    assert bias.overlap_feature(premises, joined)[0, 0] == 0
    [predicted] = bias.overlap_predictions(given, [given])
    assert predicted == labels


def synthetic_split(seed: int, n: int) -> bias.Split:
    """Entailed hypotheses copy the premise, neutral ones share little, contradictions
    copy half and add a negation: the overlap model can learn it, the words too."""
    rng = np.random.default_rng(seed)
    vocabulary = [f"w{i}" for i in range(200)]
    premises, hypotheses, labels = [], [], []
    for i in range(n):
        premise = list(rng.choice(vocabulary, 12))
        label = ("entailment", "contradiction", "neutral")[i % 3]
        if label == "entailment":
            hypothesis = premise[:6]
        elif label == "contradiction":
            hypothesis = premise[:3] + ["not"] + list(rng.choice(vocabulary, 3))
        else:
            hypothesis = list(rng.choice(vocabulary, 6)) + ["also"]
        premises.append(premise)
        hypotheses.append(hypothesis)
        labels.append(label)
    return bias.Split(premises, hypotheses, labels)


def test_the_overlap_model_is_an_svm_on_the_cosine_alone():
    """Checked against scikit-learn's SVC on a cosine computed here with numpy."""
    from sklearn.svm import SVC

    train, test = synthetic_split(1, 90), synthetic_split(2, 30)

    def cosine(split):
        vocabulary = sorted({w for words in split.premises + split.hypotheses for w in words})
        out = []
        for p, h in zip(split.premises, split.hypotheses):
            a = np.array([p.count(w) for w in vocabulary], float)
            b = np.array([h.count(w) for w in vocabulary], float)
            out.append(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
        return np.array(out).reshape(-1, 1)

    expected = SVC().fit(cosine(train), train.labels).predict(cosine(test))
    [predicted] = bias.overlap_predictions(train, [test])
    assert predicted == list(expected)
    assert np.mean(np.array(predicted) == np.array(test.labels)) > 0.9


def test_analyse_fits_on_the_split_applies_to_dev_and_test_and_flags_test_mistakes():
    splits = {"train": synthetic_split(1, 120), "dev": synthetic_split(2, 30), "test": synthetic_split(3, 30)}
    imported = {"hard(overlap)": [True] * 30, "hard(hypothesis)": [None] * 29 + [False]}
    result, flags = bias.analyse(
        splits,
        split="train",
        smoothing=100,
        stoplist=frozenset(),
        label_order=("entailment", "contradiction", "neutral"),
        imported_flags=imported,
    )
    assert set(result) == {
        "split",
        "smoothing",
        "classes",
        "splits",
        "corpus",
        "pmi",
        "baselines",
        "flags",
        "joint_hard",
    }
    # Table 2 whole: every split with its classes and total; the corpus line over every text.
    for name, split in splits.items():
        assert result["splits"][name] == bias.class_statistics(
            split.premises, split.hypotheses, split.labels, frozenset(), total=True
        )
    assert result["splits"]["train"]["total"]["items"] == 120
    everything = [text for split in splits.values() for text in (*split.premises, *split.hypotheses)]
    assert result["corpus"] == bias.corpus_tokens(everything, frozenset())
    assert result["corpus"]["tokens"] == len(set().union(*map(set, everything)))
    # Only the last test item has both imported flags: hard(overlap), easy(hypothesis).
    assert result["joint_hard"]["imported"] == {"both": 0, "hypothesis_only": 0, "overlap_only": 1, "neither": 0}
    assert result["joint_hard"]["computed"] == bias.joint_hard(flags["hard(hypothesis)"], flags["hard(overlap)"])
    assert set(result["classes"]) == {"entailment", "contradiction", "neutral"}
    for model in ("hypothesis_only", "overlap"):
        baseline = result["baselines"][model]
        assert baseline["train_split"] == "train" and set(baseline) == {"train_split", "dev", "test"}
        assert baseline["test"]["confusion"]["labels"] == ["entailment", "contradiction", "neutral"]
        assert sum(map(sum, baseline["test"]["confusion"]["matrix"])) == 30
    [overlap_test] = bias.overlap_predictions(splits["train"], [splits["test"]])
    assert flags["hard(overlap)"] == [p != g for p, g in zip(overlap_test, splits["test"].labels)]
    summary = result["flags"]["hard(overlap)"]
    assert summary == {
        "hard": sum(flags["hard(overlap)"]),
        "items": 30,
        "agreement_with_imported": summary["hard"] / 30,
    }
    assert result["flags"]["hard(hypothesis)"]["agreement_with_imported"] in (0.0, 1.0)  # one imported flag
    # "not" marks contradictions, "also" neutral hypotheses: Table 4 finds them.
    top = {(r["word"], r["label"]) for r in result["pmi"][:2]}
    assert top == {("not", "contradiction"), ("also", "neutral")}
    # The same inputs give the same result.
    assert bias.analyse(
        splits,
        split="train",
        smoothing=100,
        stoplist=frozenset(),
        label_order=("entailment", "contradiction", "neutral"),
        imported_flags=imported,
    ) == (result, flags)


def test_analysing_the_test_split_flags_nothing():
    splits = {"dev": synthetic_split(2, 30), "test": synthetic_split(3, 30)}
    result, flags = bias.analyse(splits, split="test", smoothing=100, stoplist=frozenset())
    assert set(result["baselines"]["overlap"]) == {"train_split", "dev"}
    assert flags == {"hard(hypothesis)": [], "hard(overlap)": []}
    assert result["flags"]["hard(overlap)"] == {"hard": 0, "items": 0, "agreement_with_imported": None}


@pytest.mark.parametrize(
    ("value", "flag"),
    [
        ("1", True),
        ("0", False),
        (" 1 ", True),
        (1, True),
        (0.0, False),
        (True, True),
        ("", None),
        ("yes", None),
        (2, None),
        (None, None),
    ],
)
def test_imported_flags_are_read_as_farstail_writes_them(value, flag):
    assert bias.parse_flag(value) is flag


def test_agreement_counts_only_items_with_an_imported_flag():
    assert bias.agreement([True, False, True], [True, True, None]) == 0.5
    assert bias.agreement([True], [None]) is None


def test_the_stopword_lists_are_shipped_and_folded():
    persian, hebrew = bias.stopwords("fa"), bias.stopwords("he")
    assert "است" in persian and "که" in persian
    assert "براي" in persian and "برای" in persian  # listed with Arabic yeh; matched folded or not
    assert "של" in hebrew and "את" in hebrew
    assert bias.stopwords("en") == frozenset()
    assert bias.fold_stoplist(["علي", " ", "و\n"]) == {"علي", "علی", "و"}


@given(st.lists(st.tuples(st.sampled_from([True, False, None]), st.sampled_from([True, False, None])), max_size=60))
def test_the_joint_crosstab_counts_each_item_with_both_flags_once(pairs):
    hypothesis = [h for h, _ in pairs]
    overlap = [o for _, o in pairs]
    joint = bias.joint_hard(hypothesis, overlap)
    known = [(h, o) for h, o in pairs if h is not None and o is not None]
    if not known:
        assert joint is None
        return
    assert sum(joint.values()) == len(known)
    assert joint["both"] == sum(h and o for h, o in known)
    assert joint["neither"] == sum(not h and not o for h, o in known)
    # The crosstab's margins are each model's hard count.
    assert joint["both"] + joint["hypothesis_only"] == sum(h for h, _ in known)
    assert joint["both"] + joint["overlap_only"] == sum(o for _, o in known)
    # Swapping the models swaps the one-sided cells.
    swapped = bias.joint_hard(overlap, hypothesis)
    assert (swapped["hypothesis_only"], swapped["overlap_only"]) == (joint["overlap_only"], joint["hypothesis_only"])
