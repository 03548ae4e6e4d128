"""Who may read and revise the failed items of a relabel project: their authors, members of
the project or of an authoring project whose link into it still holds (`Kind.author_sources`
of the linking kind)."""

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.utils.translation import gettext as _

from annotation.access import is_admin, membership_of
from annotation.errors import NotFound, PermissionDenied
from annotation.kinds.registry import installed_kinds
from annotation.models import Item, Membership, Project


def _source_slug(item: Item) -> str:
    """The slug of the `nli_authoring` project that generated `item`, as written into its
    group (`"<authoring slug>:<question id>"`); "" for other items."""
    return item.group.split(":", 1)[0] if ":" in item.group else ""


@dataclass(frozen=True)
class AuthorStanding:
    """What gives a user the right to revise their items of `project`: their membership in
    it, and their memberships in the authoring projects whose link into it still holds
    (FarsTail authors need not relabel), by slug."""

    project: Project
    admin: bool
    member: Membership | None
    sources: dict[str, Membership]

    def refusal(self, item: Item) -> Exception | None:
        """Why the user may not revise `item` (one of their own in `project`), or None:
        disqualified in the project or in the authoring project that generated it is a
        PermissionDenied (as for next and submit); no standing at all is NotFound."""
        via_source = self.sources.get(_source_slug(item))
        for membership in (self.member, via_source):
            if membership is not None and membership.status == Membership.Status.DISQUALIFIED:
                return PermissionDenied(_("You no longer revise items in this project."))
        if self.member is None and via_source is None and not self.admin:
            return NotFound()
        return None


def access_project_for_author(user: AbstractBaseUser, slug: str) -> AuthorStanding:
    """The project whose failed items `user` reads and revises, with their standing in it.

    Missing, or no membership in it nor in an authoring project linked into it: NotFound.
    Disqualified in it, or in every linked authoring project when not a member: PermissionDenied."""
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        raise NotFound()
    sources = {}
    for kind in installed_kinds():
        sources.update(kind.author_sources(user, project))
    standing = AuthorStanding(
        project=project, admin=is_admin(user), member=membership_of(user, project), sources=sources
    )
    if standing.member is None and not sources and not standing.admin:
        raise NotFound()
    disqualified = Membership.Status.DISQUALIFIED
    if (standing.member is not None and standing.member.status == disqualified) or (
        standing.member is None and not standing.admin and all(m.status == disqualified for m in sources.values())
    ):
        raise PermissionDenied(_("You no longer revise items in this project."))
    return standing
