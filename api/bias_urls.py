from django.urls import path

from api import bias_views

urlpatterns = [
    path("projects/<slug:slug>/bias/", bias_views.BiasView.as_view(), name="api-bias"),
]
