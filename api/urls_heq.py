"""Routes of HeQ's review-and-feedback loop, question validation and question export."""

from django.urls import path

from api import views_heq

urlpatterns = [
    path("projects/<slug:slug>/reviews/pending/", views_heq.PendingReviewsView.as_view(), name="api-reviews-pending"),
    path("annotations/<id:annotation_id>/review/", views_heq.ReviewView.as_view(), name="api-annotation-review"),
    path("me/feedback/", views_heq.FeedbackListView.as_view(), name="api-feedback"),
    path("me/feedback/<id:feedback_id>/read/", views_heq.FeedbackReadView.as_view(), name="api-feedback-read"),
    path("projects/<slug:slug>/validations/next/", views_heq.ValidationNextView.as_view(), name="api-validation-next"),
    path("validations/submit/", views_heq.ValidationSubmitView.as_view(), name="api-validation-submit"),
    path("projects/<slug:slug>/questions/export/", views_heq.QuestionExportView.as_view(), name="api-question-export"),
]
