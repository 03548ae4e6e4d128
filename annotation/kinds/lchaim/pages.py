"""The LCHAIM pages: the supervisor's sampling form and the results page with
Table 1 (translation_rating) or Table 2 (label_test, read from that kind's results), with
CSV/JSON downloads."""

import csv
import io
import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.serializers.json import DjangoJSONEncoder
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from annotation import access
from annotation.errors import ApplicationError, NotFound, PermissionDenied
from annotation.gates import kind_scoped, require_kind
from annotation.kinds.label_test.results import label_test_results_for_project, table2_csv_rows
from annotation.kinds.registry import get_kind
from annotation.kinds.translation.candidates import CRITERIA
from annotation.kinds.translation.results import table1_csv_rows, translation_table1
from annotation.kinds.translation.sampling import STRATUM_FIELDS, items_sample
from annotation.models import Item
from annotation.selectors.names import names_for_viewer
from annotation.services.exports import UTF8_BOM, csv_neutralise
from annotation.views.dashboard import recompute_context
from annotation.wording import join_clauses

KINDS = ("translation_rating", "label_test")


def _project(request, slug):
    return require_kind(access.access_project_for_staff(request.user, slug), *KINDS)


def _tables(project, user) -> dict:
    if project.kind == "translation_rating":
        return {"table1": translation_table1(project)}
    return {"table2": names_for_viewer(label_test_results_for_project(project), project, user)}


@login_required
@require_GET
@kind_scoped(*KINDS, fetch=access.access_project_for_staff)
def lchaim_results(request, project):
    tables = _tables(project, request.user)
    table1 = tables.get("table1")
    rows = []
    if table1:
        for row in table1["rows"]:
            cells = []
            for criterion in CRITERIA:
                cell = row["cells"].get(criterion)
                cells.append(
                    {"criterion": criterion, "cell": cell, "winner": table1["winners"].get(criterion) == row["system"]}
                )
            rows.append({"system": row["system"], "cells": cells})
    table2 = tables.get("table2")
    table2_rows = []
    if table2:
        named = [(r["annotator"], r, False) for r in table2["annotators"]] + [
            (_("Mean of testers"), table2["group"], True),
            (_("Majority label"), table2["majority"], True),
        ]
        for name, r, group in named:
            pct = lambda v: None if v is None else 100 * v  # noqa: E731 — Table 2 prints percentages
            classes = [
                pct(r["per_class"].get(label, {}).get(f))
                for label in table2["labels"]
                for f in ("precision", "recall", "f1")
            ]
            table2_rows.append(
                {
                    "name": name,
                    "n": r["n"],
                    "accuracy": pct(r["accuracy"]),
                    "f1": pct(r["f1"]),
                    "classes": classes,
                    "group": group,
                }
            )
    sampled = Item.objects.filter(project=project, in_sample=True).count()
    settings = get_kind(project.kind).project_settings(project)
    is_supervisor = access.supervises(request.user, project)
    return render(
        request,
        "lchaim/results.html",
        {
            "project": project,
            "table1": table1,
            "table1_rows": rows,
            "criteria": CRITERIA,
            "table2": table2,
            "table2_rows": table2_rows,
            "strata": list(STRATUM_FIELDS),
            "sampled": sampled,
            "total": Item.objects.filter(project=project).count(),
            "sample_size": settings["sample_size"],
            # Staff (supervisors and reviewers, who are not blind raters) see which system is released.
            "released_system": settings.get("released_system", ""),
            "is_supervisor": is_supervisor,
            "recompute": recompute_context(request.user, project),
        },
    )


@login_required
@require_POST
def lchaim_sample(request, slug):
    try:
        project = require_kind(access.access_project_for_supervisor(request.user, slug), *KINDS)
        n, seed = request.POST.get("n", ""), request.POST.get("seed", "")
        result = items_sample(
            project=project,
            user=request.user,
            n=int(n) if n.strip().isascii() and n.strip().isdigit() else (None if not n.strip() else n),
            stratum=request.POST.get("stratum") or None,
            seed=int(seed)
            if seed.strip().isascii() and seed.strip().isdigit()
            else (None if not seed.strip() else seed),
        )
    except (NotFound, PermissionDenied):
        raise  # the 404 or 403 page (AccessErrorPageMiddleware), as every page answers a refusal
    except ApplicationError as exc:
        # Each problem named by its field's label on the form, not by the field's code.
        labels = {"n": _("Items"), "stratum": _("Stratum"), "seed": _("Seed (optional)")}
        messages.error(
            request,
            join_clauses(f"{labels[e.field]}: {e.message}" if e.field in labels else e.message for e in exc.errors),
        )
        return redirect("lchaim-results", slug=slug)
    messages.success(
        request,
        _("Sampled %(n)s of %(population)s items by %(stratum)s (seed %(seed)s).")
        % {"n": result.n, "population": result.population, "stratum": result.stratum, "seed": result.seed},
    )
    return redirect("lchaim-results", slug=slug)


@login_required
@require_GET
def lchaim_download(request, slug, table, fmt):
    try:
        project = _project(request, slug)
    except (NotFound, PermissionDenied):
        raise Http404 from None
    tables = _tables(project, request.user)
    if table not in tables or fmt not in ("csv", "json"):
        raise Http404
    data = tables[table]
    name = f"{project.slug}-{table}.{fmt}"
    if fmt == "json":
        response = HttpResponse(
            json.dumps(data, cls=DjangoJSONEncoder, ensure_ascii=False, indent=2),
            content_type="application/json; charset=utf-8",
        )
    else:
        rows = table1_csv_rows(data) if table == "table1" else table2_csv_rows(data)
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        for row in rows:
            writer.writerow(
                [
                    csv_neutralise("" if v is None else ("true" if v is True else "false" if v is False else str(v)))
                    for v in row
                ]
            )
        response = HttpResponse((UTF8_BOM + buffer.getvalue()).encode("utf-8"), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    response["Cache-Control"] = "no-store"
    return response
