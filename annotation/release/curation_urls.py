from django.urls import path

from annotation.release import curation_pages as pages

urlpatterns = [
    path("p/<slug:slug>/release/", pages.release, name="release"),
]
