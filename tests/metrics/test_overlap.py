"""annotation.metrics.overlap: question-paragraph overlap, answer positions and WH-words
(HeQ §3.1, appendix C). No database. The WH-word test runs over the HeQ sample, whose
"WH Question" field is the reference."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from annotation.metrics.overlap import (
    HEBREW_WH_WORDS,
    overlap_histogram,
    position_bucket,
    position_histogram,
    question_overlap,
    wh_diversity,
    wh_word,
    words,
)

HEQ = Path(__file__).resolve().parents[3] / "shared" / "data" / "heq"
ZWNJ = "\u200c"


def test_imports_no_django():
    code = "import sys, annotation.metrics.overlap; print('django' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.stdout.strip() == "False"


def test_words_drop_punctuation_keep_zwnj_and_niqqud_and_fold_digits():
    assert words("מי כתב את ״הספר״?") == ["מי", "כתב", "את", "הספר"]
    assert words(f"کتاب{ZWNJ}ها را خواندم؟") == [f"کتاب{ZWNJ}ها", "را", "خواندم"]
    assert words("שָׁלוֹם, World!") == ["שָׁלוֹם", "world"]
    assert words("سال ۱۳۹۸") == ["سال", "1398"]
    assert words(" ?! ") == []


def test_overlap_counts_question_tokens_found_in_the_paragraph():
    paragraph = "חברת Mobileye נוסדה בירושלים בשנת 1999."
    assert question_overlap("מתי נוסדה חברת Mobileye?", paragraph) == pytest.approx(3 / 4)
    assert question_overlap("מי הקים אותה?", paragraph) == 0.0
    assert question_overlap("חברת mobileye נוסדה", paragraph) == 1.0  # case folded
    # Prefixed forms are different words: "ירושלים" is not "בירושלים" (HeQ asks for rewording).
    assert question_overlap("ירושלים", paragraph) == 0.0
    assert question_overlap("", paragraph) == 0.0


@given(st.text(max_size=60), st.text(max_size=200))
def test_overlap_is_within_zero_and_one(question, paragraph):
    assert 0.0 <= question_overlap(question, paragraph) <= 1.0


@given(st.text(max_size=60))
def test_a_question_copied_into_the_paragraph_overlaps_fully(question):
    expected = 1.0 if words(question) else 0.0
    assert question_overlap(question, "פתיחה " + question + " סוף") == expected


def test_position_buckets():
    assert position_bucket(0, 1000) == 0
    assert position_bucket(99, 1000) == 0
    assert position_bucket(100, 1000) == 1
    assert position_bucket(999, 1000) == 9
    assert position_bucket(2, 3, bins=3) == 2
    for bad in ((-1, 10), (10, 10), (0, 0)):
        with pytest.raises(ValueError):
            position_bucket(*bad)
    assert position_histogram([(0, 10), (5, 10), (9, 10), (9, 10)], bins=2) == [1, 3]


@given(
    st.integers(min_value=1, max_value=10_000).flatmap(lambda n: st.tuples(st.integers(0, n - 1), st.just(n))),
    st.integers(1, 50),
)
def test_position_bucket_is_monotone_and_in_range(pair, bins):
    start, length = pair
    bucket = position_bucket(start, length, bins)
    assert 0 <= bucket < bins
    if start + 1 < length:
        assert position_bucket(start + 1, length, bins) >= bucket


def test_overlap_histogram():
    assert overlap_histogram([0.0, 0.05, 0.5, 1.0, 0.99], bins=10) == [2, 0, 0, 0, 0, 1, 0, 0, 0, 2]
    with pytest.raises(ValueError):
        overlap_histogram([1.5])


def test_wh_word_handles_prefixes_and_one_word_forms():
    assert wh_word("באיזו שנה נוסדה העיר?") == "איזו"
    assert wh_word("לכמה אנשים?") == "כמה"
    assert wh_word("ומדוע?") == "מדוע"
    assert wh_word("למה זה קרה?") == "למה"  # not "ל" + "מה"
    assert wh_word("מיהו ראש העיר?") == "מי"
    assert wh_word("מהי הבירה?") == "מה"
    assert wh_word("הבירה של צרפת היא?") is None
    assert wh_word("پایتخت ایران کدام شهر است؟") == "کدام"
    assert wh_word(f"چه{ZWNJ}کسی این را نوشت؟") == f"چه{ZWNJ}کسی"


def test_wh_word_matches_heq_labels_on_the_sample():
    doc = json.loads((HEQ / "val_v1.1_sample.json").read_text("utf-8"))
    questions = [q for article in doc["data"] for p in article["paragraphs"] for q in p["qas"]]
    assert len(questions) == 200
    mismatches = [(q["question"], q["WH Question"]) for q in questions if wh_word(q["question"]) != q["WH Question"]]
    assert mismatches == []
    assert {q["WH Question"] for q in questions} <= set(HEBREW_WH_WORDS)


def test_wh_diversity():
    one = wh_diversity(["מי?", "מי שם?"])
    assert (one.counts, one.distinct, one.entropy, one.without_wh) == ({"מי": 2}, 1, 0.0, 0)
    even = wh_diversity(["מי?", "מה?", "מתי?", "איפה?", "שאלה בלי מילת שאלה"])
    assert even.distinct == 4 and even.entropy == pytest.approx(1.0) and even.without_wh == 1
    assert wh_diversity([]).entropy == 0.0


@given(st.lists(st.sampled_from(["מי?", "מה?", "מתי?", "כמה?", "x"]), max_size=30))
def test_wh_entropy_is_within_zero_and_one(questions):
    assert 0.0 <= wh_diversity(questions).entropy <= 1.0 + 1e-12


class TestLetterVariants:
    """Arabic yeh/kaf against Persian yeh/keheh (docs/text.md "Matching"; FarsTail mixes them)."""

    ARABIC, PERSIAN = "\u0643\u062a\u0627\u0628 \u0639\u0644\u064a", "\u06a9\u062a\u0627\u0628 \u0639\u0644\u06cc"

    def test_kept_apart_unless_asked(self):
        assert question_overlap(self.ARABIC, self.PERSIAN) == 0.0
        assert question_overlap(self.ARABIC, self.PERSIAN, fold_letters=True) == 1.0

    def test_alef_maksura_reads_as_persian_yeh(self):
        assert question_overlap("\u0639\u0644\u0649", "\u0639\u0644\u06cc", fold_letters=True) == 1.0

    def test_digit_forms_are_one_always(self):
        # Persian (U+06F0-06F9), Arabic-Indic (U+0660-0669) and ASCII digits.
        assert question_overlap("\u06f1\u06f3\u06f9\u06f9", "\u0661\u0663\u0669\u0669 1399") == 1.0
        assert words("\u06f1\u06f3\u06f9\u06f9 \u0661\u0663\u0669\u0669") == ["1399", "1399"]
