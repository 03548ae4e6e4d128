from django.urls import path

from api import decision_views

urlpatterns = [
    path("items/<id:item_id>/decisions/", decision_views.ItemDecisionsView.as_view(), name="api-item-decisions"),
    path("items/<id:item_id>/reopen/", decision_views.ItemReopenView.as_view(), name="api-item-reopen"),
]
