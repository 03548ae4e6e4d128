"""Routes of HeQ: the review, validation, quality and final-audit pages (`urlpatterns`, at the
site's root), question validation, the question export and the final audit's API
(`api_urlpatterns`, under /api/)."""

from django.urls import path

from . import api, pages

urlpatterns = [
    path("p/<slug:slug>/review/", pages.review, name="review-qa"),
    path("p/<slug:slug>/validate/", pages.validate, name="validate-qa"),
    path("p/<slug:slug>/quality/", pages.quality, name="quality-qa"),
    path("p/<slug:slug>/question-audit/", pages.question_audit, name="question-audit-qa"),
]

api_urlpatterns = [
    path("items/<id:item_id>/answer-corrections/", api.AnswerCorrectionView.as_view(), name="api-answer-correction"),
    path("projects/<slug:slug>/validations/next/", api.ValidationNextView.as_view(), name="api-validation-next"),
    path("validations/submit/", api.ValidationSubmitView.as_view(), name="api-validation-submit"),
    path("projects/<slug:slug>/questions/export/", api.QuestionExportView.as_view(), name="api-question-export"),
    path("projects/<slug:slug>/question-audit/", api.QuestionAuditView.as_view(), name="api-question-audit"),
    path(
        "projects/<slug:slug>/question-audit/<int:audit_id>/",
        api.QuestionAuditMarkView.as_view(),
        name="api-question-audit-mark",
    ),
]
