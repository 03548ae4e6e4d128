from django.urls import path

from api import evaluation_views

urlpatterns = [
    path("projects/<slug:slug>/evaluations/", evaluation_views.EvaluationListView.as_view(), name="api-evaluations"),
    path(
        "projects/<slug:slug>/evaluations/compare/",
        evaluation_views.EvaluationCompareView.as_view(),
        name="api-evaluation-compare",
    ),
    path(
        "projects/<slug:slug>/evaluations/<id:evaluation_id>/",
        evaluation_views.EvaluationDetailView.as_view(),
        name="api-evaluation",
    ),
]
