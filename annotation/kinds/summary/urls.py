from django.urls import path

from annotation.kinds.summary import pages

urlpatterns = [
    path("p/<slug:slug>/summaries/", pages.summary_results, name="summary-results"),
    path("p/<slug:slug>/summaries/intrinsic/", pages.summary_intrinsic, name="summary-intrinsic"),
    path("p/<slug:slug>/summaries/recompute/", pages.summary_recompute, name="summary-recompute"),
]
