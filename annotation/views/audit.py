"""The supervisor's audit-log page (/p/<slug>/audit/): the project's audit entries, newest
first, filterable by action and by person, as GET /api/projects/{slug}/audit/ lists them."""

import json

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import render
from django.utils.http import urlencode
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_GET

from annotation import access
from annotation.errors import InvalidInput
from annotation.selectors.audit import audit_actors_for_project, audit_log_for_project
from annotation.services.audit import ACTIONS

PAGE_SIZE = 50
# What each action is called on the page (services.audit.ACTIONS; an action without a name
# here is shown as stored).
ACTION_NAMES = {
    "project_create": _("project created"),
    "settings_change": _("settings changed"),
    "member_add": _("member added"),
    "member_change": _("member changed"),
    "disqualification": _("member disqualified"),
    "owner_transfer": _("project handed on"),
    "password_reset": _("password reset"),
    "adjudication": _("item adjudicated"),
    "override": _("decision overridden"),
    "reopen": _("item reopened"),
    "duplicate_remove": _("duplicates removed"),
    "duplicate_restore": _("duplicates restored"),
    "split_run": _("splits computed"),
    "import": _("items imported"),
    "release": _("release step run"),
    "release_publish": _("release published"),
    "webhook_create": _("webhook added"),
    "webhook_delete": _("webhook removed"),
    "webhook_resend": _("webhook delivery sent again"),
    "back_translation_run": _("back-translation filter run"),
    "back_translation_restore": _("items restored after the back-translation filter"),
    "sample": _("items sampled for rating"),
    "summary_measures": _("summary measures computed"),
    "question_audit_draw": _("audit sample of questions drawn"),
    "question_audit_mark": _("audited question marked"),
}


def _shown(value) -> str:
    return "" if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _row(entry) -> dict:
    return {
        "entry": entry,
        "action": ACTION_NAMES.get(entry.action, entry.action),
        "actor": entry.actor.username if entry.actor else "",
        "before": _shown(entry.before),
        "after": _shown(entry.after),
    }


@login_required
@require_GET
def audit_page(request, slug):
    project = access.access_project_for_supervisor(request.user, slug)
    action, actor = request.GET.get("action", ""), request.GET.get("actor", "")
    error = None
    try:
        entries = audit_log_for_project(project, action=action, actor=actor)
    except InvalidInput as exc:
        error = "; ".join(f"{e.field}: {e.message}" for e in exc.errors)
        action, entries = "", audit_log_for_project(project, actor=actor)
    page = Paginator(entries, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(
        request,
        "annotation/audit.html",
        {
            "project": project,
            "page": page,
            "rows": [_row(entry) for entry in page],
            "actions": [(name, ACTION_NAMES.get(name, name)) for name in ACTIONS],
            "actors": audit_actors_for_project(project),
            "action": action,
            "actor": actor,
            "error": error,
            "query_string": urlencode({k: v for k, v in (("action", action), ("actor", actor)) if v}),
        },
    )
