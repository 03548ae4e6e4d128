from django.urls import path

from annotation import views_audit

urlpatterns = [
    path("p/<slug:slug>/audit/", views_audit.audit_page, name="audit"),
]
