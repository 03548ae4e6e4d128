from django.urls import path

from annotation import views_lchaim

urlpatterns = [
    path("p/<slug:slug>/lchaim/", views_lchaim.lchaim_results, name="lchaim-results"),
    path("p/<slug:slug>/lchaim/sample/", views_lchaim.lchaim_sample, name="lchaim-sample"),
    path("p/<slug:slug>/lchaim/<str:table>.<str:fmt>", views_lchaim.lchaim_download, name="lchaim-download"),
]
