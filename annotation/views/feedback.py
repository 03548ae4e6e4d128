"""The annotator's feedback inbox (review and feedback: annotation/services/reviews.py),
rendered on the server without any script; each message carries its project's lang and dir."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from annotation.kinds.registry import installed_kind
from annotation.services.reviews import GRADE_LABELS, feedback_list_for_user, feedback_mark_read, feedback_unread_count

FEEDBACK_PAGE_SIZE = 200


@login_required
def feedback(request):
    """The caller's inbox across projects, newest first, with the unread count; a graded
    question shows as its kind describes it (`Kind.feedback_details`)."""
    entries = list(feedback_list_for_user(request.user)[:FEEDBACK_PAGE_SIZE])
    for entry in entries:
        entry.grade_label = GRADE_LABELS.get(entry.review.grade, entry.review.grade) if entry.review else ""
        entry.question_text = entry.answer = entry.paragraph = None
        kind = installed_kind(entry.project.kind)
        if entry.review and entry.review.question is not None and kind is not None:
            for key, value in kind.feedback_details(entry.review).items():
                setattr(entry, key, value)
    return render(
        request, "annotation/feedback.html", {"messages_list": entries, "unread": feedback_unread_count(request.user)}
    )


@login_required
@require_POST
def feedback_read(request, feedback_id):
    feedback_mark_read(user=request.user, feedback_id=feedback_id)
    return redirect("feedback")
