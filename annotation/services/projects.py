"""Projects, members and users: created by supervisors and admins only (no open sign-up)."""

import re

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import IntegrityError, models, transaction
from django.utils.translation import gettext
from django.utils.translation import gettext as _

from annotation.access import access_project_for_supervisor, can_manage_users, is_admin, project_ids_supervised_by
from annotation.errors import Conflict, FieldError, InvalidInput, NotFound, PermissionDenied
from annotation.guides import label_guide_clean
from annotation.kinds.registry import get_kind, kind_for_new_project
from annotation.metrics.text import bidi_control, forbidden_character
from annotation.models import LANGUAGES, AccountInvitation, Annotation, Assignment, Item, Membership, Project
from annotation.services import users
from annotation.services.audit import audit_record
from annotation.services.priorities import item_priorities_refresh, order_of
from annotation.wording import fault_text, join_clauses, join_list

SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9-]{1,62}$")


def _text(value, field: str, *, max_length: int, required: bool = True, identifier: bool = False) -> str:
    if value is None or value == "":
        if required:
            raise InvalidInput(_("is required"), field=field)
        return ""
    if not isinstance(value, str):
        raise InvalidInput(_("must be text"), field=field)
    reason = forbidden_character(value) or (bidi_control(value) if identifier else None)
    if reason:
        raise InvalidInput(fault_text(reason), field=field)
    if len(value) > max_length:
        raise InvalidInput(_("is longer than %(n)s characters") % {"n": max_length}, field=field)
    return value


def user_create(*, actor, username, password, email=None):
    """A new account. One a supervisor (not an admin) creates is their invitation until its
    first login: until then they may still set its password (`user_password_reset`)."""
    if not can_manage_users(actor):
        raise PermissionDenied(_("Only supervisors and admins create users."))
    with transaction.atomic():
        user = user_create_by_operator(username=username, password=password, email=email)
        if not is_admin(actor):
            AccountInvitation.objects.create(user=user, invited_by=actor)
    return user


def user_create_by_operator(*, username, password, email=None, is_staff=False):
    """`user_create` without the permission check, for management commands (whoever runs
    them operates the site). The same rules for the username, password and email."""
    username = users.username_clean(_text(username, "username", max_length=150, identifier=True))
    password = _text(password, "password", max_length=128)
    email = users.email_clean(_text(email, "email", max_length=254, required=False, identifier=True))
    User = get_user_model()
    candidate = User(username=username, email=email)
    try:
        validate_password(password, candidate)
    except ValidationError as exc:
        raise InvalidInput(join_clauses(exc.messages), field="password") from None
    try:
        with transaction.atomic():
            user = User.objects.create_user(username=username, password=password, email=email, is_staff=is_staff)
    except IntegrityError:
        raise Conflict(gettext("a user with this username already exists"), field="username") from None
    return user


def project_create(*, actor, slug, name, kind, language, settings=None, guidelines="") -> Project:
    if not can_manage_users(actor):
        raise PermissionDenied(_("Only supervisors and admins create projects."))
    slug = _text(slug, "slug", max_length=64, identifier=True)
    if not SLUG_RE.match(slug):
        raise InvalidInput(_("must be 2-63 lower-case letters, digits or hyphens"), field="slug")
    name = _text(name, "name", max_length=200, identifier=True)
    workflow = kind_for_new_project(kind)
    if not isinstance(language, str) or language not in LANGUAGES:
        raise InvalidInput(
            _("must be one of %(choices)s") % {"choices": join_list(sorted(LANGUAGES))}, field="language"
        )
    cleaned_settings = workflow.clean_settings(settings, language)
    workflow.authorize_settings(cleaned_settings, actor)
    guidelines = _text(guidelines, "guidelines", max_length=100_000, required=False)
    try:
        with transaction.atomic():
            project = Project.objects.create(
                slug=slug,
                name=name,
                kind=workflow.name,
                language=language,
                settings=cleaned_settings,
                guidelines=guidelines,
                created_by=actor,
                owner=actor,
            )
            Membership.objects.create(
                project=project, user=actor, role=Membership.Role.SUPERVISOR, status=Membership.Status.ACTIVE
            )
            audit_record(actor=actor, action="project_create", project=project, target=f"project:{slug}",
                         after={"kind": workflow.name, "language": language, "settings": cleaned_settings})  # fmt: skip
    except IntegrityError:
        raise Conflict(gettext("a project with this slug already exists"), field="slug") from None
    return project


