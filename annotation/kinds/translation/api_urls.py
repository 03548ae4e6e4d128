from django.urls import path

from . import api as views

urlpatterns = [
    path("projects/<slug:slug>/import-lchaim/", views.LchaimImportView.as_view(), name="api-import-lchaim"),
    path("projects/<slug:slug>/back-translation/", views.BackTranslationView.as_view(), name="api-back-translation"),
    path(
        "projects/<slug:slug>/back-translation/restore/",
        views.BackTranslationRestoreView.as_view(),
        name="api-back-translation-restore",
    ),
    path("projects/<slug:slug>/ratings-export/", views.RatingsExportView.as_view(), name="api-ratings-export"),
]
