"""The one place that fetches objects with permission checks.

Everything a caller may not see raises the same `NotFound`, whether it is missing or
belongs to someone else; a caller who can see a project but lacks the role for an action
gets `PermissionDenied`. Pages and API views both come through here (docs/security.md "Scoping")."""

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet
from django.utils.translation import gettext as _

from annotation.errors import NotFound, PermissionDenied
from annotation.kinds.registry import require_installed_kind
from annotation.models import Assignment, Evaluation, Item, Job, Membership, Project

Role = Membership.Role


def is_admin(user: AbstractBaseUser) -> bool:
    return bool(user.is_authenticated and (user.is_staff or user.is_superuser))


STAFF_ROLES = (Role.SUPERVISOR, Role.REVIEWER)


def standing_memberships(user: AbstractBaseUser) -> QuerySet[Membership]:
    """The memberships that give `user` a standing in their project: all but those of a
    disqualified supervisor or reviewer, who sees the project as an outsider does (a
    disqualified annotator still reads their own work and is told why they get no items)."""
    return Membership.objects.filter(user=user).exclude(role__in=STAFF_ROLES, status=Membership.Status.DISQUALIFIED)


def projects_visible_to(user: AbstractBaseUser) -> QuerySet[Project]:
    if is_admin(user):
        return Project.objects.all()
    return Project.objects.filter(pk__in=standing_memberships(user).values("project_id"))


def project_ids_staffed_by(user: AbstractBaseUser) -> set[int] | None:
    """The projects `user` supervises or reviews (not disqualified); None for admins (every project)."""
    if is_admin(user):
        return None
    return set(standing_memberships(user).filter(role__in=STAFF_ROLES).values_list("project_id", flat=True))


def project_ids_supervised_by(user: AbstractBaseUser) -> set[int] | None:
    """The projects `user` supervises (not disqualified); None for admins (every project)."""
    if is_admin(user):
        return None
    return set(standing_memberships(user).filter(role=Role.SUPERVISOR).values_list("project_id", flat=True))


def membership_of(user: AbstractBaseUser, project: Project) -> Membership | None:
    """`user`'s membership in `project` if it gives them a standing (`standing_memberships`)."""
    if not user.is_authenticated:
        return None
    return standing_memberships(user).filter(project=project).first()


def can_manage_users(user: AbstractBaseUser) -> bool:
    """Admins and supervisors of any project (not disqualified) create users and projects
    (no open sign-up)."""
    return is_admin(user) or standing_memberships(user).filter(role=Role.SUPERVISOR).exists()


def access_project_for_user(user: AbstractBaseUser, slug: str, roles: tuple[str, ...] | None = None) -> Project:
    """The project `slug` if `user` is a member (or an admin), checking `roles` when given.

    Non-members and disqualified supervisors and reviewers get NotFound; members without
    one of `roles` get PermissionDenied; those who may see the project get KindNotInstalled
    when its kind is not installed (checked after the others, so that it tells nobody else
    the project exists)."""
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        raise NotFound()
    if not is_admin(user):
        membership = membership_of(user, project)
        if membership is None:
            raise NotFound()
        if roles is not None and membership.role not in roles:
            raise PermissionDenied(_("Your role in this project does not allow this."))
    require_installed_kind(project)
    return project


def access_project_for_supervisor(user: AbstractBaseUser, slug: str) -> Project:
    return access_project_for_user(user, slug, roles=(Role.SUPERVISOR,))


def access_project_for_staff(user: AbstractBaseUser, slug: str) -> Project:
    """Supervisors and reviewers: those who may read every item and annotation."""
    return access_project_for_user(user, slug, roles=(Role.SUPERVISOR, Role.REVIEWER))


def access_membership_for_annotator(user: AbstractBaseUser, slug: str) -> Membership:
    """The caller's annotator membership in `slug`; disqualified members are refused."""
    project = access_project_for_user(user, slug)
    membership = membership_of(user, project)
    if membership is None or membership.role != Role.ANNOTATOR:
        raise PermissionDenied(_("Only annotators of this project receive items."))
    if membership.status == Membership.Status.DISQUALIFIED:
        raise PermissionDenied(_("You no longer receive items in this project."))
    return membership


def supervises(user: AbstractBaseUser | None, project: Project) -> bool:
    """Whether `user` is an admin or a supervisor of `project` who is not disqualified."""
    if user is None:
        return False
    if is_admin(user):
        return True
    return standing_memberships(user).filter(project=project, role=Role.SUPERVISOR).exists()


def adjudicates(user: AbstractBaseUser, project: Project) -> bool:
    """Whether `user` may decide items of `project`'s adjudication queue: an admin, or a
    member who is a supervisor or marked `adjudicator`, and not disqualified."""
    if is_admin(user):
        return True
    membership = membership_of(user, project)
    return (
        membership is not None
        and membership.status != Membership.Status.DISQUALIFIED
        and (membership.role == Role.SUPERVISOR or membership.adjudicator)
    )


def access_project_for_adjudicator(user: AbstractBaseUser, slug: str) -> Project:
    """The project for those who adjudicate in it (`adjudicates`). Non-members get NotFound,
    other members PermissionDenied."""
    project = access_project_for_user(user, slug)
    if not adjudicates(user, project):
        raise PermissionDenied(_("Only supervisors and adjudicators of this project decide adjudicated items."))
    return project


def access_item_for_adjudicator(user: AbstractBaseUser, item_id: int) -> Item:
    """An item of the dataset (not a coherence probe) in a project `user` adjudicates in.
    Missing, a probe, or in a project the user is not a member of: NotFound."""
    item = Item.objects.select_related("project").filter(pk=item_id, probe_of__isnull=True).first()
    if item is None:
        raise NotFound()
    access_project_for_adjudicator(user, item.project.slug)
    return item


def access_assignment_for_annotator(user: AbstractBaseUser, assignment_id: int) -> Assignment:
    assignment = Assignment.objects.select_related("project", "item").filter(pk=assignment_id, annotator=user).first()
    if assignment is None:
        raise NotFound()
    require_installed_kind(assignment.project)
    return assignment


def access_item_for_staff(user: AbstractBaseUser, item_id: int) -> Item:
    item = Item.objects.select_related("project").filter(pk=item_id).first()
    if item is None:
        raise NotFound()
    access_project_for_staff(user, item.project.slug)
    return item


def access_job_for_user(user: AbstractBaseUser, job_id: int) -> Job:
    """A job is visible to the supervisors of its project, and to whoever started it while
    they are still a member of that project in standing (a job of no project: its starter)."""
    job = Job.objects.select_related("project").filter(pk=job_id).first()
    if job is None:
        raise NotFound()
    if is_admin(user):
        return job
    if job.project is None:
        if job.created_by_id == user.pk:
            return job
        raise NotFound()
    membership = membership_of(user, job.project)
    if membership is not None and (job.created_by_id == user.pk or membership.role == Role.SUPERVISOR):
        return job
    raise NotFound()


def access_evaluation_for_staff(user: AbstractBaseUser, slug: str, evaluation_id: int) -> Evaluation:
    """A model evaluation of project `slug`, for its supervisors and reviewers."""
    project = access_project_for_staff(user, slug)
    evaluation = Evaluation.objects.select_related("project", "job").filter(project=project, pk=evaluation_id).first()
    if evaluation is None:
        raise NotFound()
    return evaluation
