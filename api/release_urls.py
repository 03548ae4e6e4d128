from django.urls import path

from api import release_views, webhook_views

urlpatterns = [
    path("projects/<slug:slug>/releases/", release_views.ReleaseListView.as_view(), name="api-releases"),
    path("projects/<slug:slug>/releases/<str:version>/", release_views.ReleaseDetailView.as_view(), name="api-release"),
    path(
        "projects/<slug:slug>/releases/<str:version>/download/",
        release_views.ReleaseDownloadView.as_view(),
        name="api-release-download",
    ),
    path(
        "projects/<slug:slug>/releases/<str:version>/diff/<str:other>/",
        release_views.ReleaseDiffView.as_view(),
        name="api-release-diff",
    ),
    path("projects/<slug:slug>/webhooks/", webhook_views.WebhookListView.as_view(), name="api-webhooks"),
    path(
        "projects/<slug:slug>/webhooks/<id:webhook_id>/", webhook_views.WebhookDetailView.as_view(), name="api-webhook"
    ),
    path(
        "projects/<slug:slug>/webhooks/<id:webhook_id>/deliveries/<id:delivery_id>/resend/",
        webhook_views.DeliveryResendView.as_view(),
        name="api-webhook-resend",
    ),
]
