"""The supervisor's audit-log page (/p/<slug>/audit/): the project's audit entries, newest
first, filterable by action and by person, as GET /api/projects/{slug}/audit/ lists them."""

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import render
from django.utils.http import urlencode
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_GET

from annotation import access
from annotation.errors import InvalidInput
from annotation.kinds.registry import installed_kind
from annotation.kinds.settings import COMMON_SETTINGS_LABELS
from annotation.selectors.audit import audit_actors_for_project, audit_log_for_project
from annotation.services.audit import ACTIONS
from annotation.templatetags.mashov import field_name, kind_name, language_name, status_name, word
from annotation.wording import join_clauses, join_list

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
    "item_text_edit": _("item text edited"),
    "answer_correct": _("answer span corrected"),
}


# What the fields of an entry's before/after are called on the page (the services' audit_record
# calls); settings are named by their form labels, payload fields by the item page's names.
DETAIL_NAMES = {
    "n": _("items sampled"),
    "stratum": _("stratum"),
    "seed": _("seed"),
    "population": _("items to draw from"),
    "threshold": _("threshold"),
    "released_system": _("released system"),
    "status": _("status"),
    "all": _("all summaries again"),
    "gold": _("gold label"),
    "reasons": _("reasons"),
    "round": _("round"),
    "url": _("address"),
    "events": _("events"),
    "delivery": _("delivery"),
    "event": _("event"),
    "kind": _("kind"),
    "language": _("language"),
    "settings": _("settings"),
    "owner": _("owner"),
    "format": _("format"),
    "filename": _("file"),
    "job": _("job"),
    "created": _("items created"),
    "skipped": _("rows skipped"),
    "decision": _("decision"),
    "item": _("item"),
    "items": _("items"),
    "pairs": _("pairs"),
    "removed": _("items removed"),
    "restored": _("items restored"),
    "version": _("version"),
    "license": _("license"),
    "step": _("step"),
    "role": _("role"),
    "trusted": _("trusted"),
    "adjudicator": _("adjudicator"),
    "representation": _("representation"),
    "shares": _("shares"),
    "leak_threshold": _("leak threshold"),
    "split": _("split"),
    "smoothing": _("smoothing"),
    "evaluation": _("evaluation"),
    "held_out": _("rows held out"),
    "per_source": _("questions per source"),
    "drawn": _("questions drawn"),
    "question_correct": _("question correct"),
    "span_correct": _("answer span correct"),
    "answer": _("answer"),
    "question": _("question"),
    "question_key": _("question id"),
    "answer_index": _("answer number"),
    "annotation": _("annotation"),
}
# Codes the entries store as values, beside the statuses, labels and kinds the page names
# through the template filters.
VALUE_NAMES = {
    "methods_disagree": _("the aggregation methods disagree"),
    "incoherent_probe": _("a reversed pair was answered incoherently"),
    "annotator": _("annotator"),
    "reviewer": _("reviewer"),
    "supervisor": _("supervisor"),
    "keep": _("keep"),
    "remove": _("remove"),
    "duplicates": _("near-duplicates"),
    "leaks": _("leaks between splits"),
    "bias": _("bias"),
    "splits": _("splits"),
}
MAX_LEAVES = 12  # per side of an entry; the API lists every field


def _value_text(value, setting: dict | None = None) -> str:
    """A stored scalar or list in people's words: yes/no, a dash for nothing, a setting's
    choice, a status, label, kind or language by its name; numbers as they are."""
    if value is None or value == [] or value == {}:
        return "—"
    if isinstance(value, bool):
        return str(_("yes") if value else _("no"))
    if isinstance(value, list):
        return join_list(_value_text(v, setting) for v in value)
    if isinstance(value, dict):
        # A table setting (pool_rules): its rows by their names, its columns by their labels.
        columns = setting.get("columns", {}) if setting else {}
        parts = [
            f"{columns.get(k) or word(str(k))} ({_value_text(v, setting)})"
            if isinstance(v, dict)
            else f"{columns.get(k) or word(str(k))}: {_value_text(v, setting)}"
            for k, v in value.items()
        ]
        return join_clauses(parts) if any(isinstance(v, dict) for v in value.values()) else join_list(parts)
    if isinstance(value, str):
        if setting and value in setting.get("choices", {}):
            return setting["choices"][value]
        if value in VALUE_NAMES:
            return str(VALUE_NAMES[value])
        for name in (status_name, word, kind_name):
            shown = name(value)
            if shown != value:
                return str(shown)
        return value
    text = str(value)
    unit = setting.get("unit") if setting else ""
    return f"{text} {unit}" if unit else text


