"""Routes of the nli kind: the author's revision page (`urlpatterns`, at the site's root)
and the author's revisions in the API (`api_urlpatterns`, under /api/)."""

from django.urls import path

from . import api, pages

urlpatterns = [
    path("p/<slug:slug>/revisions/", pages.revisions, name="revisions"),
]

api_urlpatterns = [
    path("projects/<slug:slug>/revisions/", api.RevisionListView.as_view(), name="api-revisions"),
    path("items/<id:item_id>/revise/", api.ItemReviseView.as_view(), name="api-item-revise"),
]
