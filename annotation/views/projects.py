"""The project pages: home, health check, the annotate page, the project overview, members and
import. Like the API, they only parse, check access and call services; the annotator page
talks to the REST API with the session (CSRF-protected) from static JS."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from annotation import access
from annotation.errors import ApplicationError, InvalidInput, NotFound, PermissionDenied
from annotation.kinds.registry import get_kind, installed_kind
from annotation.models import Item, Job, Membership
from annotation.selectors.annotator_quality import annotator_quality_for_project
from annotation.selectors.guides import guide_for_project
from annotation.selectors.items import annotator_label
from annotation.selectors.reports import status_counts_for_project
from annotation.services import imports as import_services
from annotation.services import projects as project_services
from annotation.templatetags.mashov import field_name
from annotation.wording import join_clauses, join_list


@require_GET
def healthz(request):
    return JsonResponse({"status": "ok"})


@login_required
def home(request):
    memberships = {m.project_id: m for m in Membership.objects.filter(user=request.user)}
    projects = []
    for project in access.projects_visible_to(request.user).order_by("slug"):
        membership = memberships.get(project.pk)
        projects.append(
            {
                "project": project,
                "role": membership.role if membership else "admin",
                "membership": membership,
                # Listed all the same, marked: its pages say the kind is missing.
                "kind_installed": installed_kind(project.kind) is not None,
            }
        )
    return render(
        request, "annotation/home.html", {"projects": projects, "can_manage": access.can_manage_users(request.user)}
    )


@login_required
def annotate(request, slug):
    membership = access.access_membership_for_annotator(request.user, slug)
    project = membership.project
    kind = get_kind(project.kind)
    settings = kind.settings_for(project.settings, project.language)
    config = {
        "slug": project.slug,
        "kind": project.kind,
        "nextUrl": f"/api/projects/{project.slug}/next/",
        "submitUrl": "/api/assignments/{id}/submit/",
        "progressUrl": f"/api/projects/{project.slug}/progress/",
        "skipUrl": "/api/assignments/{id}/skip/",
        "draftUrl": "/api/assignments/{id}/draft/",
        "heartbeatUrl": "/api/assignments/{id}/heartbeat/",
        # Input renews the claim at most this often: well inside the idle release period.
        "heartbeatSeconds": max(2, min(60, settings["idle_release_seconds"] // 3)),
        "mineUrl": f"/api/projects/{project.slug}/mine/",
        "editUrl": "/api/annotations/{id}/",
        "networkError": _("The server could not be reached. Check your connection and try again."),
    }
    return render(request, kind.template, {"project": project, "config": config, "guide": guide_for_project(project)})


def _redirect_with_message(request, slug: str, message: str, *, error: bool = False):
    (messages.error if error else messages.success)(request, message)
    return redirect("project", slug=slug)


def _rows_text(rows: list[int]) -> str:
    """Row numbers as ranges: [1, 2, 3, 7] reads "1-3, 7"."""
    runs: list[list[int]] = []
    for row in sorted(set(rows)):
        if runs and row == runs[-1][1] + 1:
            runs[-1][1] = row
        else:
            runs.append([row, row])
    return join_list(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _column(field: str) -> str:
    """A file's column by the name the item page gives it, with the file's own name beside
    it where they differ ("הנחה (premise)"): the person finds it in the file by the latter."""
    label = str(field_name(field))
    return field if label == field else f"{label} ({field})"


def _held_out_text(result) -> list[str]:
    """The rows the kind's import filters kept out, one sentence per reason with its rows."""
    if not result.held_out:
        return []
    rows_of: dict[str, list[int]] = {}
    for held in result.held_out_rows:
        rows_of.setdefault(held.reason, []).append(held.row)
    reasons = join_clauses(
        _("%(reason)s (rows %(rows)s)") % {"reason": reason, "rows": _rows_text(rows)}
        for reason, rows in rows_of.items()
    )
    return [_("%(n)s rows held out: %(reasons)s.") % {"n": result.held_out, "reasons": reasons}]


def _error_text(exc: ApplicationError) -> str:
    """A form's errors as a person reads them: each problem once, with the rows it was found
    in and the file's column it concerns; columns missing from every bad row of a file (one
    made for another kind) are named together, once, as columns that do not fit the kind."""
    rows_of: dict[tuple, list[int]] = {}
    for error in exc.errors:
        rows_of.setdefault((error.field, error.message), []).extend([] if error.row is None else [error.row])
    bad_rows = {error.row for error in exc.errors if error.row is not None}
    required = _("is required")
    missing = [
        field
        for (field, message), rows in rows_of.items()
        if message == required and field and len(bad_rows) > 1 and set(rows) == bad_rows
    ]
    lines = []
    if missing:
        lines.append(
            _("These columns do not fit this kind of project; they are missing or empty: %(columns)s.")
            % {"columns": join_list(f"“{_column(field)}”" for field in missing)}
        )
    for (field, message), rows in rows_of.items():
        if field in missing and message == required:
            continue
        if rows and field and field != "file":
            text = _("column “%(column)s”") % {"column": _column(field)} + ": " + message
        else:
            text = message
        if len(rows) > 1:
            text = _("rows %(rows)s") % {"rows": _rows_text(rows)} + ": " + text
        elif rows:
            text = _("row %(row)s") % {"row": rows[0]} + ": " + text
        lines.append(text)
    return join_clauses(lines[:20])


