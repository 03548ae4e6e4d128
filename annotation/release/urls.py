from django.urls import path

from annotation.release.views import bias, curation, leaderboard, releases

urlpatterns = [
    path("p/<slug:slug>/leaderboard/", leaderboard.leaderboard, name="leaderboard"),
    path("p/<slug:slug>/leaderboard/upload/", leaderboard.leaderboard_upload, name="leaderboard-upload"),
    path("p/<slug:slug>/bias/", bias.bias_page, name="bias"),
    path("p/<slug:slug>/release/", curation.release, name="release"),
    path("p/<slug:slug>/releases/", releases.releases, name="releases"),
]
