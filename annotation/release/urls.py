from django.urls import path

from . import pages

urlpatterns = [
    path("p/<slug:slug>/leaderboard/", pages.leaderboard, name="leaderboard"),
    path("p/<slug:slug>/leaderboard/upload/", pages.leaderboard_upload, name="leaderboard-upload"),
]
