"""Reads of a large project's stored figures (ProjectFigures; written on the worker by
services.figures.project_figures_store): whether a project is small enough to compute its
figures per request, and what its last aggregation job stored."""

from __future__ import annotations

from django.conf import settings

from annotation.models import Item, Project, ProjectFigures

ANNOTATOR_QUALITY = "annotator_quality"
REPORT_SECTIONS = "report_sections"
ADJUDICATION_REASONS = "adjudication_reasons"
ADJUDICATION_AGREEMENT = "adjudication_agreement"
ITEM_VALUES = "item_values"
# The aggregation job's own bookkeeping: when it last read the whole project, how many items
# the project had then, and how many changed since (services.aggregation).
AGGREGATION_STATE = "aggregation_state"


def figures_are_live(project: Project) -> bool:
    """Whether the project is small enough to compute its figures per request (fewer than
    MASHOV_FIGURES_LIVE_ITEMS items). One query that reads at most that many index
    entries; remembered on `project` for the rest of the request."""
    live = getattr(project, "_figures_live", None)
    if live is None:
        limit = settings.MASHOV_FIGURES_LIVE_ITEMS
        live = not Item.objects.filter(project=project).order_by().values_list("pk", flat=True)[limit : limit + 1]
        project._figures_live = live  # type: ignore[attr-defined]  # remembered for this request
    return live


def stored_figures(project: Project, name: str):
    """The figures `name` as last stored for the project (JSON: keys are strings), or None."""
    return ProjectFigures.objects.filter(project=project, name=name).values_list("value", flat=True).first()
