from django.urls import path

from api import results_views

urlpatterns = [
    path("projects/<slug:slug>/agreement/", results_views.AgreementView.as_view(), name="api-agreement"),
    path("projects/<slug:slug>/report/", results_views.ReportView.as_view(), name="api-report"),
]
