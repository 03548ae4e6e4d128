"""Tests for annotation.metrics.summary (HeSum section 3.3, Table 2; section 4).

Expected values are worked out by hand in the comments.
"""

import doctest
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.metrics import summary
from annotation.metrics.summary import (
    compression_ratio,
    correlations,
    novel_ngrams,
    redundancy,
)

PROJECT_ROOT = Path(__file__).resolve().parents[2]

# Eight words; "שר האוצר" appears twice.
ARTICLE = "שר האוצר הודיע היום כי שר האוצר יתפטר"
# Four words: "שר האוצר" copied, "התפטר" and "אתמול" new.
SUMMARY = "שר האוצר התפטר אתמול"


class TestNovelNgrams:
    @pytest.mark.parametrize(
        ("n", "expected"),
        [
            # {שר, האוצר, התפטר, אתמול}: the last two are unseen -> 2/4.
            (1, 2 / 4),
            # {שר האוצר, האוצר התפטר, התפטר אתמול}: only the first is in the
            # article -> 2/3.
            (2, 2 / 3),
            # Neither trigram is in the article -> 2/2.
            (3, 1.0),
            # One 4-gram, unseen.
            (4, 1.0),
        ],
    )
    def test_hebrew_example(self, n, expected):
        assert novel_ngrams(SUMMARY, ARTICLE, n) == pytest.approx(expected)

    def test_counts_distinct_ngrams(self):
        # Types {a, b, c}, c novel -> 1/3. Counting occurrences (a, b, c, a)
        # would give 1/4.
        assert novel_ngrams("a b c a", "a b d", 1) == pytest.approx(1 / 3)
        assert novel_ngrams("a b c a", "a b d", 2) == pytest.approx(2 / 3)

    def test_whitespace_tokens_are_compared_exactly(self):
        # Punctuation stays attached, and case is kept.
        assert novel_ngrams("בית,", "בית", 1) == 1.0
        assert novel_ngrams("House", "house", 1) == 1.0
        # ZWNJ joins a Persian word: it is one token, found in the article.
        word = "می\u200cخواهم"
        assert novel_ngrams(word, f"من {word} بروم", 1) == 0.0
        # Any run of whitespace separates, newlines included.
        assert novel_ngrams("a\nb", "a  b", 2) == 0.0

    def test_extractive_summary_has_nothing_novel(self):
        for n in range(1, 5):
            assert novel_ngrams("הודיע היום כי שר", ARTICLE, n) == 0.0

    @pytest.mark.parametrize(("text", "n"), [("", 1), ("   ", 1), ("a b c", 4)])
    def test_no_ngrams_is_none(self, text, n):
        assert novel_ngrams(text, ARTICLE, n) is None

    def test_empty_article_makes_everything_novel(self):
        assert novel_ngrams("a b", "", 1) == 1.0

    @pytest.mark.parametrize("n", [0, -1, 1.5, True])
    def test_bad_n(self, n):
        with pytest.raises(ValueError):
            novel_ngrams("a b", "a b", n)


class TestCompressionRatio:
    def test_hebrew_example(self):
        # 1 - 4/8.
        assert compression_ratio(SUMMARY, ARTICLE) == pytest.approx(0.5)

    def test_is_one_minus_the_word_ratio(self):
        # HeSum's formula CMP = 1 - |S|/|A|, not |S|/|A| as its prose says:
        # a 2-word summary of a 40-word article compresses 95 %.
        assert compression_ratio("a b", " ".join(["w"] * 40)) == pytest.approx(0.95)
        assert compression_ratio("", "a b") == 1.0
        assert compression_ratio("a b", "a b") == 0.0

    def test_longer_summary_is_negative(self):
        assert compression_ratio("a b c", "a b") == pytest.approx(-0.5)

    def test_empty_article_is_none(self):
        assert compression_ratio("a b", "") is None
        assert compression_ratio("a b", " \n ") is None