def entry_details(value, kind_code: str | None) -> list[dict]:
    """An entry's before or after as labelled rows: {"label", "key", "value", "data"}.
    `key` is a key that is data (an item's id under a status map) and `data` says that the
    value is people's text (a file name, an address), shown isolated and as stored."""
    if value is None:
        return []
    if not isinstance(value, dict):
        return [{"label": "", "key": "", "value": _value_text(value), "data": False}]
    kind = installed_kind(kind_code) if kind_code else None
    settings = {entry["name"]: entry for entry in kind.settings_explained()} if kind else {}
    if kind:
        labels = {**COMMON_SETTINGS_LABELS, **kind.settings_labels}
        for name, entry in settings.items():
            entry["columns"] = {
                key.split(".", 1)[1]: str(text) for key, text in labels.items() if key.startswith(f"{name}.")
            }
    rows = []
    for key, inner in value.items():
        if key in settings:
            rows.append(
                {"label": settings[key]["label"], "key": "", "value": _value_text(inner, settings[key]), "data": False}
            )
        elif key == "settings" and isinstance(inner, dict):
            label = str(DETAIL_NAMES["settings"])
            for name, setting_value in inner.items():
                setting = settings.get(name, {})
                rows.append(
                    {
                        "label": f"{label} › {setting.get('label', name)}",
                        "key": "",
                        "value": _value_text(setting_value, setting),
                        "data": False,
                    }
                )
        elif isinstance(inner, dict) and inner:
            label = str(DETAIL_NAMES.get(key, field_name(key)))
            rows += [{"label": label, "key": str(k), "value": _value_text(v), "data": False} for k, v in inner.items()]
        elif key == "language":
            rows.append({"label": str(DETAIL_NAMES[key]), "key": "", "value": language_name(inner), "data": False})
        else:
            data = key in ("url", "filename", "owner", "license", "released_system", "version")
            label = str(DETAIL_NAMES.get(key, field_name(key)))
            rows.append({"label": label, "key": "", "value": str(inner) if data else _value_text(inner), "data": data})
    if len(rows) > MAX_LEAVES:
        rows = [
            *rows[:MAX_LEAVES],
            {"label": "…", "key": "", "value": _("and %(n)s more") % {"n": len(rows) - MAX_LEAVES}, "data": False},
        ]
    return rows


def _row(entry, kind_code: str) -> dict:
    return {
        "entry": entry,
        "action": ACTION_NAMES.get(entry.action, entry.action),
        "actor": entry.actor.username if entry.actor else "",
        "before": entry_details(entry.before, kind_code),
        "after": entry_details(entry.after, kind_code),
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
        # Each refused filter by the label the page gives it, not by its parameter's name.
        labels = {"action": _("Action"), "actor": _("Person")}
        error = join_clauses(f"{labels.get(e.field, e.field)}: {e.message}" for e in exc.errors)
        action, entries = "", audit_log_for_project(project, actor=actor)
    page = Paginator(entries, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(
        request,
        "annotation/audit.html",
        {
            "project": project,
            "page": page,
            "rows": [_row(entry, project.kind) for entry in page],
            "actions": [(name, ACTION_NAMES.get(name, name)) for name in ACTIONS],
            "actors": audit_actors_for_project(project),
            "action": action,
            "actor": actor,
            "error": error,
            "query_string": urlencode({k: v for k, v in (("action", action), ("actor", actor)) if v}),
        },
    )
