"""The account rules every path that names a user or sets a password goes through: the API
(`projects.user_create`), management commands (`projects.user_create_by_operator`) and the
admin's user forms (annotation/admin.py). Passwords are checked by Django's validators
(AUTH_PASSWORD_VALIDATORS, annotation/passwords.py), which every one of those paths calls."""

import re

from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_in
from django.core.exceptions import ValidationError
from django.core.validators import EmailValidator
from django.db.models.functions import Length
from django.utils.translation import gettext
from rest_framework.authtoken.models import Token

from annotation.errors import Conflict, InvalidInput
from annotation.metrics.text import imitates_across_scripts

USERNAME_RE = re.compile(r"^[\w.@+-]{1,150}$")


def username_clean(username: str, *, user_pk: int | None = None) -> str:
    """`username` in NFKC (as Django stores it: fullwidth "ａｄｍｉｎ" is "admin"), refused
    when it is another user's name up to case (Conflict) or imitates one in another script
    (InvalidInput). `user_pk` is the user being renamed, who may keep their own name.

    Reads every username of the same length: user creation is rare and the table small
    next to anything annotated. Two concurrent creations of look-alikes can both pass;
    only exact duplicates are settled by the unique constraint."""
    User = get_user_model()
    username = User.normalize_username(username)
    if not USERNAME_RE.match(username):
        raise InvalidInput(gettext("may contain only letters, digits and . @ + - _"), field="username")
    others = User.objects.exclude(pk=user_pk) if user_pk is not None else User.objects.all()
    same_length = others.annotate(length=Length("username")).filter(length=len(username))
    for existing in same_length.values_list("username", flat=True).iterator():
        if existing.casefold() == username.casefold():
            raise Conflict(gettext("a user with this username already exists"), field="username")
        if imitates_across_scripts(username, existing):
            raise InvalidInput(
                gettext("looks like the existing username “%(existing)s” written in other letters")
                % {"existing": existing},
                field="username",
            )
    return username


def email_clean(email: str) -> str:
    """`email` when Django's EmailValidator accepts it; "" stays "" (the address is optional)."""
    if email:
        try:
            EmailValidator()(email)
        except ValidationError:
            raise InvalidInput(gettext("is not a valid email address"), field="email") from None
    return email


def user_token_revoke(*, user) -> None:
    """Delete `user`'s API token: requests bearing it get 401 from now on, and the next
    `POST /api/auth/token/` issues a new key. Called on logout from the API and whenever
    the password changes (annotation/passwords.py)."""
    Token.objects.filter(user=user).delete()


def user_token_issue(*, user, request) -> str:
    """The key of `user`'s API token (a new one when they have none) for a login with their
    password. A login like the session's: `user_logged_in` fires, which sets `last_login`
    (an account a supervisor created stops being their invitation, services.projects)."""
    token, _ = Token.objects.get_or_create(user=user)
    user_logged_in.send(sender=user.__class__, request=request, user=user)
    return token.key
