"""Routes of HeQ's review-and-feedback loop, question validation and question export."""

from django.urls import path

from . import api

urlpatterns = [
    path("projects/<slug:slug>/reviews/pending/", api.PendingReviewsView.as_view(), name="api-reviews-pending"),
    path("annotations/<id:annotation_id>/review/", api.ReviewView.as_view(), name="api-annotation-review"),
    path("me/feedback/", api.FeedbackListView.as_view(), name="api-feedback"),
    path("me/feedback/<id:feedback_id>/read/", api.FeedbackReadView.as_view(), name="api-feedback-read"),
    path("projects/<slug:slug>/validations/next/", api.ValidationNextView.as_view(), name="api-validation-next"),
    path("validations/submit/", api.ValidationSubmitView.as_view(), name="api-validation-submit"),
    path("projects/<slug:slug>/questions/export/", api.QuestionExportView.as_view(), name="api-question-export"),
]
