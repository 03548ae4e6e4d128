"""Token authentication with the token and its user read in one hand-written query.

DRF's own class builds the same join through the ORM on every request; that compile cost
more CPU than the rest of a `next` call once the annotate path was hand-written
(bench/annotate.py). Same answers: an unknown token or an inactive user is refused."""

from django.contrib.auth import get_user_model
from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token

from annotation.sql import fetch_models, select_columns


class FastTokenAuthentication(TokenAuthentication):
    def authenticate(self, request):
        try:
            return super().authenticate(request)
        except UnicodeEncodeError:
            # DRF encodes the header as latin-1; a WSGI server never hands over anything
            # else, but an in-process caller can, and that is a bad token, not a 500.
            raise exceptions.AuthenticationFailed(_("Invalid token.")) from None

    def authenticate_credentials(self, key):
        user_model = get_user_model()
        # Keys are 40 characters; anything longer, or with a NUL the driver would refuse,
        # cannot match and needs no query.
        if len(key) > Token._meta.get_field("key").max_length or "\x00" in key:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        found = fetch_models(
            f"SELECT {select_columns(Token, 't')}, {select_columns(user_model, 'u')} FROM {Token._meta.db_table} t"
            f" JOIN {user_model._meta.db_table} u ON u.{user_model._meta.pk.column} = t.user_id WHERE t.key = %s",
            [key],
            Token,
            user_model,
        )
        if found is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        token, user = found
        if not user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        token.user = user
        return user, token