class TestRedundancy:
    @pytest.mark.parametrize(
        ("text", "n", "expected"),
        [
            # a x3, b x2: (2 + 1) / 5.
            ("a b a b a", 1, 0.6),
            # ab x2, ba x2: (1 + 1) / 4.
            ("a b a b a", 2, 0.5),
            # aba x2, bab x1: 1 / 3.
            ("a b a b a", 3, 1 / 3),
            # No repeats.
            (SUMMARY, 1, 0.0),
            (SUMMARY, 2, 0.0),
            # mT5-style repetition (HeSum Table 4): "שר האוצר" three times;
            # unigrams שר x3, האוצר x3: (2 + 2) / 6.
            ("שר האוצר שר האוצר שר האוצר", 1, 4 / 6),
            # Bigrams "שר האוצר" x3, "האוצר שר" x2: (2 + 1) / 5.
            ("שר האוצר שר האוצר שר האוצר", 2, 3 / 5),
            # One word repeated k times: (k - 1) / k.
            ("x x x x", 1, 3 / 4),
        ],
    )
    def test_table(self, text, n, expected):
        assert redundancy(text, n) == pytest.approx(expected)

    @pytest.mark.parametrize(("text", "n"), [("", 1), ("a", 2)])
    def test_no_ngrams_is_none(self, text, n):
        assert redundancy(text, n) is None

    def test_bad_n(self):
        with pytest.raises(ValueError):
            redundancy("a b", 0)


class TestCorrelations:
    def test_hand_computed(self):
        # x = [1, 2, 3, 4], y = [1, 3, 2, 4]; both have mean 2.5.
        # Deviations dx = [-1.5, -.5, .5, 1.5], dy = [-1.5, .5, -.5, 1.5]:
        # sum dx*dy = 4, sum dx^2 = sum dy^2 = 5, r = 0.8.
        # t = r * sqrt((n - 2) / (1 - r^2)) = 0.8 * sqrt(2 / 0.36); with 2
        # degrees of freedom the two-sided p = 1 - t / sqrt(2 + t^2) = 0.2.
        # Pairs: 5 concordant, 1 discordant (2,3), tau = 4/6. Exact p: 4 of
        # the 24 orderings have at most 1 discordant pair, two-sided 8/24.
        result = correlations([1, 2, 3, 4], [1, 3, 2, 4])
        assert result["n"] == 4
        assert result["pearson_r"] == pytest.approx(0.8)
        assert result["pearson_p"] == pytest.approx(0.2)
        assert result["kendall_tau"] == pytest.approx(2 / 3)
        assert result["kendall_p"] == pytest.approx(1 / 3)

    def test_perfect_negative(self):
        # Like HeSum's finding for ROUGE: higher automatic, lower human.
        result = correlations([5, 4, 3, 2, 1], [0.1, 0.2, 0.3, 0.4, 0.5])
        assert result["pearson_r"] == pytest.approx(-1.0)
        assert result["kendall_tau"] == pytest.approx(-1.0)
        # Exact Kendall p: 1 of 120 orderings each way, 2/120.
        assert result["kendall_p"] == pytest.approx(2 / 120)

    def test_ties_use_tau_b(self):
        # x = [1, 1, 2, 2], y = [1, 2, 3, 4]: pairs (1,2) and (3,4) tie in x
        # only, the other 4 are concordant. tau-b = 4 / sqrt((6-2) * 6).
        result = correlations([1, 1, 2, 2], [1, 2, 3, 4])
        assert result["kendall_tau"] == pytest.approx(4 / 24**0.5)

    def test_values_are_plain_floats(self):
        result = correlations([1, 2, 3, 4], [1, 3, 2, 4])
        for key in ("pearson_r", "pearson_p", "kendall_tau", "kendall_p"):
            assert type(result[key]) is float

    @pytest.mark.parametrize(
        ("human", "automatic"),
        [
            ([], []),
            ([1], [2]),
            ([1, 2], [2, 1]),
            # Constant input: correlation undefined.
            ([3, 3, 3, 3], [1, 2, 3, 4]),
            ([1, 2, 3, 4], [0.5, 0.5, 0.5, 0.5]),
        ],
    )
    def test_undefined_is_none(self, human, automatic):
        result = correlations(human, automatic)
        assert result == {
            "n": len(human),
            "pearson_r": None,
            "pearson_p": None,
            "kendall_tau": None,
            "kendall_p": None,
        }

    def test_lengths_must_agree(self):
        with pytest.raises(ValueError):
            correlations([1, 2, 3], [1, 2])


