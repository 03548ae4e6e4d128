"""Finds a workflow kind by name."""

from annotation.errors import InvalidInput

from .base import Kind
from .nli import LabelTestKind, NliRelabelKind
from .nli_authoring import NliAuthoringKind
from .qa import QaAuthoringKind
from .phrase import PhrasePairKind
from .summary import SummaryRatingKind
from .translation import TranslationRatingKind

# Every kind of API.md; the ones not built yet are refused at project creation with a clear message.
ALL_KIND_NAMES = (
    "qa_authoring",
    "nli_authoring",
    "nli_relabel",
    "translation_rating",
    "phrase_pair",
    "summary_rating",
    "label_test",
)

_KINDS: dict[str, Kind] = {kind.name: kind for kind in (NliRelabelKind(), LabelTestKind(), NliAuthoringKind(), TranslationRatingKind(), PhrasePairKind(), SummaryRatingKind(), QaAuthoringKind())}


def get_kind(name: str) -> Kind:
    kind = _KINDS.get(name)
    if kind is None:
        raise KeyError(name)
    return kind


def available_kinds() -> tuple[str, ...]:
    return tuple(_KINDS)


def kind_for_new_project(name) -> Kind:
    if not isinstance(name, str) or name not in ALL_KIND_NAMES:
        raise InvalidInput(f"must be one of {', '.join(ALL_KIND_NAMES)}", field="kind")
    if name not in _KINDS:
        raise InvalidInput(
            f"{name} is not available in this version yet; available: {', '.join(available_kinds())}", field="kind"
        )
    return _KINDS[name]


def kinds_aggregating_by_consensus() -> list[str]:
    return [name for name, kind in _KINDS.items() if kind.aggregates_by_consensus]