def membership_add(*, actor, slug: str, username, role, status=Membership.Status.TRIAL, trusted=False) -> Membership:
    project = access_project_for_supervisor(actor, slug)
    errors = []
    if role not in Membership.Role.values:
        errors.append(
            FieldError("role", gettext("must be one of %(choices)s") % {"choices": join_list(Membership.Role.values)})
        )
    if status not in (Membership.Status.TRIAL, Membership.Status.ACTIVE):
        errors.append(FieldError("status", gettext("must be trial or active")))
    if not isinstance(trusted, bool):
        errors.append(FieldError("trusted", gettext("must be true or false")))
    user = get_user_model().objects.filter(username=username).first() if isinstance(username, str) else None
    if user is None:
        errors.append(FieldError("username", gettext("no such user")))
    if errors or user is None:
        raise InvalidInput(gettext("invalid member"), errors=errors)
    try:
        with transaction.atomic():
            membership = Membership.objects.create(
                project=project, user=user, role=role, status=status, trusted=trusted
            )
            audit_record(actor=actor, action="member_add", project=project, target=f"member:{user.username}",
                         after=_member_fields(membership))  # fmt: skip
            return membership
    except IntegrityError:
        raise Conflict(gettext("this user is already a member of the project"), field="username") from None


MEMBER_FIELDS = ("role", "status", "trusted", "adjudicator")


def _member_fields(membership: Membership) -> dict:
    return {name: getattr(membership, name) for name in MEMBER_FIELDS}


def owns(user, project: Project) -> bool:
    """Whether `user` answers for `project`: its owner, or an admin."""
    return is_admin(user) or (project.owner_id is not None and project.owner_id == user.pk)


def _check_standing_change(actor, project: Project, membership: Membership, before: dict, changes: dict) -> None:
    """Who may change a member's role or status: the owner's own membership does not change
    (ownership is handed on first), nobody changes their own status, and only the owner or
    an admin changes another supervisor's role or status."""
    touched = [name for name in ("role", "status") if name in changes and changes[name] != before[name]]
    if not touched:
        return
    field = touched[0]
    if membership.user_id == project.owner_id:
        raise InvalidInput(
            gettext("the project's owner stays an active supervisor; hand the project on first"), field=field
        )
    if membership.user_id == actor.pk and "status" in touched:
        raise InvalidInput(gettext("you cannot change your own status"), field="status")
    if before["role"] == Membership.Role.SUPERVISOR and not owns(actor, project):
        raise PermissionDenied(_("Only the project's owner or an admin changes another supervisor's role or status."))


