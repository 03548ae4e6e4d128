from django.urls import path

from api import quality_views

urlpatterns = [
    path("projects/<slug:slug>/annotators/", quality_views.AnnotatorsView.as_view(), name="api-annotators"),
    path("projects/<slug:slug>/adjudication/", quality_views.AdjudicationQueueView.as_view(), name="api-adjudication"),
    path("items/<id:item_id>/adjudicate/", quality_views.AdjudicateView.as_view(), name="api-item-adjudicate"),
]
