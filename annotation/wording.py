"""Small pieces of wording shared by messages and pages."""

from collections.abc import Iterable

from django.utils.translation import gettext, pgettext

from annotation.metrics.offsets import SpanProblem
from annotation.metrics.text import BIDI_CONTROL, NUL, SURROGATE, TextFault


def join_list(items: Iterable) -> str:
    """Items joined for a reader in the active language: Persian separates a list with the
    Arabic comma ("، "), Hebrew and English with ", ". The separator is in the catalogs so a
    language brings its own."""
    return pgettext("list separator", ", ").join(str(item) for item in items)


def join_clauses(clauses: Iterable) -> str:
    """Clauses (the problems of one form) joined with the active language's semicolon
    ("؛ " in Persian)."""
    return pgettext("clause separator", "; ").join(str(clause) for clause in clauses)


def fault_text(fault: TextFault) -> str:
    """A text fault of annotation.metrics.text (what is wrong, which character, where) as a
    sentence in the interface's language, said of the field it sits beside. The position is
    written in ASCII digits; a Persian page shows it in its own (static/annotation/digits.js)."""
    facts = {"position": fault.position, "code": fault.code}
    if fault.what == NUL:
        message = (
            gettext("contains a NUL character at key position %(position)s")
            if fault.in_key
            else gettext("contains a NUL character at position %(position)s")
        )
    elif fault.what == SURROGATE:
        message = (
            gettext("contains a lone surrogate (%(code)s) at key position %(position)s")
            if fault.in_key
            else gettext("contains a lone surrogate (%(code)s) at position %(position)s")
        )
    elif fault.what == BIDI_CONTROL:
        message = (
            gettext("contains the bidi control %(code)s at key position %(position)s")
            if fault.in_key
            else gettext("contains the bidi control %(code)s at position %(position)s")
        )
    else:
        message = gettext("is not a finite number")
    return message % facts


def span_problem_text(problem: SpanProblem) -> str:
    """Why a span cannot be an answer (annotation.metrics.offsets.span_edge_problem) as a
    sentence in the interface's language, said of the field it sits beside."""
    if problem.edge == "start":
        message = gettext(
            "code point %(position)s falls inside a character (a mark, or part of an emoji sequence, belongs "
            "with the character before it)"
        )
    elif problem.edge == "end":
        message = gettext(
            "the span ends at code point %(position)s, inside a character (the marks or emoji parts after it "
            "belong to it)"
        )
    else:
        message = gettext("holds only whitespace or invisible characters")
    return message % {"position": problem.position}
