from django.urls import path

from . import pages

urlpatterns = [
    path("p/<slug:slug>/lchaim/", pages.lchaim_results, name="lchaim-results"),
    path("p/<slug:slug>/lchaim/sample/", pages.lchaim_sample, name="lchaim-sample"),
    path("p/<slug:slug>/lchaim/<str:table>.<str:fmt>", pages.lchaim_download, name="lchaim-download"),
]
