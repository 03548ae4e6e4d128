"""Routes of the nli API operations: the author's revisions."""

from django.urls import path

from . import api

urlpatterns = [
    path("projects/<slug:slug>/revisions/", api.RevisionListView.as_view(), name="api-revisions"),
    path("items/<id:item_id>/revise/", api.ItemReviseView.as_view(), name="api-item-revise"),
]
