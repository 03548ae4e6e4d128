from django.urls import path

from annotation.release import pages

urlpatterns = [
    path("p/<slug:slug>/release/", pages.release, name="release"),
]
