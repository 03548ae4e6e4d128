"""The audit log: every supervisor action on a project, recorded where it happens.

One writer (`audit_record`), called inside the transaction of the action it records, so
the entry and the change commit or roll back together. Reads: `audit_entries_for_project`."""

from __future__ import annotations

from annotation.models import AuditEntry, Project

# The actions the log knows. A new one is added here, so that filters and pages can list them.
ACTIONS = (
    "project_create",
    "settings_change",
    "member_add",
    "member_change",
    "disqualification",
    "owner_transfer",
    "password_reset",
    "adjudication",
    "override",
    "reopen",
    "duplicate_remove",
    "duplicate_restore",
    "split_run",
    "import",
    "release",
    "release_publish",
    "webhook_create",
    "webhook_delete",
    "webhook_resend",
    "back_translation_run",
    "back_translation_restore",
    "sample",
    "summary_measures",
    "question_audit_draw",
    "question_audit_mark",
    "item_text_edit",
    "answer_correct",
)


def audit_record(
    *,
    actor,
    action: str,
    project: Project | None = None,
    target: str = "",
    before=None,
    after=None,
    comment: str = "",
) -> AuditEntry:
    """Record `actor`'s `action` on `project` (None: an account action outside projects).
    `before` and `after` are JSON values: the changed fields only, not whole records."""
    if action not in ACTIONS:
        raise ValueError(f"unknown audit action {action!r}")
    return AuditEntry.objects.create(
        project=project,
        actor=actor if getattr(actor, "pk", None) else None,
        action=action,
        target=target[:200],
        before=before,
        after=after,
        comment=comment,
    )


def audit_entries_for_project(project: Project, *, action: str | None = None, actor_id: int | None = None):
    """The project's entries, newest first, optionally of one action or one person."""
    entries = AuditEntry.objects.filter(project=project).select_related("actor")
    if action:
        entries = entries.filter(action=action)
    if actor_id is not None:
        entries = entries.filter(actor_id=actor_id)
    return entries
