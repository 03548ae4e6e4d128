"""Figures of a large project computed on the worker and stored (ProjectFigures), so that
its supervisor's pages answer in a bounded time with a fixed number of queries.

A project of fewer than MASHOV_FIGURES_LIVE_ITEMS items (5,000 by default) has its figures
computed per request, as they always were: its votes fit in a few milliseconds and the
figures are never stale. A larger one reads what its last aggregation job stored
(`project_figures_store`, called by the job after it has written the aggregates and
competences), so the figures trail the votes by at most one job — a minute, with the
aggregation's debounce and sweep. Before its first job a large project shows none.

Stored, by name:
- `annotator_quality`: {annotator id: the per-annotator figures that need every vote —
  items, seconds_median, agreement with the consensus and the gold, kappa — and coherence}
  (annotation.selectors.annotator_quality);
- `report_sections`: the kind's own report figures (`Kind.report_sections`), the alpha
  reports left out: those are read live from their own table;
- `adjudication_reasons`: {item id: why it waits} before adjudications are taken out;
- `adjudication_agreement`: agreement with and without the adjudicated items;
- `item_values`: the splits, groups, rounds and flags the item browser's filters offer."""

from __future__ import annotations

import json

from django.core.serializers.json import DjangoJSONEncoder
from django.utils import timezone

from annotation.models import Project, ProjectFigures
from annotation.selectors.figures import (
    ADJUDICATION_AGREEMENT,
    ADJUDICATION_REASONS,
    ANNOTATOR_QUALITY,
    ITEM_VALUES,
    REPORT_SECTIONS,
)


def _json(value):
    """`value` as its JSON text reads back: the shape a stored figure has when read."""
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))


def project_figures_store(project: Project) -> list[str]:
    """Compute and upsert the project's stored figures (module docstring); the names
    written. Runs on the worker, after the aggregation job's own writes."""
    from annotation.kinds.registry import get_kind
    from annotation.selectors.annotator_quality import (
        adjudication_agreement_compute,
        annotator_figures_compute,
        queue_reasons_compute,
    )
    from annotation.selectors.items import item_values_compute

    kind = get_kind(project.kind)
    now = timezone.now()
    figures = {ANNOTATOR_QUALITY: annotator_figures_compute(project, kind), ITEM_VALUES: item_values_compute(project)}
    sections = dict(kind.report_sections(project))
    if "agreement" in sections:
        sections["agreement"] = None  # read live (AgreementReport)
    figures[REPORT_SECTIONS] = sections
    if kind.labels:
        figures[ADJUDICATION_REASONS] = queue_reasons_compute(project, kind)
        figures[ADJUDICATION_AGREEMENT] = adjudication_agreement_compute(project, kind)
    for name, value in figures.items():
        project_figure_store(project, name, value, now=now)
    return list(figures)


def project_figure_store(project: Project, name: str, value, *, now=None) -> None:
    """Upsert one stored figure of the project (for a job that computes a figure of its own,
    such as a kind's corpus profile)."""
    ProjectFigures.objects.update_or_create(
        project=project, name=name, defaults={"value": _json(value), "computed_at": now or timezone.now()}
    )
