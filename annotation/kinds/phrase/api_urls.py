from django.urls import path

from . import api

urlpatterns = [
    path("projects/<slug:slug>/export/phrasis/", api.PhrasisExportView.as_view(), name="api-export-phrasis"),
]
