"""HeQ pages besides the authoring page (which the generic `annotate` view renders from
`QaAuthoringKind.template`): the reviewer's grading page, the annotator's feedback inbox and the
validator's page. Each only checks access and hands its config to static JS through
`json_script`; the JS talks to the REST API with the session and CSRF token (DESIGN.md §7)."""

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_POST

from annotation import access
from annotation.errors import InvalidInput, NotFound, PermissionDenied
from annotation.kinds.qa import GRADES, questions_of
from annotation.models import Membership
from annotation.services.reviews import feedback_list_for_user, feedback_mark_read, feedback_unread_count


def _refused(request, exc):
    return render(request, "annotation/refused.html", {"message": exc.message}, status=403)


@login_required
def review(request, slug):
    """Reviewers and supervisors grade the pending questions of a qa_authoring project."""
    try:
        project = access.access_project_for_staff(request.user, slug)
    except NotFound:
        raise Http404 from None
    except PermissionDenied as exc:
        return _refused(request, exc)
    if project.kind != "qa_authoring":
        raise Http404
    config = {
        "slug": project.slug,
        "pendingUrl": f"/api/projects/{project.slug}/reviews/pending/",
        "reviewUrl": "/api/annotations/{id}/review/",
        "grades": list(GRADES),
    }
    return render(request, "annotation/review_qa.html", {"project": project, "config": config})


GRADE_LABELS = {"rejected": _("rejected"), "verified": _("verified"), "good": _("good"), "gold": _("gold")}
FEEDBACK_PAGE_SIZE = 200


@login_required
def feedback(request):
    """The caller's inbox across projects, newest first, with the unread count. Rendered on
    the server (no script needed); each message carries its project's lang and dir."""
    entries = list(feedback_list_for_user(request.user)[:FEEDBACK_PAGE_SIZE])
    for entry in entries:
        entry.grade_label = GRADE_LABELS.get(entry.review.grade, entry.review.grade) if entry.review else ""
        entry.question_text = None
        if entry.review and entry.review.question is not None:
            questions = questions_of(entry.review.annotation.value)
            if entry.review.question < len(questions):
                entry.question_text = questions[entry.review.question].get("question")
    return render(
        request, "annotation/feedback.html", {"messages_list": entries, "unread": feedback_unread_count(request.user)}
    )


@login_required
@require_POST
def feedback_read(request, feedback_id):
    try:
        feedback_mark_read(user=request.user, feedback_id=feedback_id)
    except NotFound:
        raise Http404 from None
    return redirect("feedback")


@login_required
def validate(request, slug):
    """Validators answer authored dev/test questions blind (HeQ §3.3)."""
    try:
        project = access.access_project_for_user(request.user, slug)
        membership = access.membership_of(request.user, project)
        if project.kind != "qa_authoring":
            raise Http404
        if membership is not None and membership.role == Membership.Role.ANNOTATOR and membership.status != Membership.Status.ACTIVE:
            raise PermissionDenied("Only active annotators, reviewers and supervisors validate questions.")
    except NotFound:
        raise Http404 from None
    except (PermissionDenied, InvalidInput) as exc:
        return _refused(request, exc)
    config = {
        "slug": project.slug,
        "nextUrl": f"/api/projects/{project.slug}/validations/next/",
        "submitUrl": "/api/validations/submit/",
    }
    return render(request, "annotation/validate_qa.html", {"project": project, "config": config})
