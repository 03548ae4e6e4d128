"""The Release page (/p/<slug>/release/): near-duplicate pairs side by side with keep /
remove buttons, the split report and the leak check, each with the button that starts its
job. Supervisors act; reviewers read. The buttons call the API (api/views/curation.py) with
the session from static/release/release.js."""

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from annotation import access
from annotation.kinds.registry import get_kind
from annotation.models import Job
from annotation.release import duplicates, splits
from annotation.release.curation_jobs import pair_kind

PAIRS_PER_PAGE = 50


@login_required
@require_GET
def release(request, slug):
    project = access.access_project_for_staff(request.user, slug)
    kind = get_kind(project.kind)
    if kind.release_split_shares is None:
        raise Http404("This project's kind has no release stage.")
    with_pairs = pair_kind(kind)
    pairs, left_out = None, 0
    if with_pairs:
        left_out = duplicates.items_left_out_of_search(project)
        decision = request.GET.get("decision") or None
        if decision not in (None, "keep", "remove", "none"):
            decision = None
        paginator = Paginator(
            duplicates.duplicate_pairs_for_project(user=request.user, slug=slug, decision=decision), PAIRS_PER_PAGE
        )
        pairs = paginator.get_page(request.GET.get("page"))
    running = {
        job.kind: job.pk
        for job in Job.objects.filter(
            project=project,
            kind__in=("duplicates", "splits", "leaks"),
            status__in=(Job.Status.QUEUED, Job.Status.RUNNING),
        )
    }
    split_report = splits.split_report_for_project(user=request.user, slug=slug)
    is_supervisor = access.supervises(request.user, project)
    return render(
        request,
        "release/release.html",
        {
            "project": project,
            "with_pairs": with_pairs,
            "pairs": pairs,
            "left_out": left_out,
            "split_report": split_report,
            "split_rows": [
                {"name": name, "share": share, "count": split_report.get("counts", {}).get(name, 0)}
                for name, share in split_report["shares"].items()
            ],
            "default_shares": kind.release_split_shares,
            "leak_report": splits.leak_report_for_project(user=request.user, slug=slug),
            "is_supervisor": is_supervisor,
            # A search that found nothing says so (not "run the search").
            "last_search": Job.objects.filter(project=project, kind="duplicates", status=Job.Status.DONE)
            .order_by("-id")
            .first(),
            "messages_js": {
                "queued": _("Job %(job)s is running…") % {"job": "{job}"},
                "done": _("Finished; reloading the page."),
                "failed": _("The job failed:"),
                "confirmRemoveAll": _("Remove the later item of every undecided pair?"),
                "saved": _("Saved."),
            },
            "config": {
                "duplicates": f"/api/projects/{project.slug}/duplicates/",
                "splits": f"/api/projects/{project.slug}/splits/",
                "leaks": f"/api/projects/{project.slug}/leaks/",
                "job": "/api/jobs/{id}/",
                "running": running,
            },
        },
    )
