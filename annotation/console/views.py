"""The console's pages. Each checks access through annotation.access, reads through
selectors, and renders; the forms' writes go to the REST API from static/console/."""

import json

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from annotation import access
from annotation.errors import InvalidInput, NotFound, PermissionDenied
from annotation.kinds.registry import available_kinds, get_kind
from annotation.models import LANGUAGES, Item
from annotation.selectors.guides import guide_for_project
from annotation.selectors.items import (
    PAGE_PARAMETERS,
    annotator_label,
    browser_choices_for_project,
    browser_page,
    item_decisions,
    item_history,
    items_for_browser,
    value_leaves,
)
from annotation.selectors.names import names_visible
from annotation.services.decisions import round_decided

PAGE_SIZE = 50
FILTERS = ("status", "split", "round", "group", "flag", "annotator", "q")


def _input_type(value) -> str:
    """How a setting is edited: by the type of its default (bool before int: True is an int)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    return "json"


def _settings_fields(kind, language: str | None, current: dict | None) -> list[dict]:
    """The kind's settings as form fields: name, help, default, type, and the value the
    field starts with (`current`'s, or "" for "the default" on a new project)."""
    fields = []
    for entry in kind.settings_explained(language):
        kind_of = _input_type(entry["default"])
        value = current[entry["name"]] if current is not None else entry["default"]
        fields.append({
            **entry,
            "type": kind_of,
            "default_text": json.dumps(entry["default"], ensure_ascii=False),
            "initial": json.dumps(value, ensure_ascii=False),
            "value": json.dumps(value, ensure_ascii=False, indent=1) if kind_of == "json" else ("" if kind_of == "bool" and current is None else value),
        })  # fmt: skip
    return fields


def _require_manager(user) -> None:
    if not access.can_manage_users(user):
        raise PermissionDenied(_("Only supervisors and admins manage projects and users."))


def export_formats_of(kind) -> tuple[str, ...]:
    """Every format the kind exports: the table formats and the streamed ones (the squad
    file of question projects, which alone carries the question ids a leaderboard keys on)."""
    return (*kind.export_formats, *(f for f in kind.streamed_formats if f not in kind.export_formats))


@login_required
@require_GET
def project_new(request):
    _require_manager(request.user)
    kinds = [
        {"name": name, "title": get_kind(name).title, "fields": _settings_fields(get_kind(name), None, None)}
        for name in available_kinds()
    ]
    return render(request, "console/project_new.html", {"kinds": kinds, "languages": sorted(LANGUAGES.items())})


@login_required
@require_GET
def project_settings(request, slug):
    project = access.access_project_for_supervisor(request.user, slug)
    kind = get_kind(project.kind)
    settings = kind.project_settings(project)
    staff_only = set(kind.staff_only_settings)
    guide = kind.label_guide(None, project.settings)
    overrides = project.label_guide or {}
    sections = [
        {
            "section": section,
            "entries": [(entry, (overrides.get(section.key) or {}).get(entry.value, "")) for entry in section.entries],
        }
        for section in guide
    ]
    return render(request, "console/project_settings.html", {
        "project": project,
        "kind": kind,
        "fields": _settings_fields(kind, project.language, settings),
        "staff_only": staff_only,
        "sections": sections,
        "config": {"url": f"/api/projects/{project.slug}/", "saved": _("Saved."), "networkError": _("The server could not be reached.")},
    })  # fmt: skip


@login_required
@require_GET
def users(request):
    _require_manager(request.user)
    config = {"createUrl": "/api/users/", "passwordUrl": "/api/users/{username}/password/",
              "created": _("User %(name)s created."), "reset": _("Password of %(name)s changed."),
              "notFound": _("No user of that name whose password you may reset."),
              "networkError": _("The server could not be reached.")}  # fmt: skip
    return render(request, "console/users.html", {"config": config, "is_admin": access.is_admin(request.user)})


@login_required
@require_GET
def items(request, slug):
    project = access.access_project_for_staff(request.user, slug)
    names = names_visible(request.user, project)
    choices = browser_choices_for_project(project, names=names)
    params = {name: request.GET.get(name, "") for name in FILTERS}
    error, page = None, None
    try:
        found = items_for_browser(project, params, choices)
        page = browser_page(found, request.GET, PAGE_SIZE)
    except InvalidInput as exc:
        error = "; ".join(f"{e.field}: {e.message}" for e in exc.errors)
    kind = get_kind(project.kind)
    for item in page or ():
        item.browser_text = kind.browser_text(item.payload)
    context = {
        "project": project,
        "choices": choices,
        "params": params,
        "page": page,
        "error": error,
        "export_formats": export_formats_of(kind),
        "query_string": _query_without_page(request),
        "is_supervisor": names,
    }
    return render(request, "console/items.html", context, status=400 if error else 200)


def _query_without_page(request) -> str:
    query = request.GET.copy()
    for name in PAGE_PARAMETERS:
        query.pop(name, None)
    return query.urlencode()


@login_required
@require_GET
def item_detail(request, slug, item_id):
    project = access.access_project_for_staff(request.user, slug)
    item = Item.objects.filter(project=project, pk=item_id).select_related("author", "probe_of").first()
    if item is None:
        raise NotFound()
    names = names_visible(request.user, project)
    history = item_history(item, names=names)
    decisions = item_decisions(item, names=names)
    payload = value_leaves(item.payload)
    context = {
        "project": project,
        "item": item,
        "payload": payload,
        "history": history,
        "author": annotator_label(project, item.author, names=names) if item.author_id else "",
        "is_supervisor": names,
        "export_formats": export_formats_of(get_kind(project.kind)),
        "decisions": decisions,
        "can_reopen": names and round_decided(item),
        "reopen_config": {
            "reopenUrl": f"/api/items/{item.pk}/reopen/",
            "networkError": _("The server could not be reached. Check your connection and try again."),
        },
    }
    return render(request, "console/item.html", context)


@login_required
@require_GET
def preview(request, slug):
    """The project's annotate page as an annotator sees it, for its staff: items come from
    the preview endpoint (nothing claimed) and a submit stores nothing."""
    project = access.access_project_for_staff(request.user, slug)
    kind = get_kind(project.kind)
    config = {
        "slug": project.slug,
        "kind": project.kind,
        "preview": True,
        "nextUrl": f"/api/projects/{project.slug}/preview/",
        "submitUrl": "",
        "previewNotice": _("Preview: nothing was stored. The next item follows."),
        "networkError": _("The server could not be reached. Check your connection and try again."),
    }
    return render(
        request,
        kind.template,
        {"project": project, "config": config, "preview": True, "guide": guide_for_project(project)},
    )