def membership_update(*, actor, slug: str, username: str, changes: dict) -> Membership:
    """Change a member's status, role, trust or adjudicator mark (supervisors and admins;
    `_check_standing_change` says who may touch a supervisor). Recorded in the audit log as
    a disqualification, or as a member change with the fields before and after."""
    project = access_project_for_supervisor(actor, slug)
    membership = Membership.objects.filter(project=project, user__username=username).select_related("user").first()
    if membership is None:
        raise NotFound()
    unknown = set(changes) - set(MEMBER_FIELDS)
    if unknown:
        raise InvalidInput(
            gettext("cannot be changed here: %(fields)s") % {"fields": join_list(sorted(unknown))},
            field=sorted(unknown)[0],
        )
    before = _member_fields(membership)
    if "status" in changes:
        if changes["status"] not in Membership.Status.values:
            raise InvalidInput(
                gettext("must be one of %(choices)s") % {"choices": join_list(Membership.Status.values)}, field="status"
            )
        membership.status = changes["status"]
    if "trusted" in changes:
        if not isinstance(changes["trusted"], bool):
            raise InvalidInput(gettext("must be true or false"), field="trusted")
        membership.trusted = changes["trusted"]
    if "adjudicator" in changes:
        if not isinstance(changes["adjudicator"], bool):
            raise InvalidInput(gettext("must be true or false"), field="adjudicator")
        membership.adjudicator = changes["adjudicator"]
    if "role" in changes:
        if changes["role"] not in Membership.Role.values:
            raise InvalidInput(
                gettext("must be one of %(choices)s") % {"choices": join_list(Membership.Role.values)}, field="role"
            )
        if membership.user_id == actor.pk and changes["role"] != Membership.Role.SUPERVISOR:
            raise InvalidInput(gettext("you cannot remove your own supervisor role"), field="role")
    _check_standing_change(actor, project, membership, before, changes)
    if "role" in changes:
        membership.role = changes["role"]
    after = _member_fields(membership)
    changed = [name for name in MEMBER_FIELDS if before[name] != after[name]]
    with transaction.atomic():
        membership.save()
        if membership.status == Membership.Status.DISQUALIFIED:
            # A disqualified member's open claims give their slots back at once.
            Assignment.objects.filter(
                project=project, annotator=membership.user, status=Assignment.Status.CLAIMED
            ).update(status=Assignment.Status.EXPIRED, draft=None)
        if changed:
            disqualified = after["status"] == Membership.Status.DISQUALIFIED != before["status"]
            audit_record(
                actor=actor,
                action="disqualification" if disqualified else "member_change",
                project=project,
                target=f"member:{membership.user.username}",
                before={name: before[name] for name in changed},
                after={name: after[name] for name in changed},
            )
    return membership


PROJECT_EDITABLE = ("name", "guidelines", "settings", "label_guide", "owner")


def project_has_running_rounds(project: Project) -> bool:
    """Whether any item of `project` has annotations in its current round while that round
    is still open: the state in which round-bound settings may not change."""
    return Annotation.objects.filter(
        item__project=project, item__status=Item.Status.OPEN, round=models.F("item__round")
    ).exists()


def project_update(*, actor, slug: str, changes) -> Project:
    """Change a project's name, guidelines, settings or label guide (supervisors of the
    project and admins). `settings` is merged over the stored settings, validated as at
    creation, and refused per setting when the kind says the change would corrupt running
    rounds (`Kind.settings_change_errors`). `owner` hands the project on (`project_owner_clean`).
    All or nothing: any refusal stores nothing. Recorded in the audit log: the changed
    fields before and after (a settings change), and an owner transfer on its own."""
    project = access_project_for_supervisor(actor, slug)
    if not isinstance(changes, dict):
        raise InvalidInput(gettext("the body must be a JSON object"), field="body")
    unknown = sorted(set(changes) - set(PROJECT_EDITABLE))
    if unknown:
        raise InvalidInput(
            gettext("cannot be changed here; editable: %(fields)s") % {"fields": join_list(PROJECT_EDITABLE)},
            field=unknown[0],
        )
    kind = get_kind(project.kind)
    with transaction.atomic():
        project = Project.objects.select_for_update(of=("self",)).select_related("owner").get(pk=project.pk)
        recorded = {name: getattr(project, name) for name in PROJECT_AUDITED}
        old_owner = project.owner
        if "owner" in changes:
            project.owner = project_owner_clean(actor, project, changes["owner"])
        if "name" in changes:
            project.name = _text(changes["name"], "name", max_length=200, identifier=True)
        if "guidelines" in changes:
            project.guidelines = _text(changes["guidelines"], "guidelines", max_length=100_000, required=False)
        if "settings" in changes:
            given = changes["settings"]
            if not isinstance(given, dict):
                raise InvalidInput(gettext("must be an object"), field="settings")
            before = kind.project_settings(project)
            # Keys a kind no longer has (stored before it dropped them) are left behind.
            stored = {key: value for key, value in project.settings.items() if key in kind.settings_for({})}
            after = kind.clean_settings({**stored, **given}, project.language)
            if after != before:
                kind.authorize_settings(after, actor)
                errors = kind.settings_change_errors(before, after, running=project_has_running_rounds(project))
                if errors:
                    raise InvalidInput(gettext("these settings cannot change now"), errors=errors)
            project.settings = after
            if after != before:
                kind.after_settings_change(project, before, after)
        if "label_guide" in changes:
            # Checked against the settings just set: a summary project's guide lists its tags.
            project.label_guide = label_guide_clean(changes["label_guide"], kind.label_guide(None, project.settings))
        project.save()
        if order_of(project.settings) != order_of(recorded["settings"]):
            item_priorities_refresh(project)
        _audit_project_update(actor, project, recorded, old_owner)
    return project


