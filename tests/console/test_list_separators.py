"""Sentences a page builds from several clauses join them with the reader's language's
semicolon ("؛ " in Persian): the import's held-out reasons on the project page."""

from django.utils import translation

from annotation.services.imports import HeldOut, ImportResult
from annotation.views.projects import _held_out_text


def test_held_out_reasons_are_joined_with_the_persian_semicolon():
    result = ImportResult(
        created=3,
        skipped=0,
        held_out=3,
        held_out_rows=(HeldOut(2, "a", "دلیل یکم"), HeldOut(3, "b", "دلیل دوم"), HeldOut(5, "c", "دلیل یکم")),
    )
    with translation.override("fa"):
        (sentence,) = _held_out_text(result)
    assert "دلیل یکم" in sentence and "؛ " in sentence and "; " not in sentence, sentence
    with translation.override("he"):
        assert "; " in _held_out_text(result)[0]
