"""The kind-scoped gate: a page that belongs to the projects of some kinds does not exist on
a project of another kind, so it answers 404 there, after the access check has answered
whether the caller may see the project at all (a refusal stays a refusal)."""

from collections.abc import Callable
from functools import wraps

from annotation.errors import NotFound
from annotation.models import Project


def require_kind(project: Project, *kinds: str) -> Project:
    """`project`, when its kind is one of `kinds` (codes of the registry); NotFound (the 404
    page, or the API's 404 body) otherwise."""
    if project.kind not in kinds:
        raise NotFound()
    return project


def kind_scoped(*kinds: str, fetch: Callable[..., Project]):
    """Decorator for a view of `/…/<slug>/…` that belongs to `kinds`: it fetches the project with
    `fetch(user, slug)` (an `access_project_for_<whom>` function), gates it with
    `require_kind` and calls the view with the project in place of the slug."""

    def decorate(view):
        @wraps(view)
        def wrapper(request, slug, *args, **kwargs):
            project = require_kind(fetch(request.user, slug), *kinds)
            return view(request, project, *args, **kwargs)

        return wrapper

    return decorate
