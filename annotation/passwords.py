"""Password validators, named in AUTH_PASSWORD_VALIDATORS beside Django's own. Django calls
them wherever a password is chosen (the API's user creation, the admin's forms,
createsuperuser, changepassword), and calls their `password_changed` after every save of
a new password (AbstractBaseUser.save), whatever path set it."""

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from annotation.metrics.text import visible_length


class VisibleCharactersValidator:
    """At least `min_visible` characters that show: eight spaces, eight RLMs or a letter
    padded with ZWNJs would pass a plain length check but are no secret at all. Spaces
    between words still count towards Django's MinimumLengthValidator, so passphrases
    ("a long passphrase") are fine."""

    def __init__(self, min_visible: int = 8):
        self.min_visible = min_visible

    def validate(self, password, user=None):
        if visible_length(password) < self.min_visible:
            raise ValidationError(self.get_help_text(), code="password_too_few_visible")

    def get_help_text(self):
        return ngettext(
            "Your password must contain at least %(n)d visible character (spaces and invisible characters do not count).",
            "Your password must contain at least %(n)d visible characters (spaces and invisible characters do not count).",
            self.min_visible,
        ) % {"n": self.min_visible}


class RevokeTokensOnPasswordChange:
    """Validates nothing; ends the user's API token when their password changes.

    This is the one hook Django runs after a new password is saved on every path (the API,
    the admin's password form, `manage.py changepassword`, a password reset), so the rule
    lives here rather than in each of them or in a signal that would have to guess from
    the hash whether the password changed. Session logins end on their own: Django checks
    a session against the password hash."""

    def validate(self, password, user=None):
        return None

    def password_changed(self, password, user=None):
        from annotation.services.users import user_token_revoke

        if user is not None and user.pk is not None:
            user_token_revoke(user=user)

    def get_help_text(self):
        return _("Changing your password signs your API token out.")
