from django.urls import path

from annotation import views_quality

urlpatterns = [
    path("p/<slug:slug>/annotators/", views_quality.quality_page, name="annotator-quality"),
    path("p/<slug:slug>/adjudication/", views_quality.adjudication_page, name="adjudication"),
]
