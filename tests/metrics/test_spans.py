"""Tests for annotation.metrics.spans (HeQ section 4, appendix B)."""

import doctest
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from annotation.metrics import spans
from annotation.metrics.spans import exact_match, f1, normalize_squad, tlnls

PROJECT_ROOT = Path(__file__).resolve().parents[2]
METRICS = (exact_match, f1, tlnls)

ZWNJ = "\u200c"
RLM = "\u200f"


# HeQ Table 3: span pairs that F1 scores 0 and TLNLS scores high. The first
# row prints as "MusicaNeto-⊐" in the text extraction: "⊐" is the Hebrew
# prefix ב mangled by PDF extraction. After the hyphen is deleted it is one
# 11-character token against 10, so 1 - 1/11 = 0.909 either way round.
@pytest.mark.parametrize(
    ("span_1", "span_2", "expected_tlnls"),
    [
        ("MusicaNeto-ב", "MusicaNeto", 0.909),
        ("ב-MusicaNeto", "MusicaNeto", 0.909),
        ("לסלברימאים", "סלברימאים", 0.9),
        ("המוזיאון", "מוזיאון", 0.875),
        ("ביתינו", "בית", 0.5),
    ],
)
def test_heq_table_3(span_1, span_2, expected_tlnls):
    assert round(tlnls(span_1, [span_2]), 3) == expected_tlnls
    # The metric is symmetric for single tokens, so the table's unordered
    # pairs hold in both directions.
    assert round(tlnls(span_2, [span_1]), 3) == expected_tlnls
    assert f1(span_1, [span_2]) == 0.0
    assert exact_match(span_1, [span_2]) == 0.0


def test_heq_section_4_f1_example():
    # Gold "in the house", prediction "house": SQuAD normalisation drops
    # "the", leaving precision 1 and recall 1/2.
    assert f1("house", ["in the house"]) == pytest.approx(2 / 3)


def test_dates_fall_back_to_f1():
    # HeQ section 4.2: "1948" vs "1921" would be 0.5 under Levenshtein.
    assert tlnls("1948", ["1921"]) == 0.0
    assert tlnls("1948", ["1948"]) == 1.0
    # "בשנת 1948" is 4 digits of 9 characters: not half, so TLNLS applies;
    # the word matches (1) and the years share two of four digits (0.5).
    assert tlnls("בשנת 1948", ["בשנת 1921"]) == pytest.approx((1 + 0.5) / 2)


def test_digit_share_counts_raw_characters():
    # mrl_eval counts digits in the raw text: "12 ב" is 2 of 4 characters,
    # exactly half, so F1 is used: one token of two in common.
    assert tlnls("12 ב", ["13 ב"]) == pytest.approx(0.5)
    # "12 בתים" is 2 of 7: TLNLS, where "12" vs "13" earns 0.5.
    assert tlnls("12 בתים", ["13 בתים"]) == pytest.approx((0.5 + 1) / 2)


class TestRuleChosenPerQuestion:
    """mrl_eval ``tlnls_calc`` chooses EM, F1 or TLNLS once per question, then
    takes the best gold. The expected values are worked by hand from that rule."""

    def test_one_number_like_gold_switches_every_gold_to_f1(self):
        # "1948" is all digits, so F1 for both golds. Gold 1: one common token
        # of 2 predicted, P = 1/2, R = 1 -> 2/3. Gold 2 "בשנת 1949": one common
        # token, P = R = 1/2 -> 1/2. Best 2/3. Chosen per gold, gold 2 would get
        # TLNLS (1 + 3/4) / 2 = 0.875 instead.
        assert tlnls("בשנת 1948", ["1948", "בשנת 1949"]) == pytest.approx(2 / 3)

    def test_f1_can_also_score_higher_than_tlnls(self):
        # "12" switches to F1: "house house" vs "house" is P = 1/2, R = 1 -> 2/3,
        # where TLNLS would give 1 / max(1, 2) = 1/2.
        assert tlnls("house house", ["house", "12"]) == pytest.approx(2 / 3)
        assert tlnls("house house", ["house"]) == pytest.approx(1 / 2)

    def test_number_like_prediction_uses_f1(self):
        # P = 1, R = 1/2 -> 2/3 (TLNLS would give 1/2).
        assert tlnls("1948", ["בשנת 1948"]) == pytest.approx(2 / 3)

    def test_a_no_answer_gold_makes_it_exact_match_of_the_raw_texts(self):
        # Any gold "no answer": exact match, without SQuAD normalisation.
        assert tlnls("בית", [None, "בית"]) == 1.0
        assert tlnls("בית.", ["בית", None]) == 0.0
        assert tlnls("בבית", ["בית", None]) == 0.0
        assert tlnls("בבית", ["בית"]) == pytest.approx(0.75)


