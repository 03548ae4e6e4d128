"""The author's revision page (FarsTail §3.2): their items that failed a relabel round, with
the labels cast (counts only, never who cast them), a form to revise premise/hypothesis and
a Withdraw button. The page's static JS posts to `POST /api/items/{id}/revise/` with the
session and CSRF token; this view only checks access and hands the list over through
`json_script` (docs/security.md "Pages")."""

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse

from annotation.kinds.registry import get_kind

from .authors import access_project_for_author
from .revisions import revisions_for_author


@login_required
def revisions(request, slug):
    """Whoever may read the project's revisions (`access_project_for_author`: its members and
    the authors of an authoring project linked into it; others, and missing projects, get
    the same 404; disqualified authors 403). On an `nli_authoring` project the page sends the
    author on to its linked relabel project, where the generated items live."""
    project = access_project_for_author(request.user, slug).project
    if project.kind == "nli_authoring":
        target = get_kind(project.kind).settings_for(project.settings)["relabel_project"]
        if not target:
            raise Http404
        return redirect(reverse("revisions", args=[target]))
    rows = revisions_for_author(user=request.user, slug=slug)
    config = {"slug": project.slug, "reviseUrl": "/api/items/{id}/revise/", "items": rows}
    return render(request, "nli/revisions.html", {"project": project, "config": config, "count": len(rows)})
