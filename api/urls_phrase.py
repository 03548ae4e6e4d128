from django.urls import path

from api import views_phrase

urlpatterns = [
    path("projects/<slug:slug>/export/phrasis/", views_phrase.PhrasisExportView.as_view(), name="api-export-phrasis"),
]
