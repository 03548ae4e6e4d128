"""Routes of HeQ's question validation and question export."""

from django.urls import path

from . import api

urlpatterns = [
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
