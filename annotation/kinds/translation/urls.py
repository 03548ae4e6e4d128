"""Routes of the translation kind: no pages of its own (its results page is the LCHAIM
one, `annotation/kinds/lchaim/urls.py`), and its API operations (`api_urlpatterns`, under
/api/): the LCHAIM import, the back-translation filter and the ratings export."""

from django.urls import path

from . import api

urlpatterns: list = []

api_urlpatterns = [
    path("projects/<slug:slug>/import-lchaim/", api.LchaimImportView.as_view(), name="api-import-lchaim"),
    path("projects/<slug:slug>/back-translation/", api.BackTranslationView.as_view(), name="api-back-translation"),
    path(
        "projects/<slug:slug>/back-translation/restore/",
        api.BackTranslationRestoreView.as_view(),
        name="api-back-translation-restore",
    ),
    path("projects/<slug:slug>/ratings-export/", api.RatingsExportView.as_view(), name="api-ratings-export"),
]
