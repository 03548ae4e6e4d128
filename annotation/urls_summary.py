from django.urls import path

from annotation import views_summary

urlpatterns = [
    path("p/<slug:slug>/summaries/", views_summary.summary_results, name="summary-results"),
    path("p/<slug:slug>/summaries/intrinsic/", views_summary.summary_intrinsic, name="summary-intrinsic"),
    path("p/<slug:slug>/summaries/recompute/", views_summary.summary_recompute, name="summary-recompute"),
]
