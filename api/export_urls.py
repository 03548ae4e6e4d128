from django.urls import path

from api import export_views

urlpatterns = [
    path("projects/<slug:slug>/export/", export_views.ExportView.as_view(), name="api-export"),
]
