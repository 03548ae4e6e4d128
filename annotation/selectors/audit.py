"""Reads of the audit log for its API and page (the writer is services.audit.audit_record)."""

from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from django.utils.translation import gettext

from annotation.errors import InvalidInput
from annotation.models import AuditEntry, Project
from annotation.services.audit import ACTIONS, audit_entries_for_project
from annotation.wording import join_list


def audit_log_for_project(project: Project, *, action=None, actor=None) -> QuerySet[AuditEntry]:
    """The project's entries, newest first; `action` (one of ACTIONS) and `actor` (a
    username; one who did nothing here, or no such user, gives no entries) narrow them.
    Empty strings mean no filter. An unknown action is a 400 naming `action`."""
    if action and action not in ACTIONS:
        raise InvalidInput(gettext("must be one of %(choices)s") % {"choices": join_list(ACTIONS)}, field="action")
    actor_id = None
    if actor:
        actor_id = get_user_model().objects.filter(username=actor).values_list("pk", flat=True).first() or 0
    return audit_entries_for_project(project, action=action or None, actor_id=actor_id)


def audit_actors_for_project(project: Project) -> list[str]:
    """The usernames of everyone with an entry in the project's log, sorted (the page's
    person filter)."""
    return sorted(
        AuditEntry.objects.filter(project=project, actor__isnull=False)
        .order_by()
        .values_list("actor__username", flat=True)
        .distinct()
    )