def _form_action(request, slug: str, action) -> HttpResponse:
    """Run a supervisor form's service call; back to the project page with its message."""
    try:
        message = action()
    except (NotFound, PermissionDenied):
        raise  # the 404 or 403 page (AccessErrorPageMiddleware), as every page answers a refusal
    except ApplicationError as exc:
        return _redirect_with_message(request, slug, _error_text(exc), error=True)
    return _redirect_with_message(request, slug, message)


@login_required
@require_POST
def project_member_add(request, slug):
    def action():
        project_services.membership_add(
            actor=request.user,
            slug=slug,
            username=request.POST.get("username", ""),
            role=request.POST.get("role", ""),
            status=request.POST.get("status", "trial"),
            trusted=request.POST.get("trusted") == "on",
        )
        return _("Member added.")

    return _form_action(request, slug, action)


@login_required
@require_POST
def project_member_update(request, slug, username):
    def action():
        changes = {
            "status": request.POST.get("status", ""),
            "trusted": request.POST.get("trusted") == "on",
            "adjudicator": request.POST.get("adjudicator") == "on",
        }
        project_services.membership_update(actor=request.user, slug=slug, username=username, changes=changes)
        return _("Member updated.")

    return _form_action(request, slug, action)


@login_required
@require_POST
def project_import(request, slug):
    def action():
        project = access.access_project_for_supervisor(request.user, slug)
        upload = request.FILES.get("file")
        if upload is None:
            raise InvalidInput(_("a file is required"), field="file")
        if upload.size > settings.MASHOV_MAX_IMPORT_BYTES:
            raise InvalidInput(
                _("the file is larger than %(bytes)s bytes") % {"bytes": settings.MASHOV_MAX_IMPORT_BYTES}, field="file"
            )
        options = import_services.import_options_clean(request.POST.get("split"), request.POST.get("labels_final"))
        result = import_services.items_import(
            project=project,
            data=upload,
            fmt=request.POST.get("format", ""),
            filename=upload.name or "",
            user=request.user,
            options=options,
        )
        if result.job:
            return _("The file is being imported in the background (job %(job)s).") % {"job": result.job}
        message = _("Imported %(created)s items (%(skipped)s already present).") % {
            "created": result.created,
            "skipped": result.skipped,
        }
        return " ".join([message, *_held_out_text(result)])

    return _form_action(request, slug, action)


@login_required
def project_overview(request, slug):
    project = access.access_project_for_staff(request.user, slug)
    # The kept counts (one query whatever the size), probes left out as in the report.
    counts = status_counts_for_project(project)
    members = Membership.objects.filter(project=project).select_related("user").order_by("role", "user__username")
    jobs = Job.objects.filter(project=project).order_by("-id")[:10]
    is_supervisor = access.supervises(request.user, project)
    kind = get_kind(project.kind)
    return render(
        request,
        "annotation/project.html",
        {
            "project": project,
            "counts": [(label, counts.get(status, 0)) for status, label in Item.Status.choices],
            "total": counts["total"],
            # Names are for supervisors; reviewers see the exports' pseudonyms.
            "members": [(m, annotator_label(project, m.user, names=is_supervisor)) for m in members],
            "jobs": jobs,
            "is_supervisor": is_supervisor,
            "notices": kind.supervisor_notices(project) if is_supervisor else [],
            # The annotators' figures (the quality page's, compact): names are for supervisors.
            "quality": annotator_quality_for_project(project) if is_supervisor else None,
            "adjudicates": access.adjudicates(request.user, project) and bool(kind.labels),
            "roles": Membership.Role.choices,
            "statuses": Membership.Status.choices,
            "formats": kind.format_choices(),
            "evaluable": kind.evaluation_scorer() is not None,
            "release_page": kind.release_split_shares is not None,
            "kind_links": [
                {"url": reverse(link.url_name, args=[project.slug]), "text": link.text}
                for link in kind.project_links(project)
                if is_supervisor or not link.supervisors_only
            ],
            # The agreement dashboard, for every kind that has agreement or consensus figures.
            "dashboard_page": kind.computes_agreement or kind.aggregates_by_consensus,
        },
    )
