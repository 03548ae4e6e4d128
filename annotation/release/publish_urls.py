from django.urls import path

from annotation.release import publish_pages as pages

urlpatterns = [
    path("p/<slug:slug>/releases/", pages.releases, name="releases"),
]
