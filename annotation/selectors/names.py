"""Who is named how: one rule for every page and API. Supervisors of the project and admins
see usernames; everyone else (reviewers, annotators) sees the pseudonym the project's exports
give each person (`shown_name`)."""

import re

from django.contrib.auth import get_user_model
from django.utils.crypto import salted_hmac

from annotation import access
from annotation.models import Annotation, Membership, Project

PSEUDONYM_LENGTH = 16  # hex digits of HMAC-SHA256: 64 bits
# Item.computed's key for an author known only by an export's pseudonym (an imported export).
AUTHOR_PSEUDONYM = "author_pseudonym"
PSEUDONYM_SHAPE = re.compile(rf"[0-9a-f]{{{PSEUDONYM_LENGTH}}}")


def is_pseudonym(text: str) -> bool:
    """Whether `text` has the shape of an export pseudonym (it may still name nobody here)."""
    return bool(PSEUDONYM_SHAPE.fullmatch(text))


def annotator_pseudonym(project_id: int, user_id: int) -> str:
    """A user's id in one project's exports: HMAC-SHA256 keyed by SECRET_KEY (salted for
    this use) over (project id, user id), first 16 hex digits. Stable across exports of
    the project, different between projects, and not linkable to a user without the key."""
    return salted_hmac("mashov.export.annotator", f"{project_id}:{user_id}", algorithm="sha256").hexdigest()[
        :PSEUDONYM_LENGTH
    ]


def shown_name(project_id: int, user_id: int, username: str, *, names: bool) -> str:
    """How a person appears to the project's staff: the username where `names` (supervisors
    see names), else the pseudonym the project's exports give them."""
    return username if names else annotator_pseudonym(project_id, user_id)


def names_visible(user, project: Project) -> bool:
    """Whether `user` sees the usernames of `project`'s people: its supervisors and admins."""
    return access.supervises(user, project)


def pseudonyms_for_project(project: Project) -> dict[str, str]:
    """username → export pseudonym, for everyone who is or was in `project`: its members and
    whoever annotated in it (two queries)."""
    people = set(Membership.objects.filter(project=project).values_list("user_id", flat=True))
    people |= set(
        Annotation.objects.filter(item__project=project).order_by().values_list("annotator_id", flat=True).distinct()
    )
    return {
        username: annotator_pseudonym(project.pk, pk)
        for pk, username in get_user_model().objects.filter(pk__in=people).values_list("pk", "username")
    }


def names_for_viewer(data, project: Project, user):
    """`data` (a report: dicts, lists, strings, numbers) as `user` may see it: unchanged for
    those who see names, else with every dict key and string that is the username of one of
    the project's people replaced by that person's pseudonym."""
    if names_visible(user, project):
        return data
    return _replaced(data, pseudonyms_for_project(project))


def _replaced(value, names: dict[str, str]):
    if isinstance(value, str):
        return names.get(value, value)
    if isinstance(value, dict):
        return {_replaced(key, names): _replaced(item, names) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_replaced(item, names) for item in value]
    return value
