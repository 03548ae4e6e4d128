"""The leaderboard of model evaluations (/p/<slug>/leaderboard/): every evaluation of the
project with its headline figures and 95 % intervals drawn as bars with whiskers, an upload
form (supervisors), every figure of each evaluation with the confusion matrix as a heat map,
and the paired comparison of two of them (`?a=&b=`). Server-rendered; geometry in SVG
attributes, colours in static CSS (the CSP forbids style attributes); a small script polls
evaluations still being scored and reloads the page when one is done."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import get_language_bidi, gettext_lazy
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from annotation import access
from annotation.errors import ApplicationError, NotFound, PermissionDenied
from annotation.kinds.registry import get_kind
from annotation.models import Evaluation, Item
from annotation.release import evaluation as evaluations
from annotation.release import evaluation_figures, predictions
from annotation.selectors.evaluations import evaluation_compare, evaluation_detail
from annotation.templatetags.mashov import word

# Display names of the leaderboard's columns (the figures' dotted paths).
COLUMN_TITLES = {
    "accuracy": gettext_lazy("Accuracy"),
    "macro_f1": gettext_lazy("Macro F1"),
    "weighted_f1": gettext_lazy("Weighted F1"),
    "subsets.hard(overlap).easy": gettext_lazy("Easy (overlap)"),
    "subsets.hard(overlap).hard": gettext_lazy("Hard (overlap)"),
    "subsets.hard(hypothesis).easy": gettext_lazy("Easy (hypothesis-only)"),
    "subsets.hard(hypothesis).hard": gettext_lazy("Hard (hypothesis-only)"),
    "exact_match": gettext_lazy("Exact match"),
    "f1": gettext_lazy("F1"),
    "tlnls": gettext_lazy("TLNLS"),
    "answerable.f1": gettext_lazy("F1, answerable"),
    "unanswerable.f1": gettext_lazy("F1, unanswerable"),
    "soft_coherence": gettext_lazy("Soft coherence"),
    "hard_coherence": gettext_lazy("Hard coherence"),
}
# The other parts of a figure's path in the evaluation's full table ("per_class.neutral.recall").
FIGURE_WORDS = {
    "per_class": gettext_lazy("per class"),
    "precision": gettext_lazy("precision"),
    "recall": gettext_lazy("recall"),
    "support": gettext_lazy("support"),
    "subsets": gettext_lazy("subsets"),
    "items": gettext_lazy("items"),
}
BAR_WIDTH = 120
BAR_HEIGHT = 16
HEAT_LEVELS = 5


def _x(share: float, rtl: bool) -> float:
    share = min(max(share, 0.0), 1.0)
    return round(BAR_WIDTH * (1.0 - share if rtl else share), 2)


def figure_cell(figure, rtl: bool) -> dict | None:
    """A figure with the geometry of its bar (0..1 grows from inline-start) and whisker."""
    if not isinstance(figure, dict) or figure.get("value") is None:
        return None
    value, low, high = figure["value"], figure.get("ci_low"), figure.get("ci_high")
    width = round(BAR_WIDTH * min(max(value, 0.0), 1.0), 2)
    return {
        **figure,
        "bar_x": round(BAR_WIDTH - width, 2) if rtl else 0,
        "bar_width": width,
        "low_x": _x(low, rtl) if low is not None else None,
        "high_x": _x(high, rtl) if high is not None else None,
    }


def figure_name(path: str) -> str:
    """A figure's path in people's words: its column title, else its parts named one by one
    ("per_class.neutral.recall" reads "per class › neutral › recall" in the interface language)."""
    if path in COLUMN_TITLES:
        return str(COLUMN_TITLES[path])
    return " › ".join(str(COLUMN_TITLES.get(part) or FIGURE_WORDS.get(part) or word(part)) for part in path.split("."))


def _figure_row(name: str, figure) -> dict:
    """One line of an evaluation's table: a figure with its interval, or a count."""
    name = figure_name(name)
    if isinstance(figure, dict):
        return {
            "name": name,
            "estimate": True,
            "value": figure.get("value"),
            "ci_low": figure.get("ci_low"),
            "ci_high": figure.get("ci_high"),
        }
    return {"name": name, "estimate": False, "value": figure}


