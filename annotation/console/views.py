"""The console's pages. Each checks access through annotation.access, reads through
selectors, and renders; the forms' writes go to the REST API from static/console/."""

import json

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.urls import reverse
from django.utils.formats import number_format
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from annotation import access
from annotation.errors import InvalidInput, NotFound, PermissionDenied
from annotation.kinds.registry import available_kinds, get_kind
from annotation.kinds.settings import COMMON_SETTINGS_LABELS
from annotation.models import LANGUAGES, Item
from annotation.selectors.guides import guide_for_project
from annotation.selectors.items import (
    PAGE_PARAMETERS,
    annotator_label,
    browser_choices_for_project,
    browser_count,
    browser_page,
    item_decisions,
    item_history,
    items_for_browser,
    value_leaves,
)
from annotation.selectors.names import names_visible
from annotation.selectors.predictions import latest_predictions_of_items
from annotation.services.decisions import round_decided
from annotation.wording import join_clauses, join_list

PAGE_SIZE = 50
FILTERS = ("status", "split", "round", "group", "flag", "annotator", "q")


def _input_type(entry: dict) -> str:
    """How a setting is edited, by the type of its default (bool before int: True is an
    int): a select for yes/no and for one of a few choices, checkboxes for a list, a
    number box (empty for "off" where the setting may be unset), a table of numbers for
    rules per source; JSON only for a shape none of these fits."""
    value = entry["default"]
    if entry["optional_type"]:
        return "optional"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "choice" if entry["choices"] else "str"
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "list"
    if isinstance(value, dict) and all(isinstance(v, dict) for v in value.values()):
        return "table"
    return "json"


def _number_text(value) -> str:
    return number_format(value, decimal_pos=None) if isinstance(value, int | float) else str(value)


def _value_text(entry: dict, kind_of: str, value) -> str:
    """A setting's value in people's words, for the "Default:" hint."""
    if value is None or value == "":
        return _("empty (off)") if kind_of == "optional" else _("empty")
    if kind_of == "bool":
        return _("yes") if value else _("no")
    if kind_of == "choice":
        return entry["choices"].get(value, value)
    if kind_of == "list":
        return join_list(entry["choices"].get(v, v) for v in value) or _("none")
    if kind_of == "table":
        return _("the paper's values")
    if kind_of == "json":
        return json.dumps(value, ensure_ascii=False)
    unit = entry["unit"]
    return f"{_number_text(value)} {unit}".strip()


def _table(entry: dict, value: dict, labels: dict) -> dict:
    """Rules per source as rows of number boxes: {"rows": [(source, [(column, value)])],
    "columns": [(column, label)]}."""
    columns = list(dict.fromkeys(column for rules in value.values() for column in rules))
    return {
        "columns": [(column, labels.get(f"{entry['name']}.{column}", column)) for column in columns],
        "rows": [(source, [(column, rules.get(column)) for column in columns]) for source, rules in value.items()],
    }


def _settings_fields(kind, language: str | None, current: dict | None) -> list[dict]:
    """The kind's settings as form fields: name, label, help, unit, type, the default in
    words (per project language on a new project, where a default depends on it), and the
    value the field starts with (`current`'s, or "" for "the default" on a new project)."""
    fields = []
    by_language = {code: kind.settings_for({}, code) for code in LANGUAGES}
    labels = {key: str(text) for key, text in {**COMMON_SETTINGS_LABELS, **kind.settings_labels}.items()}
    for entry in kind.settings_explained(language):
        kind_of = _input_type(entry)
        value = current[entry["name"]] if current is not None else entry["default"]
        field = {
            **entry,
            "type": kind_of,
            "default_text": _value_text(entry, kind_of, entry["default"]),
            "initial": json.dumps(value, ensure_ascii=False),
            "value": "" if kind_of == "bool" and current is None else ("" if value is None else value),
        }
        if current is None:
            texts = {code: _value_text(entry, kind_of, d[entry["name"]]) for code, d in by_language.items()}
            if len(set(texts.values())) > 1:
                field["default_by_language"] = texts
                field["default_by_language_json"] = json.dumps(texts, ensure_ascii=False)
                options = {code: _("default (%(value)s)") % {"value": text} for code, text in texts.items()}
                field["default_option_json"] = json.dumps(options, ensure_ascii=False)
        if kind_of == "list":
            field["options"] = [
                (code, entry["choices"].get(code, code), code in value)
                for code in dict.fromkeys([*entry["choices"], *entry["default"], *value])
            ]
        elif kind_of == "table":
            field["table"] = _table(entry, value, labels)
        elif kind_of == "json":
            field["value"] = json.dumps(value, ensure_ascii=False, indent=1)
        fields.append(field)
    return fields


