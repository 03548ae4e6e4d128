"""Routes of what the two LCHAIM kinds share: the results pages (`urlpatterns`, at the
site's root) and the stratified sample's API operation (`api_urlpatterns`, under /api/)."""

from django.urls import path

from . import api, pages

urlpatterns = [
    path("p/<slug:slug>/lchaim/", pages.lchaim_results, name="lchaim-results"),
    path("p/<slug:slug>/lchaim/sample/", pages.lchaim_sample, name="lchaim-sample"),
    path("p/<slug:slug>/lchaim/<str:table>.<str:fmt>", pages.lchaim_download, name="lchaim-download"),
]

api_urlpatterns = [
    path("projects/<slug:slug>/sample/", api.SampleView.as_view(), name="api-sample"),
]
