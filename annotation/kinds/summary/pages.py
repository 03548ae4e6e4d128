"""The supervisor's results page of a summary_rating project (/p/<slug>/summaries/): the
report's per-system means with 95% CIs (a number line per criterion, drawn as server-side
SVG like the dashboard: no script, no style attributes), HeSum Table 4's error-tag table,
the intrinsic measures, the correlations with automatic scores and interval alpha; and its
two buttons, which queue the intrinsic measures or the agreement recomputation."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from annotation import access
from annotation.errors import ApplicationError
from annotation.gates import kind_scoped
from annotation.kinds.registry import get_kind
from annotation.kinds.summary.measures import JOB_KIND as INTRINSIC_JOB
from annotation.kinds.summary.measures import KIND, summary_measures_request
from annotation.kinds.summary.results import COMPUTED_BERTSCORE, COMPUTED_ROUGE, SCALE
from annotation.models import Job
from annotation.selectors.reports import report_for_viewer
from annotation.services.agreement import JOB_TYPE as AGREEMENT_JOB
from annotation.views.dashboard import recompute_agreement_and_return

AXIS_WIDTH = 320
AXIS_PAD = 14


def _x(value: float) -> float:
    """Position of a 1-5 rating on the number line (left to right in every language)."""
    low, high = SCALE
    value = min(max(value, low), high)
    return round(AXIS_PAD + (value - low) / (high - low) * (AXIS_WIDTH - 2 * AXIS_PAD), 2)


def _system_rows(report: dict) -> list[dict]:
    rows = []
    for system in report["systems"]:
        cells = []
        for criterion in report["criteria"]:
            figure = system[criterion]
            cell = {"criterion": criterion, **figure}
            if figure["mean"] is not None:
                cell["dot"] = _x(figure["mean"])
            if figure["ci_low"] is not None:
                # A bootstrap percentile interval: on the scale, drawn and written as computed.
                cell["low_x"], cell["high_x"] = _x(figure["ci_low"]), _x(figure["ci_high"])
            cells.append(cell)
        rows.append({**system, "cells": cells})
    return rows


def _error_rows(report: dict) -> list[dict]:
    table = report["error_table"]
    return [
        {
            "tag": row["tag"],
            "name": row["name"],
            "cells": [
                {
                    "system": system,
                    "summaries": row["summaries"][system],
                    "tags": row["tags"][system],
                    "pct": 100.0 * row["summaries"][system] / table["rated"][system]
                    if table["rated"][system]
                    else None,
                }
                for system in table["systems"]
            ],
        }
        for row in table["rows"]
    ]


def _intrinsic_rows(report: dict) -> list[dict]:
    """Per system: novel n-grams n = 1..4, CMP, RED n = 1, 2 in percent, as Table 2 prints them,
    then ROUGE-1/2/L against the reference in percent, as Table 3 does, and BERTScore F1
    against the reference (Table 3) and the article (Table 1) in percent."""

    def pct(value):
        return None if value is None else 100.0 * value

    rows = []
    for system in report["systems"]:
        figures = system["intrinsic"]
        values = [pct(figures["novel_ngrams"].get(n)) for n in ("1", "2", "3", "4")]
        values.append(pct(figures["compression_ratio"]))
        values += [pct(figures["redundancy"].get(n)) for n in ("1", "2")]
        values += [pct(figures["rouge"].get(name)) for name in COMPUTED_ROUGE]
        values += [pct(figures["bertscore"].get(name)) for name in COMPUTED_BERTSCORE]
        rows.append({"system": system["system"], "values": values, "n": figures["n"]})
    return rows


@login_required
@require_GET
@kind_scoped(KIND, fetch=access.access_project_for_staff)
def summary_results(request, project):
    report = report_for_viewer(project, request.user)
    ticks = [{"x": _x(v), "label": str(v)} for v in range(SCALE[0], SCALE[1] + 1)]
    context = {
        "project": project,
        "report": report,
        "system_rows": _system_rows(report),
        "error_rows": _error_rows(report),
        "ticks": ticks,
        "axis_width": AXIS_WIDTH,
        "can_recompute": access.supervises(request.user, project),
        "intrinsic_job": Job.objects.filter(project=project, kind=INTRINSIC_JOB).order_by("-id").first(),
        "agreement_job": Job.objects.filter(project=project, kind=AGREEMENT_JOB).order_by("-id").first(),
        "intrinsic_rows": _intrinsic_rows(report),
        "novel_n": ["1", "2", "3", "4"],
        "redundancy_n": ["1", "2"],
        "rouge_names": list(COMPUTED_ROUGE.values()),
        "bertscore_names": [_("BERTScore"), _("BERTScore (article)")],
        "reference_system": get_kind(KIND).project_settings(project)["reference_system"],
    }
    return render(request, "summary/results.html", context)


@login_required
@require_POST
@kind_scoped(KIND, fetch=access.access_project_for_supervisor)
def summary_intrinsic(request, project):
    """The "Compute intrinsic measures" button."""
    try:
        job = summary_measures_request(user=request.user, slug=project.slug, remeasure=request.POST.get("all") == "1")
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, _("Intrinsic measures queued (job #%(job)s).") % {"job": job.pk})
    return redirect("summary-results", slug=project.slug)


@login_required
@require_POST
@kind_scoped(KIND, fetch=access.access_project_for_supervisor)
def summary_recompute(request, project):
    """The "Recompute agreement" button (also measures unmeasured summaries)."""
    return recompute_agreement_and_return(request, project.slug, "summary-results")
