"""The list of workflow kinds, and what the core asks of it.

Kinds are named here by dotted path and imported on first use, so that the core (models,
services, selectors, tasks, URLs) can reach a kind through this module without importing
any particular kind: the kinds import the core, never the other way round. Adding a kind is
one folder under kinds/ and one line below; its URL modules and job handlers are mounted
from what its class declares."""

from functools import cache

from django.utils.module_loading import import_string

from annotation.errors import InvalidInput

from .base import Kind

# Project kind (as stored and as the API names it) → its class.
KIND_CLASSES: dict[str, str] = {
    "qa_authoring": "annotation.kinds.qa.kind.QaAuthoringKind",
    "nli_authoring": "annotation.kinds.nli_authoring.kind.NliAuthoringKind",
    "nli_relabel": "annotation.kinds.nli.kind.NliRelabelKind",
    "translation_rating": "annotation.kinds.translation.kind.TranslationRatingKind",
    "phrase_pair": "annotation.kinds.phrase.kind.PhrasePairKind",
    "summary_rating": "annotation.kinds.summary.kind.SummaryRatingKind",
    "label_test": "annotation.kinds.label_test.kind.LabelTestKind",
}


@cache
def _kinds() -> dict[str, Kind]:
    kinds = {}
    for name, path in KIND_CLASSES.items():
        kind = import_string(path)()
        if kind.name != name:
            raise RuntimeError(f"{path} is registered as {name!r} but names itself {kind.name!r}")
        kinds[name] = kind
    return kinds


def get_kind(name: str) -> Kind:
    kind = _kinds().get(name)
    if kind is None:
        raise KeyError(name)
    return kind


def available_kinds() -> tuple[str, ...]:
    return tuple(KIND_CLASSES)


def kind_for_new_project(name) -> Kind:
    if not isinstance(name, str) or name not in KIND_CLASSES:
        raise InvalidInput(f"must be one of {', '.join(KIND_CLASSES)}", field="kind")
    return get_kind(name)


def kinds_aggregating_by_consensus() -> list[str]:
    return [name for name, kind in _kinds().items() if kind.aggregates_by_consensus]


def _declared_once(attribute: str) -> list[str]:
    """The distinct dotted names the kinds declare in `attribute`, in registry order (two
    kinds may share a module: label_test's results page lives with translation's)."""
    seen: list[str] = []
    for kind in _kinds().values():
        for module in getattr(kind, attribute):
            if module not in seen:
                seen.append(module)
    return seen


def page_url_modules() -> list[str]:
    """URL modules of the kinds' HTML pages, mounted at the site's root."""
    return _declared_once("page_urls")


def api_url_modules() -> list[str]:
    """URL modules of the kinds' API operations, mounted under /api/."""
    return _declared_once("api_urls")


def job_handlers() -> dict[str, str]:
    """Job kind → dotted path of the function that runs it, for the jobs the kinds define."""
    handlers: dict[str, str] = {}
    for kind in _kinds().values():
        for job_kind, path in kind.job_handlers.items():
            if handlers.setdefault(job_kind, path) != path:
                raise RuntimeError(f"job kind {job_kind!r} has two handlers: {handlers[job_kind]} and {path}")
    return handlers
