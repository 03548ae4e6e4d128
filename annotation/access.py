"""The one place that fetches objects with permission checks.

Everything a caller may not see raises the same `NotFound`, whether it is missing or
belongs to someone else; a caller who can see a project but lacks the role for an action
gets `PermissionDenied`. Pages and API views both come through here (DESIGN.md §7)."""

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet

from annotation.errors import NotFound, PermissionDenied
from annotation.models import Assignment, Item, Job, Membership, Project

Role = Membership.Role


def is_admin(user: AbstractBaseUser) -> bool:
    return bool(user.is_authenticated and (user.is_staff or user.is_superuser))


def projects_visible_to(user: AbstractBaseUser) -> QuerySet[Project]:
    if is_admin(user):
        return Project.objects.all()
    return Project.objects.filter(memberships__user=user).distinct()


def membership_of(user: AbstractBaseUser, project: Project) -> Membership | None:
    return Membership.objects.filter(project=project, user=user).first()


def can_manage_users(user: AbstractBaseUser) -> bool:
    """Admins and supervisors of any project create users and projects (no open sign-up)."""
    return is_admin(user) or Membership.objects.filter(user=user, role=Role.SUPERVISOR).exists()


def access_project_for_user(user: AbstractBaseUser, slug: str, roles: tuple[str, ...] | None = None) -> Project:
    """The project `slug` if `user` is a member (or an admin), checking `roles` when given.

    Non-members get NotFound; members without one of `roles` get PermissionDenied."""
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        raise NotFound()
    if is_admin(user):
        return project
    membership = membership_of(user, project)
    if membership is None:
        raise NotFound()
    if roles is not None and membership.role not in roles:
        raise PermissionDenied("Your role in this project does not allow this.")
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
        raise PermissionDenied("Only annotators of this project receive items.")
    if membership.status == Membership.Status.DISQUALIFIED:
        raise PermissionDenied("You no longer receive items in this project.")
    return membership


def access_assignment_for_annotator(user: AbstractBaseUser, assignment_id: int) -> Assignment:
    assignment = Assignment.objects.select_related("project", "item").filter(pk=assignment_id, annotator=user).first()
    if assignment is None:
        raise NotFound()
    return assignment


def access_item_for_staff(user: AbstractBaseUser, item_id: int) -> Item:
    item = Item.objects.select_related("project").filter(pk=item_id).first()
    if item is None:
        raise NotFound()
    access_project_for_staff(user, item.project.slug)
    return item


def access_job_for_user(user: AbstractBaseUser, job_id: int) -> Job:
    """A job is visible to whoever started it and to the supervisors of its project."""
    job = Job.objects.select_related("project").filter(pk=job_id).first()
    if job is None:
        raise NotFound()
    if is_admin(user) or job.created_by_id == user.pk:
        return job
    if job.project is not None and Membership.objects.filter(
        project=job.project, user=user, role=Role.SUPERVISOR
    ).exists():
        return job
    raise NotFound()
