"""HTML pages. Like the API, they only parse, check access and call services; the
annotator page talks to the REST API with the session (CSRF-protected) from static JS."""

from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import LoginView
from django.db.models import Count
from django.http import Http404, JsonResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from annotation import access, throttle
from annotation.errors import NotFound, PermissionDenied
from annotation.kinds.registry import get_kind
from annotation.models import Item, Job, Membership


@require_GET
def healthz(request):
    return JsonResponse({"status": "ok"})


class ThrottledLoginView(LoginView):
    """Django's login page, refusing a username after repeated failures from one address."""

    def post(self, request, *args, **kwargs):
        username = request.POST.get("username", "")
        if throttle.login_blocked(request, username):
            form = self.get_form()
            form.add_error(None, _("Too many failed attempts. Wait a few minutes and try again."))
            return self.render_to_response(self.get_context_data(form=form), status=429)
        response = super().post(request, *args, **kwargs)
        if request.user.is_authenticated:
            throttle.login_succeeded(request, username)
        else:
            throttle.login_failed(request, username)
        return response


@login_required
def home(request):
    memberships = {m.project_id: m for m in Membership.objects.filter(user=request.user)}
    projects = []
    for project in access.projects_visible_to(request.user).order_by("slug"):
        membership = memberships.get(project.pk)
        projects.append({"project": project, "role": membership.role if membership else "admin", "membership": membership})
    return render(request, "annotation/home.html", {"projects": projects})



@login_required
def annotate(request, slug):
    try:
        membership = access.access_membership_for_annotator(request.user, slug)
    except NotFound:
        raise Http404 from None
    except PermissionDenied as exc:
        return render(request, "annotation/refused.html", {"message": exc.message}, status=403)
    project = membership.project
    kind = get_kind(project.kind)
    config = {
        "slug": project.slug,
        "kind": project.kind,
        "nextUrl": f"/api/projects/{project.slug}/next/",
        "submitUrl": "/api/assignments/{id}/submit/",
        "progressUrl": f"/api/projects/{project.slug}/progress/",
    }
    return render(request, kind.template, {"project": project, "config": config})


@login_required
def project_overview(request, slug):
    try:
        project = access.access_project_for_staff(request.user, slug)
    except NotFound:
        raise Http404 from None
    except PermissionDenied as exc:
        return render(request, "annotation/refused.html", {"message": exc.message}, status=403)
    counts = dict(Item.objects.filter(project=project).order_by().values_list("status").annotate(n=Count("pk")))
    members = Membership.objects.filter(project=project).select_related("user").order_by("role", "user__username")
    jobs = Job.objects.filter(project=project).order_by("-id")[:10]
    return render(
        request,
        "annotation/project.html",
        {
            "project": project,
            "counts": [(status, counts.get(status, 0)) for status in Item.Status.values],
            "total": sum(counts.values()),
            "members": members,
            "jobs": jobs,
        },
    )


