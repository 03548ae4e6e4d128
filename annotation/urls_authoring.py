"""Routes of the authoring side: the author's revision page."""

from django.urls import path

from annotation import views_authoring

urlpatterns = [
    path("p/<slug:slug>/revisions/", views_authoring.revisions, name="revisions"),
]
