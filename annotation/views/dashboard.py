"""The supervisor's consensus dashboard (/p/<slug>/dashboard/): the figures of
`report_for_project` drawn as server-rendered SVG (no script; the CSP forbids inline
scripts and style attributes, so geometry goes in SVG presentation attributes and colours
in static CSS classes), with the numbers beside every chart."""

import math

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.utils.translation import get_language_bidi
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from annotation import access
from annotation.errors import ApplicationError
from annotation.kinds.registry import get_kind, recompute_pages
from annotation.models import Job
from annotation.selectors.reports import report_for_viewer
from annotation.services.agreement import JOB_TYPE, agreement_request
from annotation.templatetags.mashov import scope_name

BAR_WIDTH = 360  # px, the drawing width of every bar chart
BAR_HEIGHT = 22
AXIS_WIDTH = 360
AXIS_PAD = 12
# Krippendorff (2004) §11.4: rely on alpha >= .800; tentative conclusions from .667.
ALPHA_THRESHOLDS = (0.667, 0.8)


def _bar(value: float, scale: float, rtl: bool, start: float = 0.0) -> dict:
    """x and width of a bar segment of `value` beginning `start` units from inline-start."""
    width = BAR_WIDTH * value / scale if scale else 0.0
    offset = BAR_WIDTH * start / scale if scale else 0.0
    x = BAR_WIDTH - offset - width if rtl else offset
    return {"x": round(x, 2), "width": round(width, 2)}


def _outcome_rows(rounds: list[dict], rtl: bool) -> list[dict]:
    scale = max((row["accepted"] + row["failed"] for row in rounds), default=0)
    rows = []
    for row in rounds:
        total = row["accepted"] + row["failed"]
        rows.append(
            {
                **row,
                "total": total,
                "accepted_bar": _bar(row["accepted"], scale, rtl),
                "failed_bar": _bar(row["failed"], scale, rtl, start=row["accepted"]),
                "accepted_pct": 100.0 * row["accepted"] / total if total else 0.0,
            }
        )
    return rows


def _annotator_rows(per_annotator: list[dict], rtl: bool) -> list[dict]:
    return [
        {
            **row,
            "bar": _bar(row["rate"] or 0.0, 1.0, rtl),
            "pct": 100.0 * (row["rate"] or 0.0),
            "track": _bar(1.0, 1.0, rtl),
        }
        for row in per_annotator
    ]


def _heat(confusion: dict) -> list[dict]:
    peak = max((n for row in confusion["matrix"] for n in row), default=0)
    rows = []
    for i, (label, counts) in enumerate(zip(confusion["labels"], confusion["matrix"])):
        total = sum(counts)
        cells = [
            {
                "n": n,
                "level": 0 if not n or not peak else max(1, round(5 * n / peak)),
                "diagonal": i == j,
                "pct": 100.0 * n / total if total else 0.0,
            }
            for j, n in enumerate(counts)
        ]
        rows.append({"label": label, "cells": cells, "total": total})
    return rows


def _alpha_chart(reports: list[dict]) -> dict:
    """A shared number line for every report's alpha and CI; x grows left to right in
    every language (a number line, not a bar)."""
    values = [v for r in reports for v in (r["alpha"], r["ci_low"], r["ci_high"]) if v is not None]
    low = math.floor(min([0.0, *values]) * 10) / 10  # 0, or the tenth below a negative value

    def x(v: float) -> float:
        return round(AXIS_PAD + (v - low) / (1.0 - low) * (AXIS_WIDTH - 2 * AXIS_PAD), 2)

    ticks = [{"x": x(t), "label": f"{t:g}"} for t in sorted({low, 0.0, 0.5, *ALPHA_THRESHOLDS, 1.0}) if low <= t <= 1.0]
    rows = []
    for r in reports:
        row = {**r, "scope_label": _scope_label(r["scope"])}
        if r["alpha"] is not None:
            row["dot"] = x(r["alpha"])
            if r["ci_low"] is not None and r["ci_high"] is not None:
                row["low_x"], row["high_x"] = x(r["ci_low"]), x(r["ci_high"])
        rows.append(row)
    return {"rows": rows, "ticks": ticks, "thresholds": [x(t) for t in ALPHA_THRESHOLDS]}


def _scope_label(scope) -> str:
    """ "Round 2", "system A · accuracy": a stored scope in people's words, never a dict."""
    return scope_name(scope)


def _access(request, slug, supervisor: bool = False):
    """The project for its staff; refusals become pages in AccessErrorPageMiddleware (404, 403)."""
    getter = access.access_project_for_supervisor if supervisor else access.access_project_for_staff
    return getter(request.user, slug)


@login_required
@require_GET
def dashboard(request, slug):
    project = _access(request, slug)
    report = report_for_viewer(project, request.user)
    rtl = get_language_bidi()
    context = {
        "project": project,
        "report": report,
        "recompute": recompute_context(request.user, project),
        "rtl": rtl,
        "bar_width": BAR_WIDTH,
        "bar_height": BAR_HEIGHT,
        "axis_width": AXIS_WIDTH,
    }
    if "outcomes_per_round" in report:
        context["outcome_rows"] = _outcome_rows(report["outcomes_per_round"], rtl)
        context["heat_rows"] = _heat(report["confusion"])
        context["annotator_rows"] = _annotator_rows(report["per_annotator"], rtl)
    if "agreement" in report:
        context["alpha_chart"] = _alpha_chart(report["agreement"])
    return render(request, "annotation/dashboard.html", context)


@login_required
@require_POST
def dashboard_recompute(request, slug):
    """The "Recompute agreement" button of every results page: queue the job, come back to the
    page it was pressed on (`back`: the dashboard or a page a kind lists in `recompute_pages`;
    the dashboard otherwise)."""
    _access(request, slug, supervisor=True)
    back = request.POST.get("back")
    pages = ("dashboard", *recompute_pages())  # those with the button (templates/annotation/_recompute.html)
    return recompute_agreement_and_return(request, slug, back if back in pages else "dashboard")


def recompute_context(user, project) -> dict:
    """What a results page's recompute button needs: whether `user` may press it (supervisors
    and admins) and the last agreement job."""
    return {
        "allowed": get_kind(project.kind).computes_agreement and access.supervises(user, project),
        "last_job": Job.objects.filter(project=project, kind=JOB_TYPE).order_by("-id").first(),
    }


def recompute_agreement_and_return(request, slug: str, page: str):
    """Queue the agreement job (the pages' "Recompute" buttons) and go back to `page`."""
    try:
        job = agreement_request(user=request.user, slug=slug)
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, _("Agreement recomputation queued (job #%(job)s).") % {"job": job.pk})
    return redirect(page, slug=slug)
