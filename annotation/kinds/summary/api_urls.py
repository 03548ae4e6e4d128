from django.urls import path

from annotation.kinds.summary import api

urlpatterns = [
    path("projects/<slug:slug>/intrinsic/", api.IntrinsicView.as_view(), name="api-intrinsic"),
]
