"""The supervisor's annotator-quality page (/p/<slug>/quality/) and the adjudication page
(/p/<slug>/adjudication/). Both render the figures of annotation.selectors.annotator_quality on the
server; their scripts (static/quality/) sort the table and send the actions to the REST API
(moving a member back to trial, deciding an item) with the session."""

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotation import access
from annotation.kinds.registry import get_kind
from annotation.models import Membership
from annotation.selectors.annotator_quality import (
    adjudication_queue_for_project,
    agreement_with_and_without_adjudicated,
    annotator_quality_for_project,
)

QUEUE_PAGE_SIZE = 20


@login_required
@require_GET
def annotator_quality_page(request, slug):
    project = access.access_project_for_supervisor(request.user, slug)
    kind = get_kind(project.kind)
    rows = annotator_quality_for_project(project)
    return render(
        request,
        "quality/annotators.html",
        {
            "project": project,
            "rows": rows,
            "has_coherence": any(row["coherence"] for row in rows),
            "has_suggestions": any(row["suggestions"] for row in rows),
            "threshold": kind.project_settings(project)["quality_flag_below"],
            "categorical": bool(kind.labels),
            "trial": Membership.Status.TRIAL,
        },
    )


@login_required
@require_GET
def adjudication_page(request, slug):
    project = access.access_project_for_adjudicator(request.user, slug)
    kind = get_kind(project.kind)
    supervisor = access.supervises(request.user, project)
    queue = adjudication_queue_for_project(project, request.user, names=supervisor)
    page = Paginator(queue, QUEUE_PAGE_SIZE).get_page(request.GET.get("page"))
    return render(
        request,
        "quality/adjudication.html",
        {
            "project": project,
            "page": page,
            "labels": kind.labels,
            "agreement": agreement_with_and_without_adjudicated(project),
            "supervisor": supervisor,
        },
    )