def heat_rows(confusion: dict | None) -> list[dict]:
    """The confusion matrix's rows with a heat level (0..5) per cell, by the row's share."""
    if not confusion:
        return []
    rows = []
    for index, (label, counts) in enumerate(zip(confusion["labels"], confusion["matrix"])):
        total = sum(counts) or 1
        rows.append(
            {
                "label": label,
                "cells": [
                    {"n": n, "level": round(HEAT_LEVELS * n / total), "diagonal": column == index}
                    for column, n in enumerate(counts)
                ],
            }
        )
    return rows


def _rows(project, scorer, rtl: bool) -> list[dict]:
    rows = []
    for evaluation in (
        Evaluation.objects.filter(project=project).select_related("job").defer("per_item").order_by("-id")
    ):
        figures = evaluation.figures
        rows.append(
            {
                "evaluation": evaluation,
                "status": evaluation.status,
                "cells": [figure_cell(evaluation_figures.figure_at(figures, column), rtl) for column in scorer.columns],
                "all": [
                    _figure_row(name, figure)
                    for name, figure in evaluation_figures.flatten_figures(figures)
                    if name != "confusion"
                ]
                if figures
                else [],
                "heat": heat_rows((figures or {}).get("confusion")),
                "confusion_labels": ((figures or {}).get("confusion") or {}).get("labels", []),
            }
        )
    return rows


def _comparison(request, project, scorer) -> tuple[dict | None, list[str]]:
    a, b = request.GET.get("a"), request.GET.get("b")
    if not a or not b:
        return None, []
    try:
        compared = evaluation_compare(user=request.user, slug=project.slug, a=a, b=b)
    except (NotFound, PermissionDenied):
        raise
    except ApplicationError as exc:
        return None, [error.message for error in exc.errors]
    compared["rows"] = [
        {"name": COLUMN_TITLES.get(column, column), "figure": evaluation_figures.figure_at(compared["figures"], column)}
        for column in scorer.columns
    ]
    return compared, []


# Items read for the slice form's list of attributes (their extra fields): a hint, the
# API takes any attribute an item has.
SLICE_HINT_ITEMS = 500


SLICE_TITLES = {"split": gettext_lazy("Split"), "source": gettext_lazy("Source of the item")}


def _slice_attributes(project) -> list[dict]:
    """(value, title) of the attributes the slice form offers; imported columns by name."""
    found = dict.fromkeys(SLICE_TITLES)
    for extra in Item.objects.filter(project=project).values_list("payload__extra", flat=True)[:SLICE_HINT_ITEMS]:
        if isinstance(extra, dict):
            found.update(dict.fromkeys(map(str, extra)))
    return [{"value": name, "title": SLICE_TITLES.get(name, name)} for name in found]


def _slices(request, project) -> tuple[dict | None, list[str]]:
    """The figures of one evaluation by slice (`?slice_of=<id>&slice=<attribute>`)."""
    evaluation_id, attribute = request.GET.get("slice_of"), request.GET.get("slice")
    if not evaluation_id or attribute is None:
        return None, []
    if not evaluation_id.isdigit() or len(evaluation_id) > 18:
        return None, [_("Choose an evaluation.")]
    try:
        detail = evaluation_detail(
            user=request.user, slug=project.slug, evaluation_id=int(evaluation_id), slice_by=attribute
        )
    except NotFound:
        return None, [_("Choose an evaluation.")]
    except PermissionDenied:
        raise
    except ApplicationError as exc:
        return None, [error.message for error in exc.errors]
    figures = [name for name in next(iter(detail["slices"].values()), {}) if name not in ("items", "ci")]
    return {
        "evaluation": detail,
        "attribute": attribute,
        "attribute_title": SLICE_TITLES.get(attribute, attribute),
        "figures": [{"name": name, "title": figure_name(name)} for name in figures],
        "rows": [
            {
                "value": value,
                "items": row["items"],
                "cells": [{"value": row.get(name), "ci": row["ci"].get(name) or [None, None]} for name in figures],
            }
            for value, row in detail["slices"].items()
        ],
    }, []


