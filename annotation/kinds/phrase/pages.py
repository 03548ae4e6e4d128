"""The phrase_pair coherence dashboard (/p/<slug>/coherence/): per annotator soft and hard
coherence (fine-grained-nli-coherence §3) drawn as server-rendered SVG bars, plus the label
distribution per source and the alpha reports. Same figures as the report API (the kind's
`report_sections`); geometry in SVG attributes and colours in app.css (the CSP forbids
style attributes)."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.utils.translation import get_language_bidi
from django.views.decorators.http import require_GET

from annotation import access
from annotation.gates import kind_scoped
from annotation.metrics.coherence import LABELS
from annotation.selectors.reports import report_for_project
from annotation.views.dashboard import recompute_context

BAR_WIDTH = 320
BAR_HEIGHT = 18


def _bar(value: float | None, rtl: bool) -> dict:
    """x and width of a bar for a share in [0, 1], growing from inline-start."""
    width = round(BAR_WIDTH * (value or 0.0), 2)
    return {"x": round(BAR_WIDTH - width, 2) if rtl else 0, "width": width}


def coherence_rows(per_annotator: list[dict], rtl: bool) -> list[dict]:
    return [
        {
            **row,
            "soft_bar": _bar(row["soft"], rtl),
            "hard_bar": _bar(row["hard"], rtl),
            "soft_pct": None if row["soft"] is None else 100.0 * row["soft"],
            "hard_pct": None if row["hard"] is None else 100.0 * row["hard"],
        }
        for row in per_annotator
    ]


@login_required
@require_GET
@kind_scoped("phrase_pair", fetch=access.access_project_for_supervisor)
def coherence_dashboard(request, project):
    report = report_for_project(project)
    rtl = get_language_bidi()
    distribution = [
        {**row, "cells": [row["labels"][label] for label in LABELS]} for row in report.get("label_distribution", [])
    ]
    context = {
        "project": project,
        "report": report,
        "rows": coherence_rows(report["coherence"]["per_annotator"], rtl),
        "labels": LABELS,
        "distribution": distribution,
        "bar_width": BAR_WIDTH,
        "bar_height": BAR_HEIGHT,
        "half_height": BAR_HEIGHT // 2,
        "recompute": recompute_context(request.user, project),
    }
    return render(request, "phrase/coherence.html", context)
