"""Small pieces of wording shared by messages and pages."""

from collections.abc import Iterable

from django.utils.translation import pgettext


def join_list(items: Iterable) -> str:
    """Items joined for a reader in the active language: Persian separates a list with the
    Arabic comma ("، "), Hebrew and English with ", ". The separator is in the catalogs so a
    language brings its own."""
    return pgettext("list separator", ", ").join(str(item) for item in items)


def join_clauses(clauses: Iterable) -> str:
    """Clauses (the problems of one form) joined with the active language's semicolon
    ("؛ " in Persian)."""
    return pgettext("clause separator", "; ").join(str(clause) for clause in clauses)