@pytest.mark.parametrize(
    ("prediction", "golds", "expected"),
    [
        # Extra predicted tokens are penalised through max(|G|, |P|).
        ("בית גדול", ["בית"], 0.5),
        # Best gold wins.
        ("בבית", ["מכונית", "בית"], 0.75),
        # Punctuation is deleted and case folded before comparing.
        ("MusicaNeto!", ["musicaneto"], 1.0),
    ],
)
def test_tlnls_table(prediction, golds, expected):
    assert tlnls(prediction, golds) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("prediction", "golds", "em", "f1_score"),
    [
        ("The house.", ["house"], 1.0, 1.0),
        ("big house", ["house"], 0.0, 2 / 3),
        ("house house", ["house"], 0.0, 2 / 3),  # overlap counted as multiset
        ("בבית", ["בית"], 0.0, 0.0),
        ("x", ["y", "x"], 1.0, 1.0),
    ],
)
def test_exact_match_and_f1_table(prediction, golds, em, f1_score):
    assert exact_match(prediction, golds) == em
    assert f1(prediction, golds) == pytest.approx(f1_score)


def test_normalize_squad():
    assert normalize_squad("The  House-Party!") == "houseparty"
    assert normalize_squad("An apple a day") == "apple day"
    # Only ASCII punctuation goes: maqaf U+05BE and Hebrew geresh stay.
    assert normalize_squad('בית\u05bes"ל') == "בית\u05besל"


class TestNoAnswer:
    @pytest.mark.parametrize("metric", METRICS)
    def test_none_matches_none(self, metric):
        assert metric(None, [None]) == 1.0
        assert metric(None, ["בית", None]) == 1.0

    @pytest.mark.parametrize("metric", METRICS)
    def test_none_against_a_string_is_zero(self, metric):
        assert metric(None, ["בית"]) == 0.0
        assert metric("בית", [None]) == 0.0
        # The empty string is an answer, not "no answer".
        assert metric(None, [""]) == 0.0
        assert metric("", [None]) == 0.0

    @pytest.mark.parametrize("metric", METRICS)
    def test_string_still_scored_against_string_golds(self, metric):
        assert metric("בית", [None, "בית"]) == 1.0


class TestEmptyAfterNormalisation:
    @pytest.mark.parametrize("metric", METRICS)
    def test_empty_prediction_against_a_word(self, metric):
        for prediction in ("", "   ", "?!", "the", "A."):
            assert metric(prediction, ["בית"]) == 0.0

    @pytest.mark.parametrize("metric", METRICS)
    def test_empty_against_empty(self, metric):
        # SQuAD 2.0: two answers with no tokens agree.
        assert metric("the", ["a"]) == 1.0
        assert metric("?!", [""]) == 1.0


class TestHebrewAndPersian:
    def test_niqqud_is_a_character(self):
        # "בַּיִת" carries 3 niqqud marks (dagesh, patah, hiriq): 6 code
        # points against 3. No folding happens here: callers fold first.
        pointed = "ב\u05bc\u05b7י\u05b4ת"
        assert len(pointed) == 6
        assert exact_match(pointed, ["בית"]) == 0.0
        assert tlnls(pointed, ["בית"]) == pytest.approx(1 - 3 / 6)
        assert tlnls(pointed, [pointed]) == 1.0

    def test_zwnj_does_not_split_a_persian_word(self):
        word = "می" + ZWNJ + "خواهم"
        assert normalize_squad(word).split() == [word]
        # One deleted ZWNJ out of 8 code points.
        assert tlnls("میخواهم", [word]) == pytest.approx(1 - 1 / 8)
        assert f1("میخواهم", [word]) == 0.0

    def test_rlm_is_kept(self):
        assert exact_match("בית" + RLM, ["בית"]) == 0.0
        assert tlnls("בית" + RLM, ["בית"]) == pytest.approx(0.75)


@pytest.mark.parametrize("metric", METRICS)
def test_golds_must_be_a_non_empty_list(metric):
    with pytest.raises(ValueError):
        metric("בית", [])
    with pytest.raises(ValueError):
        metric("בית", "בית")


