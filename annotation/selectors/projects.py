"""Reads about projects for the API's project views."""

from django.contrib.auth.models import AbstractBaseUser

from annotation import access
from annotation.models import Membership


def project_roles_of_user(user: AbstractBaseUser) -> dict[int, str] | None:
    """{project id: the role in which `user` reads it} for the projects they belong to;
    None for admins (a supervisor's view of every project). A disqualified member is no
    longer staff: their role reads as "annotator" (Kind.settings_shown_to)."""
    if access.is_admin(user):
        return None
    if user.pk is None:
        # No account, no memberships: the API schema's generation, run in the web master
        # before it forks, asks for an anonymous user's and must open no database connection.
        return {}
    roles = {}
    for project_id, role, status in Membership.objects.filter(user_id=user.pk).values_list(
        "project_id", "role", "status"
    ):
        roles[project_id] = Membership.Role.ANNOTATOR.value if status == Membership.Status.DISQUALIFIED else role
    return roles
