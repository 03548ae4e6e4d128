"""HeSum Table 1's morphology columns from hspell (annotation/metrics/hebrew_morphology.py,
annotation/hspell.py). The words are ours. HSPELL_OUTPUT is what `hspell -l` (Debian's
hspell 1.4-3.1) printed for them, kept verbatim so that the parser is checked against the
real format where hspell is missing too; the tests marked `needs_hspell` run hspell itself
(CI installs it) and check that it still prints exactly that."""

import shutil
import subprocess

import pytest

from annotation.metrics.hebrew_morphology import (
    FIGURES,
    MorphologyProfile,
    Reading,
    hebrew_words,
    parse_hspell,
    word_readings,
)

needs_hspell = pytest.mark.skipif(
    shutil.which("hspell") is None, reason="hspell is not installed (apt-get install hspell)"
)

WORDS = ["הבית", "ממשלת", "עליו", "ילדיה", "לו", "ישראל", "כלבם", "ביתתתת"]
HSPELL_OUTPUT = """\
צירוף חוקי: ה+בית
\tבית(ע,ז,יחיד)
מילה חוקית: ממשלת
\tממשלה(ע,נ,יחיד,סמיכות)
צירוף חוקי: מ+משלת
\tהשלה(פ,נ,יחיד,הווה,סמיכות)
מילה חוקית: עליו
\tעל(x)
\tעלה(ע,ז,רבים,כינוי/ז,3,יחיד)
מילה חוקית: ילדיה
\tיילד(פ,נ,2,יחיד,ציווי,כינוי/נ,3,יחיד)
\tילד(ע,ז,רבים,כינוי/נ,3,יחיד)
מילה חוקית: לו
\tלי(x)
\tשונות(x)
מילה חוקית: ישראל
\tשונות(ע,פרטי)
\tישראל(ע,נ,פרטי)
מילה חוקית: כלבם
\tכלב(ע,ז,יחיד,כינוי/ז,3,רבים)
צירוף חוקי: כ+לבם
\tלב(ע,ז,יחיד,כינוי/ז,3,רבים)
צירוף חוקי: כל+בם
\tבי(x)
שגיאות כתיב שנמצאו:

ביתתתת
"""


def run_hspell(words):
    done = subprocess.run(
        ["hspell", "-l"], input="\n".join(words).encode("iso-8859-8") + b"\n", capture_output=True, check=True
    )
    return done.stdout.decode("iso-8859-8")


@needs_hspell
def test_hspell_prints_the_format_the_parser_reads():
    assert run_hspell(WORDS) == HSPELL_OUTPUT


def test_parsing_groups_readings_by_word_across_prefix_splits():
    parsed = parse_hspell(HSPELL_OUTPUT)
    assert set(parsed) == set(WORDS) - {"ביתתתת"}  # the misspelling list is not an analysis
    assert parsed["הבית"] == [Reading("בית", "בית", ("ע", "ז", "יחיד"))]
    assert [(r.segment, r.lemma) for r in parsed["כלבם"]] == [("כלבם", "כלב"), ("לבם", "לב"), ("בם", "בי")]
    assert parsed["ממשלת"][1].features == ("פ", "נ", "יחיד", "הווה", "סמיכות")


def test_reading_rules():
    parsed = parse_hspell(HSPELL_OUTPUT)
    figures = {word: word_readings(word, parsed.get(word, [])) for word in WORDS}
    # Construct state in every reading; the prefix split's lemma counts as well.
    assert figures["ממשלת"].construct_all and figures["ממשלת"].lemmas == {"ממשלה", "השלה"}
    # An inflected preposition (על(x) for עליו) is anaphoric like a marked suffix.
    assert figures["עליו"].anaphoric_all and figures["עליו"].lemmas == {"על", "עלה"}
    assert figures["ילדיה"].anaphoric_all and not figures["ילדיה"].construct_some
    # לו: "to him" (לי(x)) or "if" (שונות(x)): anaphoric in some reading only.
    assert figures["לו"].anaphoric_some and not figures["לו"].anaphoric_all
    assert figures["לו"].lemmas == {"לי", "לו"}  # שונות stands for "no lemma": the word itself
    assert figures["ישראל"].lemmas == {"ישראל"} and not figures["ישראל"].anaphoric_some
    assert figures["כלבם"].anaphoric_all  # every split has a suffix, בי(x) included
    assert not figures["הבית"].anaphoric_some and not figures["הבית"].construct_some
    unknown = figures["ביתתתת"]
    assert not unknown.known and unknown.lemmas == {"ביתתתת"} and not unknown.anaphoric_some


def test_hebrew_words_drop_niqqud_and_keep_inner_gershayim():
    assert hebrew_words("בְּבֵית הַסֵּפֶר") == ["בבית", "הספר"]
    assert hebrew_words('צה״ל וג׳ירפה, ב-2019 ו-ABC "שלום"') == ['צה"ל', "וג'ירפה", "שלום"]
    assert hebrew_words("کتاب ‌ها 12") == []


def test_profile_counts_per_text_by_hand():
    parsed = parse_hspell(HSPELL_OUTPUT)
    analyses = {word: word_readings(word, parsed.get(word, [])) for word in WORDS}
    profile = MorphologyProfile()
    profile.add("ממשלת ישראל, עליו ילדיה.", analyses)
    profile.add("לו הבית ביתתתת!", analyses)
    assert profile.figures() == {
        "lemmas": 11,  # ממשלה השלה ישראל על עלה יילד ילד, then לי לו בית ביתתתת
        "anaphors_mean": 1.0,  # עליו, ילדיה over 2 texts
        "anaphors_possible_mean": 1.5,  # and לו
        "construct_mean": 0.5,  # ממשלת
        "construct_possible_mean": 0.5,
        "known_words": 6 / 7,  # ביתתתת is unknown
    }
    assert list(profile.figures()) == list(FIGURES)
    assert MorphologyProfile().figures() == {"lemmas": 0, **dict.fromkeys(FIGURES[1:])}


@needs_hspell
def test_the_analyser_runs_hspell_once_per_batch_of_new_words(monkeypatch):
    from annotation import hspell

    calls = []
    real_run = subprocess.run

    def counting_run(args, **kwargs):
        if args[1:] == ["-l"]:
            calls.append(kwargs["input"].decode("iso-8859-8").split())
        return real_run(args, **kwargs)

    monkeypatch.setattr(hspell.subprocess, "run", counting_run)
    analyser = hspell.hspell_or_none()
    assert analyser is not None and analyser.name == "hspell 1.4"
    first = analyser.analyse(WORDS)
    assert dict(first) == {word: word_readings(word, parse_hspell(HSPELL_OUTPUT).get(word, [])) for word in WORDS}
    analyser.analyse(["הבית", "ספריו", "ספריו"])  # one new word: one run for it alone
    analyser.analyse(WORDS)  # nothing new: no run
    assert calls == [sorted(WORDS), ["ספריו"]]
    assert analyser.analyse([])["ספריו"].anaphoric_all


def test_without_hspell_on_the_path_there_is_no_analyser(monkeypatch):
    from annotation import hspell

    monkeypatch.setattr(hspell.shutil, "which", lambda name: None)
    assert hspell.hspell_or_none() is None