def test_docstring_examples():
    failures, _ = doctest.testmod(summary)
    assert failures == 0


def test_module_does_not_import_django():
    code = (
        "import sys, annotation.metrics.summary; "
        "assert not any(m == 'django' or m.startswith('django.') for m in sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, check=True)


class TestSentenceCount:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("", 0),
            ("  \n ", 0),
            # No terminal mark: one sentence.
            ("שר האוצר התפטר", 1),
            # Full stop, exclamation and question marks, each followed by a space or the end.
            ("א ב. ג ד! ה ו?", 3),
            # A run of marks ends one sentence, not two.
            ("מה?! באמת...", 2),
            # Decimals in Latin and Persian digits stay inside their sentence.
            ("رشد ۱۲٫۵ درصد و 1.2 میلیارد بود.", 1),
            ("הגובה 70.7 מטר. והרוחב 12 מטר.", 2),
            # A right-to-left mark after the full stop still ends the sentence.
            ("שר האוצר התפטר.\u200f הממשלה התכנסה", 2),
            # Marks alone make no sentence.
            ("?! ...", 0),
            # The Arabic-script question mark and Hebrew sof pasuq end sentences.
            ("آیا آمد؟ بله آمد.", 2),
            ("בראשית ברא׃ והארץ היתה׃", 2),
        ],
    )
    def test_counts(self, text, expected):
        assert summary.sentence_count(text) == expected


class TestTextProfile:
    def test_empty_profile_has_no_means(self):
        assert summary.TextProfile().figures() == {
            "texts": 0,
            "vocabulary": 0,
            "words_mean": None,
            "sentences_mean": None,
        }

    def test_figures_of_two_texts(self):
        profile = summary.TextProfile()
        profile.add(ARTICLE)  # 8 words, 6 types ("שר האוצר" twice), one sentence
        profile.add(SUMMARY)  # 4 words, 2 of them new types ("התפטר", "אתמול")
        assert profile.figures() == {"texts": 2, "vocabulary": 8, "words_mean": 6.0, "sentences_mean": 1.0}

    # No deadline: the counts are quick, but a loaded CI machine makes any timing limit flaky.
    @settings(deadline=None)
    @given(st.lists(st.text(alphabet="אבג .?!\n", max_size=40), max_size=12))
    def test_figures_equal_a_direct_count(self, texts):
        profile = summary.TextProfile()
        for text in texts:
            profile.add(text)
        figures = profile.figures()
        assert figures["texts"] == len(texts)
        assert figures["vocabulary"] == len({token for text in texts for token in text.split()})
        if texts:
            assert figures["words_mean"] == pytest.approx(sum(len(t.split()) for t in texts) / len(texts))
            assert 0 <= figures["sentences_mean"] <= figures["words_mean"]

    @settings(deadline=None)
    @given(st.lists(st.text(alphabet="אבג .?!", max_size=30), min_size=1, max_size=8))
    def test_sentences_never_exceed_words_and_only_words_make_one(self, parts):
        text = " ".join(parts)
        count = summary.sentence_count(text)
        assert 0 <= count <= len(text.split())
        # No sentence exactly when the text holds nothing but spaces and terminal marks.
        assert (count == 0) == (not re.sub(r"[.!?\s]", "", text))
