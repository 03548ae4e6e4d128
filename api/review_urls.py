"""Routes of review and feedback."""

from django.urls import path

from . import review_views as views

urlpatterns = [
    path("projects/<slug:slug>/reviews/pending/", views.PendingReviewsView.as_view(), name="api-reviews-pending"),
    path("annotations/<id:annotation_id>/review/", views.ReviewView.as_view(), name="api-annotation-review"),
    path("me/feedback/", views.FeedbackListView.as_view(), name="api-feedback"),
    path("me/feedback/<id:feedback_id>/read/", views.FeedbackReadView.as_view(), name="api-feedback-read"),
]
