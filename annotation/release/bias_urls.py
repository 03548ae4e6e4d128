from django.urls import path

from annotation.release import bias_pages

urlpatterns = [
    path("p/<slug:slug>/bias/", bias_pages.bias_page, name="bias"),
]
