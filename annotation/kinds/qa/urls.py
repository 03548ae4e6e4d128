"""Routes of the HeQ pages: review, validation, quality dashboard."""

from django.urls import path

from . import pages

urlpatterns = [
    path("p/<slug:slug>/review/", pages.review, name="review-qa"),
    path("p/<slug:slug>/validate/", pages.validate, name="validate-qa"),
    path("p/<slug:slug>/quality/", pages.quality, name="quality-qa"),
    path("p/<slug:slug>/question-audit/", pages.question_audit, name="question-audit-qa"),
]
