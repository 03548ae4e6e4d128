"""Projects, members and users: created by supervisors and admins only (no open sign-up)."""

import re

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from annotation.access import access_project_for_supervisor, can_manage_users
from annotation.errors import Conflict, FieldError, InvalidInput, NotFound, PermissionDenied
from annotation.kinds.registry import kind_for_new_project
from annotation.metrics.text import bidi_control, forbidden_character
from annotation.models import LANGUAGES, Assignment, Membership, Project
from annotation.services import users

SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9-]{1,62}$")


def _text(value, field: str, *, max_length: int, required: bool = True, identifier: bool = False) -> str:
    if value is None or value == "":
        if required:
            raise InvalidInput("is required", field=field)
        return ""
    if not isinstance(value, str):
        raise InvalidInput("must be a string", field=field)
    reason = forbidden_character(value) or (bidi_control(value) if identifier else None)
    if reason:
        raise InvalidInput(reason, field=field)
    if len(value) > max_length:
        raise InvalidInput(f"is longer than {max_length} characters", field=field)
    return value


def user_create(*, actor, username, password, email=None):
    if not can_manage_users(actor):
        raise PermissionDenied("Only supervisors and admins create users.")
    return user_create_by_operator(username=username, password=password, email=email)


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
        raise InvalidInput("; ".join(exc.messages), field="password") from None
    try:
        with transaction.atomic():
            user = User.objects.create_user(username=username, password=password, email=email, is_staff=is_staff)
    except IntegrityError:
        raise Conflict("a user with this username already exists", field="username") from None
    return user


def project_create(*, actor, slug, name, kind, language, settings=None, guidelines="") -> Project:
    if not can_manage_users(actor):
        raise PermissionDenied("Only supervisors and admins create projects.")
    slug = _text(slug, "slug", max_length=64, identifier=True)
    if not SLUG_RE.match(slug):
        raise InvalidInput("must be 2-63 lower-case letters, digits or hyphens", field="slug")
    name = _text(name, "name", max_length=200, identifier=True)
    workflow = kind_for_new_project(kind)
    if not isinstance(language, str) or language not in LANGUAGES:
        raise InvalidInput(f"must be one of {', '.join(sorted(LANGUAGES))}", field="language")
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
            )
            Membership.objects.create(
                project=project, user=actor, role=Membership.Role.SUPERVISOR, status=Membership.Status.ACTIVE
            )
    except IntegrityError:
        raise Conflict("a project with this slug already exists", field="slug") from None
    return project


def membership_add(*, actor, slug: str, username, role, status=Membership.Status.TRIAL, trusted=False) -> Membership:
    project = access_project_for_supervisor(actor, slug)
    errors = []
    if role not in Membership.Role.values:
        errors.append(FieldError("role", f"must be one of {', '.join(Membership.Role.values)}"))
    if status not in (Membership.Status.TRIAL, Membership.Status.ACTIVE):
        errors.append(FieldError("status", "must be trial or active"))
    if not isinstance(trusted, bool):
        errors.append(FieldError("trusted", "must be true or false"))
    user = get_user_model().objects.filter(username=username).first() if isinstance(username, str) else None
    if user is None:
        errors.append(FieldError("username", "no such user"))
    if errors:
        raise InvalidInput("invalid member", errors=errors)
    try:
        with transaction.atomic():
            return Membership.objects.create(project=project, user=user, role=role, status=status, trusted=trusted)
    except IntegrityError:
        raise Conflict("this user is already a member of the project", field="username") from None


def membership_update(*, actor, slug: str, username: str, changes: dict) -> Membership:
    project = access_project_for_supervisor(actor, slug)
    membership = Membership.objects.filter(project=project, user__username=username).select_related("user").first()
    if membership is None:
        raise NotFound()
    unknown = set(changes) - {"status", "trusted", "role", "adjudicator"}
    if unknown:
        raise InvalidInput(f"cannot be changed here: {', '.join(sorted(unknown))}", field=sorted(unknown)[0])
    if "status" in changes:
        if changes["status"] not in Membership.Status.values:
            raise InvalidInput(f"must be one of {', '.join(Membership.Status.values)}", field="status")
        membership.status = changes["status"]
    if "trusted" in changes:
        if not isinstance(changes["trusted"], bool):
            raise InvalidInput("must be true or false", field="trusted")
        membership.trusted = changes["trusted"]
    if "adjudicator" in changes:
        if not isinstance(changes["adjudicator"], bool):
            raise InvalidInput("must be true or false", field="adjudicator")
        membership.adjudicator = changes["adjudicator"]
    if "role" in changes:
        if changes["role"] not in Membership.Role.values:
            raise InvalidInput(f"must be one of {', '.join(Membership.Role.values)}", field="role")
        if membership.user_id == actor.pk and changes["role"] != Membership.Role.SUPERVISOR:
            raise InvalidInput("you cannot remove your own supervisor role", field="role")
        membership.role = changes["role"]
    with transaction.atomic():
        membership.save()
        if membership.status == Membership.Status.DISQUALIFIED:
            # A disqualified member's open claims give their slots back at once.
            Assignment.objects.filter(project=project, annotator=membership.user, status=Assignment.Status.CLAIMED).update(
                status=Assignment.Status.EXPIRED, draft=None
            )
    return membership