# Property tests. The alphabet mixes Hebrew letters with niqqud, Persian with
# ZWNJ, Latin (so articles appear), digits, punctuation and whitespace.
_ALPHABET = "אבגדהוזחטיכלמנסעפצקרשת\u05b0\u05b4\u05b7\u05bcپچژگیکهكيى۱۲٣" + ZWNJ + RLM + "abeht0123456789 .,-!?'"
texts = st.text(alphabet=_ALPHABET, max_size=20)
answers = st.one_of(st.none(), texts)
gold_lists = st.lists(answers, min_size=1, max_size=4)


@given(prediction=answers, golds=gold_lists)
def test_scores_are_in_unit_interval(prediction, golds):
    for metric in METRICS:
        assert 0.0 <= metric(prediction, golds) <= 1.0


@given(text=texts.filter(lambda t: any(ch.isalnum() for ch in t)))
def test_identical_spans_score_one(text):
    for metric in METRICS:
        assert metric(text, [text]) == 1.0


@given(prediction=answers, golds=gold_lists, extra=answers)
def test_adding_a_gold_never_lowers_em_or_f1(prediction, golds, extra):
    # Not TLNLS: a new gold can switch the whole question to F1 or to exact
    # match (TestRuleChosenPerQuestion).
    for metric in (exact_match, f1):
        assert metric(prediction, golds + [extra]) >= metric(prediction, golds)


@given(prediction=answers, golds=gold_lists)
def test_tlnls_is_the_best_gold_under_one_rule(prediction, golds):
    if prediction is None or None in golds:
        assert tlnls(prediction, golds) == max(1.0 if gold == prediction else 0.0 for gold in golds)
        return
    texts_ = [prediction, *golds]
    if any(sum(ch.isdigit() for ch in text) >= len(text) / 2 for text in texts_):
        assert tlnls(prediction, golds) == f1(prediction, golds)
    else:
        assert tlnls(prediction, golds) == max(tlnls(prediction, [gold]) for gold in golds)


@given(prediction=texts, golds=st.lists(texts, min_size=1, max_size=4))
def test_exact_match_implies_full_scores(prediction, golds):
    if exact_match(prediction, golds) == 1.0:
        assert f1(prediction, golds) == 1.0
        assert tlnls(prediction, golds) == 1.0


def test_docstring_examples():
    failures, _ = doctest.testmod(spans)
    assert failures == 0


def test_module_does_not_import_django():
    code = (
        "import sys, annotation.metrics.spans; "
        "assert not any(m == 'django' or m.startswith('django.') for m in sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, check=True)


class TestLetterVariants:
    """`fold_letters`: Arabic yeh/kaf as Persian, digit forms as ASCII (docs/text.md "Matching")."""

    ARABIC, PERSIAN = "\u0643\u062a\u0627\u0628 \u0639\u0644\u064a", "\u06a9\u062a\u0627\u0628 \u0639\u0644\u06cc"

    @pytest.mark.parametrize("metric", (exact_match, f1))
    def test_kept_apart_unless_asked(self, metric):
        assert metric(self.ARABIC, [self.PERSIAN]) == 0.0
        assert metric(self.ARABIC, [self.PERSIAN], fold_letters=True) == 1.0

    @pytest.mark.parametrize("metric", METRICS)
    def test_persian_and_arabic_indic_digits(self, metric):
        assert metric("\u06f1\u06f3\u06f9\u06f9", ["\u0661\u0663\u0669\u0669"]) == 0.0
        assert metric("\u06f1\u06f3\u06f9\u06f9", ["\u0661\u0663\u0669\u0669"], fold_letters=True) == 1.0

    def test_tlnls_counts_each_variant_as_an_edit_without_folding(self):
        # "كتاب"/"کتاب": 1 edit of 4 letters; "علي"/"علی": 1 of 3.
        assert tlnls(self.ARABIC, [self.PERSIAN]) == pytest.approx((3 / 4 + 2 / 3) / 2)
        assert tlnls(self.ARABIC, [self.PERSIAN], fold_letters=True) == 1.0

    @given(prediction=answers, golds=gold_lists)
    def test_folding_equals_scoring_folded_text(self, prediction, golds):
        from annotation.metrics.text import fold_for_matching

        def fold(text):
            return None if text is None else fold_for_matching(text, persian_letters=True)

        for metric in METRICS:
            assert metric(prediction, golds, fold_letters=True) == metric(fold(prediction), [fold(g) for g in golds])
