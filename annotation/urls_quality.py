from django.urls import path

from annotation import views_quality

urlpatterns = [
    path("p/<slug:slug>/quality/", views_quality.quality_page, name="quality"),
    path("p/<slug:slug>/adjudication/", views_quality.adjudication_page, name="adjudication"),
]
