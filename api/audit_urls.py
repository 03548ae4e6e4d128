from django.urls import path

from api import audit_views

urlpatterns = [
    path("projects/<slug:slug>/audit/", audit_views.AuditLogView.as_view(), name="api-audit"),
]
