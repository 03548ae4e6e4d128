"""Routes of the phrase kind: the coherence dashboard (`urlpatterns`, at the site's root)
and the PhrasIS export (`api_urlpatterns`, under /api/)."""

from django.urls import path

from . import api, pages

urlpatterns = [
    path("p/<slug:slug>/coherence/", pages.coherence_dashboard, name="phrase-coherence"),
]

api_urlpatterns = [
    path("projects/<slug:slug>/export/phrasis/", api.PhrasisExportView.as_view(), name="api-export-phrasis"),
]
