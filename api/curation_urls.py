from django.urls import path

from api import curation_views as views

urlpatterns = [
    path("projects/<slug:slug>/duplicates/", views.DuplicatesView.as_view(), name="api-duplicates"),
    path(
        "projects/<slug:slug>/duplicates/remove-all/",
        views.DuplicatesRemoveAllView.as_view(),
        name="api-duplicates-remove-all",
    ),
    path(
        "projects/<slug:slug>/duplicates/restore/", views.DuplicatesRestoreView.as_view(), name="api-duplicates-restore"
    ),
    path("projects/<slug:slug>/duplicates/<id:pair_id>/", views.DuplicateDecisionView.as_view(), name="api-duplicate"),
    path("projects/<slug:slug>/splits/", views.SplitsView.as_view(), name="api-splits"),
    path("projects/<slug:slug>/leaks/", views.LeaksView.as_view(), name="api-leaks"),
]
