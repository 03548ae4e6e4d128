from django.urls import path

from . import api

urlpatterns = [
    path("projects/<slug:slug>/sample/", api.SampleView.as_view(), name="api-sample"),
]
