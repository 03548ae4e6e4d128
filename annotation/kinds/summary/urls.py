"""Routes of the summary kind: the results pages (`urlpatterns`, at the site's root) and
the intrinsic measures (`api_urlpatterns`, under /api/)."""

from django.urls import path

from . import api, pages

urlpatterns = [
    path("p/<slug:slug>/summaries/", pages.summary_results, name="summary-results"),
    path("p/<slug:slug>/summaries/intrinsic/", pages.summary_intrinsic, name="summary-intrinsic"),
    path("p/<slug:slug>/summaries/recompute/", pages.summary_recompute, name="summary-recompute"),
]

api_urlpatterns = [
    path("projects/<slug:slug>/intrinsic/", api.IntrinsicView.as_view(), name="api-intrinsic"),
]
