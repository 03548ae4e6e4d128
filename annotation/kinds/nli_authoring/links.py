"""The link of an authoring project into the `nli_relabel` project that takes its generated
pairs: who may make it, and whether it still holds."""

from django.contrib.auth.models import AbstractBaseUser

from annotation.access import standing_memberships, supervises
from annotation.errors import NotFound
from annotation.models import Project


def access_relabel_target_for_linker(user: AbstractBaseUser, slug: str) -> Project:
    """The `nli_relabel` project `slug` if `user` may send another project's generated items
    into it: an admin, or one of its supervisors. A missing project, one the user does not
    supervise and one of another kind all raise the same NotFound."""
    project = Project.objects.filter(slug=slug, kind="nli_relabel").first() if isinstance(slug, str) else None
    if project is None or not supervises(user, project):
        raise NotFound()
    return project


def relabel_link_holds(source: Project, target: Project) -> bool:
    """Whether the `nli_authoring` project `source` may still put items into `target`: the
    user who made the link (its creator, the only one who sets `relabel_project`) must still
    be an admin or a supervisor of the target. Nothing done on the source's side alone, such
    as adding the target's supervisors to it, makes this true."""
    return target.kind == "nli_relabel" and supervises(source.created_by, target)


def linked_author_memberships(user: AbstractBaseUser, target: Project) -> dict:
    """`user`'s memberships in authoring projects linked into `target` whose link still
    holds, by the authoring project's slug."""
    memberships = (
        standing_memberships(user)
        .filter(project__kind="nli_authoring", project__settings__relabel_project=target.slug)
        .select_related("project__created_by")
    )
    return {m.project.slug: m for m in memberships if relabel_link_holds(m.project, target)}
