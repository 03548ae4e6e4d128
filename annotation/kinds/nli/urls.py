"""Routes of the nli pages: the author's revision page."""

from django.urls import path

from . import pages

urlpatterns = [
    path("p/<slug:slug>/revisions/", pages.revisions, name="revisions"),
]
