"""The admin's user pages with the API's username rules (annotation/services/users.py):
no look-alike of another user's name. Passwords are checked there by Django's validators
(AUTH_PASSWORD_VALIDATORS), as everywhere."""

from django import forms
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.forms import AdminUserCreationForm, UserChangeForm

from annotation.errors import ApplicationError
from annotation.services.users import username_clean


def _username_by_the_rules(username, user_pk=None):
    try:
        return username_clean(username, user_pk=user_pk)
    except ApplicationError as exc:
        raise forms.ValidationError(exc.message) from None


class UserCreationWithRulesForm(AdminUserCreationForm):
    def clean_username(self):
        username = super().clean_username()  # None after Django's own case-insensitive duplicate check
        return _username_by_the_rules(username) if username else username


class UserChangeWithRulesForm(UserChangeForm):
    def clean_username(self):
        username = self.cleaned_data.get("username")
        if not username or "username" not in self.changed_data:
            return username  # a user created before these rules can still be edited
        return _username_by_the_rules(username, user_pk=self.instance.pk)


class UserWithRulesAdmin(UserAdmin):
    add_form = UserCreationWithRulesForm
    form = UserChangeWithRulesForm


admin.site.unregister(get_user_model())
admin.site.register(get_user_model(), UserWithRulesAdmin)
