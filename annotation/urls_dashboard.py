from django.urls import path

from annotation import views_dashboard

urlpatterns = [
    path("p/<slug:slug>/dashboard/", views_dashboard.dashboard, name="dashboard"),
    path("p/<slug:slug>/dashboard/recompute/", views_dashboard.dashboard_recompute, name="dashboard-recompute"),
]