def _page(request, slug: str, *, errors=(), form=None):
    project = access.access_project_for_staff(request.user, slug)
    scorer = get_kind(project.kind).evaluation_scorer()
    rtl = get_language_bidi()
    splits = sorted(
        set(Item.objects.filter(project=project).exclude(split="").values_list("split", flat=True).distinct())
        | {"test"}
    )
    comparison, compare_errors = _comparison(request, project, scorer) if scorer else (None, [])
    sliced, slice_errors = _slices(request, project) if scorer else (None, [])
    context = {
        "project": project,
        "evaluable": scorer is not None,
        "columns": [
            {"path": column, "title": COLUMN_TITLES.get(column, column)}
            for column in (scorer.columns if scorer else ())
        ],
        "primary": scorer.primary if scorer else "",
        "rows": _rows(project, scorer, rtl) if scorer else [],
        "splits": [*splits, predictions.ALL_SPLITS],
        "formats": [f for f in predictions.FORMATS if f != "squad" or (scorer and scorer.accepts_squad_dict)],
        "is_supervisor": access.supervises(request.user, project),
        "errors": list(errors),
        "form": form or {"split": "test"},
        "comparison": comparison,
        "compare_errors": compare_errors,
        "sliced": sliced,
        "slice_errors": slice_errors,
        "slice_attributes": _slice_attributes(project) if scorer else [],
        "slice_form": {"of": request.GET.get("slice_of", ""), "slice": request.GET.get("slice", "")},
        "bar_width": BAR_WIDTH,
        "bar_height": BAR_HEIGHT,
    }
    return render(request, "release/leaderboard.html", context)


@login_required
@require_GET
def leaderboard(request, slug):
    """The page; with ?template=jsonl (and split) the predictions file to fill in instead."""
    if request.GET.get("template") == "jsonl":
        return _predictions_template(request, slug)
    return _page(request, slug)


def _predictions_template(request, slug: str):
    project = access.access_project_for_staff(request.user, slug)
    scorer = get_kind(project.kind).evaluation_scorer()
    if scorer is None:
        raise NotFound()
    split = request.GET.get("split") or None
    try:
        content = predictions.predictions_template(project, scorer, split)
    except ApplicationError as exc:
        return _page(request, slug, errors=[e.as_dict() for e in exc.errors], form={"split": split or "test"})
    name = f"{project.slug}-{split or 'test'}-predictions.jsonl"
    return HttpResponse(
        content,
        content_type="application/x-ndjson; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


@login_required
@require_POST
def leaderboard_upload(request, slug):
    """The upload form: the API's POST. A refused file comes back on the page with every error
    listed (200, as a re-displayed form: the API answers 400/409)."""
    upload = request.FILES.get("file")
    form = {"name": request.POST.get("name", ""), "split": request.POST.get("split", "test")}
    try:
        access.access_project_for_supervisor(request.user, slug)
        if upload is None:
            return _page(
                request, slug, errors=[{"field": "file", "message": _("Choose a predictions file.")}], form=form
            )
        evaluation = evaluations.evaluation_request(
            user=request.user,
            slug=slug,
            data=upload.read(),
            filename=upload.name or "",
            name=request.POST.get("name"),
            split=request.POST.get("split"),
            fmt=request.POST.get("format", ""),
        )
    except (NotFound, PermissionDenied):
        raise
    except ApplicationError as exc:
        return _page(request, slug, errors=[error.as_dict() for error in exc.errors], form=form)
    messages.success(
        request, _("“%(name)s” is being scored (evaluation %(id)s).") % {"name": evaluation.name, "id": evaluation.pk}
    )
    return redirect("leaderboard", slug=slug)
