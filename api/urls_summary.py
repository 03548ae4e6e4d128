from django.urls import path

from api import views_summary

urlpatterns = [
    path("projects/<slug:slug>/intrinsic/", views_summary.IntrinsicView.as_view(), name="api-intrinsic"),
]
