"""Finds a workflow kind by name."""

from annotation.errors import InvalidInput

from .base import Kind
from .nli import LabelTestKind, NliRelabelKind
from .nli_authoring import NliAuthoringKind
from .phrase import PhrasePairKind
from .qa import QaAuthoringKind
from .summary import SummaryRatingKind
from .translation import TranslationRatingKind

_KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        QaAuthoringKind(),
        NliAuthoringKind(),
        NliRelabelKind(),
        TranslationRatingKind(),
        PhrasePairKind(),
        SummaryRatingKind(),
        LabelTestKind(),
    )
}


def get_kind(name: str) -> Kind:
    kind = _KINDS.get(name)
    if kind is None:
        raise KeyError(name)
    return kind


def available_kinds() -> tuple[str, ...]:
    return tuple(_KINDS)


def kind_for_new_project(name) -> Kind:
    if not isinstance(name, str) or name not in _KINDS:
        raise InvalidInput(f"must be one of {', '.join(_KINDS)}", field="kind")
    return _KINDS[name]


def kinds_aggregating_by_consensus() -> list[str]:
    return [name for name, kind in _KINDS.items() if kind.aggregates_by_consensus]
