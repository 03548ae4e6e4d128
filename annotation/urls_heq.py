"""Routes of the HeQ pages: review, feedback inbox, validation, quality dashboard."""

from django.urls import path

from annotation import views_heq

urlpatterns = [
    path("p/<slug:slug>/review/", views_heq.review, name="review-qa"),
    path("p/<slug:slug>/validate/", views_heq.validate, name="validate-qa"),
    path("p/<slug:slug>/quality/", views_heq.quality, name="quality-qa"),
    path("feedback/", views_heq.feedback, name="feedback"),
    path("feedback/<id:feedback_id>/read/", views_heq.feedback_read, name="feedback-read"),
]
