"""Routes of the feedback inbox."""

from django.urls import path

from . import views_feedback

urlpatterns = [
    path("feedback/", views_feedback.feedback, name="feedback"),
    path("feedback/<id:feedback_id>/read/", views_feedback.feedback_read, name="feedback-read"),
]