def _require_manager(user) -> None:
    if not access.can_manage_users(user):
        raise PermissionDenied(_("Only supervisors and admins manage projects and users."))


def export_links_of(kind, slug: str) -> list[tuple[str, str]]:
    """(button text, address) of every export the kind has: the table formats and the
    streamed ones (the squad file of question projects, which alone carries the question ids
    a leaderboard keys on) through the common export, every item whatever its status, then
    the kind's own (`export_pages`: PhrasIS's files, one question a line, the ratings)."""
    formats = (*kind.export_formats, *(f for f in kind.streamed_formats if f not in kind.export_formats))
    links = [(fmt, f"/api/projects/{slug}/export/?format={fmt}&status=all") for fmt in formats]
    for title, name, query in kind.export_pages:
        links.append((str(title), reverse(name, kwargs={"slug": slug}) + (f"?{query}" if query else "")))
    return links


def _form_config() -> dict:
    """The project forms' own messages, in the interface language."""
    return {
        "networkError": _("The server could not be reached."),
        "badJson": _("This is not valid JSON."),
    }


@login_required
@require_GET
def project_new(request):
    _require_manager(request.user)
    language = get_language() if get_language() in LANGUAGES else "he"
    kinds = [
        {"name": name, "title": get_kind(name).title, "fields": _settings_fields(get_kind(name), language, None)}
        for name in available_kinds()
    ]
    return render(
        request,
        "console/project_new.html",
        {"kinds": kinds, "languages": sorted(LANGUAGES), "default_language": language, "config": _form_config()},
    )


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
        "config": {"url": f"/api/projects/{project.slug}/", "saved": _("Saved."), **_form_config()},
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
        page = browser_page(found, request.GET, PAGE_SIZE, browser_count(project, params))
    except InvalidInput as exc:
        # Each refused filter by the label the page gives it, not by its parameter's name.
        labels = {"status": _("Status"), "split": _("Split"), "round": _("Round"), "group": _("Group"),
                  "flag": _("Flag"), "annotator": _("Annotator"), "q": _("Search"), "page": _("Page")}  # fmt: skip
        error = join_clauses(dict.fromkeys(f"{labels.get(e.field, e.field)}: {e.message}" for e in exc.errors))
    kind = get_kind(project.kind)
    for item in page or ():
        item.browser_text = kind.browser_text(item.payload)
    # Supervisors see the latest model predictions beside the items.
    prediction_set, predictions = (
        latest_predictions_of_items(project, [item.pk for item in page]) if names and page else (None, {})
    )
    for item in page or ():
        item.prediction = predictions.get(item.pk)
    context = {
        "project": project,
        "choices": choices,
        "params": params,
        "page": page,
        "error": error,
        "export_links": export_links_of(kind, project.slug),
        "query_string": _query_without_page(request),
        "is_supervisor": names,
        "prediction_set": prediction_set,
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
    prediction_set, predictions = latest_predictions_of_items(project, [item.pk]) if names else (None, {})
    context = {
        "project": project,
        "item": item,
        "payload": payload,
        "history": history,
        "author": annotator_label(project, item.author, names=names) if item.author_id else "",
        "is_supervisor": names,
        "export_links": export_links_of(get_kind(project.kind), project.slug),
        "decisions": decisions,
        "prediction_set": prediction_set,
        "prediction": predictions.get(item.pk),
        "can_reopen": names and round_decided(item),
        # A supervisor edits the kind's text fields of an accepted item (services/revisions.py).
        "text_fields": [
            (name, item.payload.get(name, ""))
            for name in get_kind(project.kind).editable_text_fields
            if isinstance(item.payload.get(name, ""), str)
        ]
        if names and item.status == Item.Status.ACCEPTED
        else [],
        "text_edit_config": {
            "url": f"/api/items/{item.pk}/text/",
            "unchanged": _("Change the text first: nothing was edited."),
            "networkError": _("The server could not be reached. Check your connection and try again."),
        },
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
