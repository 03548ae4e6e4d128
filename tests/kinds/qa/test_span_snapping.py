"""Morphology-aware span snapping on the qa_authoring page (HeQ §2, §4), in Chromium:

- static/qa/morphology.js gives the answers of annotation/metrics/morphology.py on the shared
  table of cases (tests/kinds/qa/span_cases.json; offsets converted at the boundary);
- a mouse selection that cuts a word grows to the whole word, the page offers the span
  without its prefix letter, one keypress (P, by physical key) takes it, and the stored
  span is exactly that choice (code points, text equal to the paragraph's slice)."""

import json
from pathlib import Path

import pytest

from tests.browser.helpers import login
from tests.kinds.qa.test_browser import HE_PARAGRAPH, add_question, answer_shown, char_box, qa_setup, utf16  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CASES = json.loads((Path(__file__).resolve().parent / "span_cases.json").read_text("utf-8"))["cases"]

# Each case in code points → UTF-16 for the page's functions → code points back.
_RUN_CASES = """(cases) => {
  const M = window.MashovMorphology;
  const u16 = (text, cp) => Array.from(text).slice(0, cp).join('').length;
  const cp = (text, units) => Array.from(text.slice(0, units)).length;
  return cases.map((c) => {
    const snapped = M.snapSelection(c.text, u16(c.text, c.selection[0]), u16(c.text, c.selection[1]));
    const variants = M.spanVariants(c.text, snapped[0], snapped[1]);
    return {name: c.name, snapped: snapped.map((u) => cp(c.text, u)), variants: variants.map((v) => v.map((u) => cp(c.text, u)))};
  });
}"""


def test_the_page_snaps_and_offers_spans_like_the_server_rules(qa_setup, page):
    from annotation.metrics.morphology import snap_selection, span_variants

    base = qa_setup["url"]
    login(page, base, "dana", language="he")
    page.goto(f"{base}/p/he-qa/annotate/")
    page.wait_for_function("() => window.MashovMorphology !== undefined")
    results = page.evaluate(_RUN_CASES, CASES)
    for case, got in zip(CASES, results):
        assert got["snapped"] == case["snapped"] == list(snap_selection(case["text"], *case["selection"])), case["name"]
        assert (
            got["variants"] == case["variants"] == [list(v) for v in span_variants(case["text"], *case["snapped"])]
        ), case["name"]
    page.problems.assert_clean(page)


def test_mouse_cut_inside_a_word_then_one_key_drops_the_prefix(qa_setup, page, artifacts_dir):
    from annotation.models import Annotation

    base = qa_setup["url"]
    login(page, base, "dana", language="he")
    page.goto(f"{base}/p/he-qa/annotate/")
    page.wait_for_function("(t) => document.getElementById('paragraph').textContent === t", arg=HE_PARAGRAPH)
    word = "בקריית"
    at = HE_PARAGRAPH.index(word)
    # Drag from the middle of ר to the middle of the first י (RTL: from right to left).
    first, last = char_box(page, utf16(HE_PARAGRAPH, at + 2)), char_box(page, utf16(HE_PARAGRAPH, at + 3))
    y = (first["top"] + first["bottom"]) / 2
    page.mouse.move((first["left"] + first["right"]) / 2, y)
    page.mouse.down()
    page.mouse.move((last["left"] + last["right"]) / 2, y, steps=4)
    page.mouse.up()
    # The whole word, as the browser's selection shows it; the version without ב is offered.
    page.wait_for_function("(t) => document.getElementById('answer-text').textContent === t", arg=word)
    assert page.evaluate("() => document.getSelection().toString()") == word
    assert page.locator("#prefix-offer").is_visible()
    assert page.locator("#prefix-variant").text_content() == word[1:]
    page.screenshot(path=str(artifacts_dir / "qa_prefix_offer.png"), full_page=True)
    # P by physical key: the Hebrew layout types פ on it.
    page.focus("#paragraph")
    page.keyboard.press("KeyP")
    assert answer_shown(page) == word[1:]
    assert page.locator("#prefix-variant").text_content() == word  # and back again with P
    add_question(page, "באיזו עיר תשקיע החברה?")
    add_question(page, "מתי הודיעה החברה?", answerable=False)
    add_question(page, "כמה עובדים יועסקו?", answerable=False)
    with page.expect_response(lambda r: r.request.method == "POST" and "/submit/" in r.url) as submitted:
        page.click("#done-paragraph")
    assert submitted.value.status == 201, submitted.value.text()
    answer = Annotation.objects.get().value["questions"][0]["answer"]
    assert answer == {"start": at + 1, "text": word[1:]}
    assert HE_PARAGRAPH[answer["start"] : answer["start"] + len(answer["text"])] == answer["text"]
    page.problems.assert_clean(page)