PROJECT_AUDITED = ("name", "guidelines", "settings", "label_guide")


def _audit_project_update(actor, project: Project, before: dict, old_owner) -> None:
    after = {name: getattr(project, name) for name in PROJECT_AUDITED}
    changed = [name for name in PROJECT_AUDITED if before[name] != after[name]]
    if changed:
        if "settings" in changed:  # the settings that changed, not the whole object
            keys = sorted(
                key
                for key in {*before["settings"], *after["settings"]}
                if before["settings"].get(key) != after["settings"].get(key)
            )
            before = {**before, "settings": {key: before["settings"].get(key) for key in keys}}
            after = {**after, "settings": {key: after["settings"].get(key) for key in keys}}
        audit_record(actor=actor, action="settings_change", project=project, target=f"project:{project.slug}",
                     before={name: before[name] for name in changed}, after={name: after[name] for name in changed})  # fmt: skip
    owner = project.owner
    if owner is not None and owner.pk != (old_owner.pk if old_owner else None):
        # Handed on (project_owner_clean: always to a supervisor; nobody hands it to no one).
        audit_record(actor=actor, action="owner_transfer", project=project, target=f"member:{owner.username}",
                     before={"owner": old_owner.username if old_owner else None}, after={"owner": owner.username})  # fmt: skip


def project_owner_clean(actor, project: Project, username):
    """The user `project` is handed on to: only its owner or an admin hands it on, and only
    to an active supervisor of it."""
    if not owns(actor, project):
        raise PermissionDenied(_("Only the project's owner or an admin hands the project on."))
    if not isinstance(username, str) or not username:
        raise InvalidInput(gettext("must be the username of an active supervisor of the project"), field="owner")
    membership = (
        Membership.objects.filter(
            project=project, user__username=username, role=Membership.Role.SUPERVISOR, status=Membership.Status.ACTIVE
        )
        .select_related("user")
        .first()
    )
    if membership is None:
        raise InvalidInput(gettext("must be the username of an active supervisor of the project"), field="owner")
    return membership.user


def _manageable_user(actor, username):
    """The user whose password `actor` may reset: anyone for admins; for a supervisor, only
    an account they created that has never logged in (their invitation, `user_create`).
    Everyone else changes their own password or asks an admin; for the supervisor they are
    NotFound, as a missing user is."""
    User = get_user_model()
    user = User.objects.filter(username=username).first() if isinstance(username, str) else None
    if user is None:
        raise NotFound()
    if is_admin(actor):
        return user
    if is_admin(user) or user.pk == actor.pk or user.last_login is not None:
        raise NotFound()
    if not AccountInvitation.objects.filter(user=user, invited_by=actor).exists():
        raise NotFound()
    return user


def user_password_reset(*, actor, username, password):
    """Set a new password for `username` (Django's validators, as at creation). The user's
    API token ends (annotation/passwords.py) and their sessions with it."""
    if not can_manage_users(actor):
        raise PermissionDenied(_("Only supervisors and admins reset passwords."))
    user = _manageable_user(actor, username)
    password = _text(password, "password", max_length=128)
    try:
        validate_password(password, user)
    except ValidationError as exc:
        raise InvalidInput(join_clauses(exc.messages), field="password") from None
    with transaction.atomic():
        user.set_password(password)
        user.save(update_fields=["password"])
        # In the log of every project of the user's that the actor answers for (the admin's
        # reset of an account outside them: in the log of no project).
        projects = Project.objects.filter(memberships__user=user).distinct()
        if not is_admin(actor):
            projects = projects.filter(pk__in=project_ids_supervised_by(actor))
        for project in projects or [None]:
            audit_record(actor=actor, action="password_reset", project=project, target=f"user:{user.username}")
    return user
