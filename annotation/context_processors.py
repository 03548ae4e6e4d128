"""Values every page's top bar reads."""

from django.utils.functional import SimpleLazyObject

from annotation.models import Feedback


def unread_feedback_count(request) -> int:
    """The caller's unread feedback messages: one COUNT on the inbox index, at most once per
    request (kept on the request), and none for anonymous visitors."""
    cached = getattr(request, "_mashov_unread_feedback", None)
    if cached is None:
        user = getattr(request, "user", None)
        cached = (
            Feedback.objects.filter(recipient=user, read_at__isnull=True).count()
            if user and user.is_authenticated
            else 0
        )
        request._mashov_unread_feedback = cached
    return cached


def inbox(request) -> dict:
    """`inbox_unread` for the top bar's inbox link, computed only if a template reads it."""
    return {"inbox_unread": SimpleLazyObject(lambda: unread_feedback_count(request))}
