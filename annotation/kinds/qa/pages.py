"""HeQ pages besides the authoring page (which the generic `annotate` view renders from
`QaAuthoringKind.template`): the reviewer's grading page and the validator's page (the
feedback inbox is the core's, annotation/views/feedback.py), each of which only checks access and hands its config to static JS through
`json_script` (the JS talks to the REST API with the session and CSRF token, docs/security.md "Pages"); and the
reviewers' quality dashboard, rendered on the server as SVG without any script."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils.translation import gettext_lazy as _

from annotation import access
from annotation.errors import ApplicationError, PermissionDenied
from annotation.gates import kind_scoped
from annotation.models import Membership
from annotation.services.reviews import GRADE_LABELS

from . import audit as audit_services
from .questions import GRADES


@login_required
def review(request, slug):
    """Reviewers and supervisors grade the pending questions of a qa_authoring project."""
    project = access.access_project_for_staff(request.user, slug)
    if project.kind != "qa_authoring":
        raise Http404
    config = {
        "slug": project.slug,
        "pendingUrl": f"/api/projects/{project.slug}/reviews/pending/",
        "reviewUrl": "/api/annotations/{id}/review/",
        "grades": list(GRADES),
    }
    return render(request, "qa/review.html", {"project": project, "config": config})


def paragraph_parts(context, answer) -> dict | None:
    """The paragraph split around the answer span ({"before", "answer", "after"}; offsets are
    code points, which is how Python slices), or the whole paragraph in "before" when the
    span does not fit it; None without a paragraph."""
    if not isinstance(context, str):
        return None
    if isinstance(answer, dict) and isinstance(answer.get("start"), int) and isinstance(answer.get("text"), str):
        start, text = answer["start"], answer["text"]
        if text and 0 <= start and context[start : start + len(text)] == text:
            return {"before": context[:start], "answer": text, "after": context[start + len(text) :]}
    return {"before": context, "answer": "", "after": ""}


@login_required
@login_required
@kind_scoped("qa_authoring", fetch=access.access_project_for_user)
def validate(request, project):
    """Validators answer authored dev/test questions blind (HeQ §3.3)."""
    membership = access.membership_of(request.user, project)
    if (
        membership is not None
        and membership.role == Membership.Role.ANNOTATOR
        and membership.status != Membership.Status.ACTIVE
    ):
        raise PermissionDenied(_("Only active annotators, reviewers and supervisors validate questions."))
    config = {
        "slug": project.slug,
        "nextUrl": f"/api/projects/{project.slug}/validations/next/",
        "submitUrl": "/api/validations/submit/",
    }
    return render(request, "qa/validate.html", {"project": project, "config": config})


# --- the quality dashboard (HeQ §3.3-3.4, appendix C) ---------------------------------------------
#
# The figures are the report's (`QaAuthoringKind.report_sections`, the same dict as GET
# /api/projects/{slug}/report/); this part only lays them out as SVG geometry. Geometry goes in
# SVG attributes and colours in app.css (the CSP forbids style attributes). In an RTL project
# the charts are mirrored: the first bin, the first period and bar origins sit at inline-start
# (the right), as the paragraph's first character does.

SERIES = ("authored", "imported")
HIST_W, HIST_H, HIST_PAD_X, HIST_PAD_TOP, HIST_PAD_BOTTOM = 380, 160, 16, 10, 22
TREND_W, TREND_H, TREND_PAD_X, TREND_PAD_TOP, TREND_PAD_BOTTOM = 300, 120, 26, 10, 14
BAR_W, BAR_H = 240, 12
METRIC_W = 90


def _number(value, digits: int = 3) -> str:
    """Figures are written the same in every interface language (ASCII digits, a dot)."""
    return "—" if value is None else f"{value:.{digits}f}"


def _mirror(x: float, width: float, total: float, rtl: bool) -> float:
    return round(total - x - width, 2) if rtl else round(x, 2)


def _share_bar(share: float | None, rtl: bool, total: float = BAR_W) -> dict:
    width = round(total * max(0.0, min(1.0, share or 0.0)), 2)
    return {"x": _mirror(0, width, total, rtl), "width": width}


def histogram_chart(
    series: dict[str, list[int]], rtl: bool, *, tick_labels: dict[int, str], range_label, threshold: float | None = None
) -> dict:
    """Grouped bars, one group per bin, each series drawn as its share of its own total (the
    file's 200 questions and a handful of authored ones compare by shape). Rows carry the
    counts and shares that the page prints beside the chart."""
    bins = len(next(iter(series.values())))
    totals = {name: sum(counts) for name, counts in series.items()}
    shares = {name: [(n / totals[name]) if totals[name] else 0.0 for n in counts] for name, counts in series.items()}
    top = max((v for values in shares.values() for v in values), default=0.0) or 1.0
    plot_w = HIST_W - 2 * HIST_PAD_X
    plot_h = HIST_H - HIST_PAD_TOP - HIST_PAD_BOTTOM
    slot = plot_w / bins
    bar_w = (slot - 4) / len(series)
    bars = []
    for b in range(bins):
        for k, name in enumerate(series):
            height = round(plot_h * shares[name][b] / top, 2)
            x = HIST_PAD_X + b * slot + 2 + k * bar_w
            bars.append(
                {
                    "series": name,
                    "x": _mirror(x, bar_w, HIST_W, rtl),
                    "y": round(HIST_PAD_TOP + plot_h - height, 2),
                    "width": round(bar_w, 2),
                    "height": height,
                    "bin": b,
                    "count": series[name][b],
                }
            )
    ticks = [
        {"x": _mirror(HIST_PAD_X + plot_w * edge / bins, 0, HIST_W, rtl), "label": label}
        for edge, label in sorted(tick_labels.items())
    ]
    rows = [
        {
            "range": range_label(b, bins),
            "cells": [
                {"series": name, "count": series[name][b], "pct": _number(100 * shares[name][b], 1)} for name in series
            ],
        }
        for b in range(bins)
    ]
    chart = {
        "bars": bars,
        "ticks": ticks,
        "rows": rows,
        "totals": totals,
        "width": HIST_W,
        "height": HIST_H,
        "baseline": HIST_PAD_TOP + plot_h,
        "x0": HIST_PAD_X,
        "x1": HIST_W - HIST_PAD_X,
        "tick_y": HIST_H - 6,
        "series": list(series),
    }
    if threshold is not None:
        chart["threshold"] = {
            "x": _mirror(HIST_PAD_X + plot_w * threshold, 0, HIST_W, rtl),
            "y0": HIST_PAD_TOP,
            "y1": HIST_PAD_TOP + plot_h,
            "value": _number(threshold, 2),
        }
    return chart


def grade_trend_chart(entry: dict, rtl: bool, *, max_reviewed: int) -> dict:
    """One annotator's small multiple: the mean grade per period (0 rejected … 3 gold) as a line
    with a dot per period whose area follows the number of questions graded that day, the
    grade mix of all their graded questions as one stacked bar, and the change from the first
    to the last period (HeQ §3.3: did the annotator improve after feedback?)."""
    series = entry["series"]
    plot_w = TREND_W - 2 * TREND_PAD_X
    plot_h = TREND_H - TREND_PAD_TOP - TREND_PAD_BOTTOM
    n = len(series)
    points = []
    for index, period in enumerate(series):
        x = TREND_PAD_X + (plot_w * index / (n - 1) if n > 1 else plot_w / 2)
        y = TREND_PAD_TOP + plot_h * (1 - period["mean_grade"] / (len(GRADES) - 1))
        radius = 2.5 + 4.5 * (period["reviewed"] / max_reviewed) ** 0.5 if max_reviewed else 3
        points.append(
            {
                "x": _mirror(x, 0, TREND_W, rtl),
                "y": round(y, 2),
                "r": round(radius, 2),
                **period,
                "mean": _number(period["mean_grade"], 2),
            }
        )
    gridlines = [
        {"value": g, "y": round(TREND_PAD_TOP + plot_h * (1 - g / (len(GRADES) - 1)), 2)} for g in range(len(GRADES))
    ]
    total = sum(entry["totals"].values())
    segments, offset = [], 0.0
    for grade in GRADES:
        width = BAR_W * entry["totals"][grade] / total if total else 0.0
        segments.append(
            {
                "grade": grade,
                "x": _mirror(offset, width, BAR_W, rtl),
                "width": round(width, 2),
                "count": entry["totals"][grade],
            }
        )
        offset += width
    first, last = (series[0]["mean_grade"], series[-1]["mean_grade"]) if series else (None, None)
    return {
        "annotator": entry["annotator"],
        "points": points,
        "polyline": " ".join(f"{p['x']},{p['y']}" for p in points),
        "gridlines": gridlines,
        "x0": TREND_PAD_X,
        "x1": TREND_W - TREND_PAD_X,
        "label_x": _mirror(TREND_PAD_X - 14, 0, TREND_W, rtl),
        "segments": segments,
        "totals": entry["totals"],
        "reviewed": total,
        "first": _number(first, 2),
        "last": _number(last, 2),
        "change": None if first is None else f"{last - first:+.2f}",
        "improved": None if first is None or n < 2 else last > first,
        "first_period": series[0]["period"] if series else None,
        "last_period": series[-1]["period"] if series else None,
    }


def wh_rows(wh: dict, rtl: bool) -> list[dict]:
    """One row per WH-word (most used in authored questions first, then in the file's), each
    series as a bar of its share of that series' questions with a WH-word."""
    counts = {name: wh[name]["counts"] for name in SERIES}
    totals = {name: sum(counts[name].values()) for name in SERIES}
    words = sorted(
        set(counts["authored"]) | set(counts["imported"]),
        key=lambda w: (-counts["authored"].get(w, 0), -counts["imported"].get(w, 0), w),
    )
    top = (
        max((counts[name].get(w, 0) / totals[name] for name in SERIES for w in words if totals[name]), default=0.0)
        or 1.0
    )
    rows = []
    for word in words:
        cells = []
        for name in SERIES:
            n = counts[name].get(word, 0)
            share = n / totals[name] if totals[name] else 0.0
            cells.append(
                {"series": name, "count": n, "pct": _number(100 * share, 1), "bar": _share_bar(share / top, rtl)}
            )
        rows.append({"word": word, "cells": cells})
    return rows


def agreement_rows(agreement: dict, rtl: bool) -> list[dict]:
    """The EM/F1/TLNLS table: all pairs, by origin of the question, then per validator."""

    def row(key: str, label, values: dict, *, user: bool = False) -> dict:
        return {
            "key": key,
            "label": label,
            "user": user,
            "pairs": values["pairs"],
            "metrics": [
                {"name": m, "value": _number(values[m]), "bar": _share_bar(values[m], rtl, METRIC_W)}
                for m in ("em", "f1", "tlnls")
            ],
        }

    rows = [row("all", _("all validations"), agreement)]
    by_origin = agreement.get("by_origin", {})
    labels = {"authored": _("questions authored here"), "imported": _("questions of the imported file")}
    rows += [row(origin, labels[origin], by_origin[origin]) for origin in SERIES if origin in by_origin]
    rows += [
        row(f"validator:{v['validator']}", v["validator"], v, user=True) for v in agreement.get("per_validator", [])
    ]
    return rows


@login_required
@kind_scoped("qa_authoring", fetch=access.access_project_for_staff)
def quality(request, project):
    """HeQ's quality dashboard for reviewers and supervisors: grades per annotator over time,
    question-paragraph overlap, answer position, WH-word diversity, review backlog,
    validation progress and span agreement (EM, F1, TLNLS). Annotators are refused (403),
    non-members see nothing (404)."""
    from annotation.selectors.reports import report_for_viewer

    report = report_for_viewer(project, request.user)
    rtl = project.direction == "rtl"
    max_reviewed = max((p["reviewed"] for e in report["grades_per_annotator"] for p in e["series"]), default=0)
    overlap, positions = report["question_overlap"], report["answer_positions"]

    def overlap_range(b, bins):
        return f"{b / bins:.1f}–{(b + 1) / bins:.1f}"

    def position_range(b, bins):
        return f"{100 * b // bins}–{100 * (b + 1) // bins}%"

    validation = report.get("validation", {})
    context = {
        "project": project,
        "report": report,
        "rtl": rtl,
        "grade_legend": [(g, GRADE_LABELS[g]) for g in GRADES],
        "trends": [grade_trend_chart(e, rtl, max_reviewed=max_reviewed) for e in report["grades_per_annotator"]],
        "trend_size": {"width": TREND_W, "height": TREND_H},
        "bar_size": {"width": BAR_W, "height": BAR_H, "metric": METRIC_W},
        "histograms": [
            {
                "key": "question_overlap",
                "title": _("Question–paragraph word overlap"),
                "hint": _(
                    "Share of a question's words that also occur in its paragraph (HeQ asks for low overlap; appendix C). "
                    "Each series is drawn as a share of its own questions; the dashed line is the warning the authoring "
                    "page shows."
                ),
                "range_header": _("Overlap"),
                "chart": histogram_chart(
                    {name: overlap[name] for name in SERIES},
                    rtl,
                    tick_labels={0: "0", 5: "0.5", 10: "1"},
                    range_label=overlap_range,
                    threshold=overlap["warning_above"],
                ),
            },
            {
                "key": "answer_positions",
                "title": _("Answer position in the paragraph"),
                "hint": _(
                    "Where answers start, from the paragraph's first character to its last (HeQ appendix C, position "
                    "bias). HeQ found a roughly even spread with more answers near the start."
                ),
                "range_header": _("Position"),
                "chart": histogram_chart(
                    {name: positions[name] for name in SERIES},
                    rtl,
                    tick_labels={0: "0%", 5: "50%", 10: "100%"},
                    range_label=position_range,
                ),
            },
        ],
        "overlap_means": {name: _number(overlap[f"mean_{name}"]) for name in SERIES},
        "wh": wh_rows(report["wh_words"], rtl),
        "wh_summary": {
            name: {**report["wh_words"][name], "entropy_text": _number(report["wh_words"][name]["entropy"])}
            for name in SERIES
        },
        "agreement": agreement_rows(report["span_agreement"], rtl),
        "backlog": report["review_backlog"],
        "validation": validation,
        "validation_bar": _share_bar(
            validation["complete"] / validation["questions"] if validation.get("questions") else 0.0, rtl
        ),
    }
    return render(request, "qa/quality.html", context)


# The page's yes / no / unset choices for a verdict, as the form posts them.
_VERDICTS = {"yes": True, "no": False, "": None}


def _whole_or_text(value: str):
    """A form field as the service takes it: a whole number when it reads as one, else the
    text, which the service refuses naming the field."""
    text = (value or "").strip()
    return int(text) if text.isdigit() else text


@login_required
@kind_scoped("qa_authoring", fetch=access.access_project_for_supervisor)
def question_audit(request, project):
    """HeQ §3.4's final audit for supervisors: draw the sample, mark each question, read the
    shares. Plain forms (no script); every change goes through the audit service, and the
    page comes back by redirect so a reload does not post again."""
    if request.method == "POST":
        try:
            if request.POST.get("action") == "draw":
                drawn = audit_services.audit_sample_draw(
                    user=request.user,
                    slug=project.slug,
                    per_source=_whole_or_text(request.POST.get("per_source")),
                    seed=_whole_or_text(request.POST.get("seed")),
                )
                messages.success(request, _("Drew %(n)s questions.") % {"n": sum(drawn["drawn"].values())})
            else:
                verdict = request.POST.get("question_correct", "")
                if verdict not in ("yes", "no"):
                    raise ApplicationError(_("Choose whether the question is correct."))
                audit_services.audit_mark(
                    user=request.user,
                    slug=project.slug,
                    audit_id=_whole_or_text(request.POST.get("id")),
                    question_correct=_VERDICTS[verdict],
                    span_correct=_VERDICTS.get(request.POST.get("span_correct", ""), "invalid"),
                )
        except ApplicationError as exc:
            messages.error(request, exc.message)
        return redirect("question-audit-qa", slug=project.slug)
    sample = audit_services.audit_sample_for_supervisor(user=request.user, slug=project.slug)
    rows = [{**row, "parts": paragraph_parts(row["context"], row["answer"])} for row in sample["results"]]
    context = {
        "project": project,
        "figures": sample["figures"],
        "figure_rows": _audit_rows(sample["figures"]),
        "rows": rows,
    }
    return render(request, "qa/question_audit.html", context)


def _audit_rows(figures: dict | None) -> list[dict]:
    """The shares table: a row per source, then the total (source None), each share in
    percent with its interval."""
    if not figures:
        return []

    def shares(row: dict) -> list[dict]:
        return [
            {
                **share,
                "percent": None if share["share"] is None else 100 * share["share"],
                "low": None if share["ci_low"] is None else 100 * share["ci_low"],
                "high": None if share["ci_high"] is None else 100 * share["ci_high"],
            }
            for share in (row["question_correct"], row["span_correct"])
        ]

    rows = [{"source": source, **row, "shares": shares(row)} for source, row in figures["sources"].items()]
    return [*rows, {"source": None, **figures["all"], "shares": shares(figures["all"])}]
