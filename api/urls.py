from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from annotation.kinds.registry import api_url_modules
from api import comfort_views, views

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path("auth/token/", views.TokenView.as_view(), name="api-token"),
    path("auth/token/current/", views.TokenRevokeView.as_view(), name="api-token-current"),
    path("users/", views.UserCreateView.as_view(), name="api-users"),
    path("users/<str:username>/password/", views.UserPasswordView.as_view(), name="api-user-password"),
    path("projects/", views.ProjectListView.as_view(), name="api-projects"),
    path("projects/<slug:slug>/", views.ProjectDetailView.as_view(), name="api-project"),
    path("projects/<slug:slug>/members/", views.MemberListView.as_view(), name="api-members"),
    path("projects/<slug:slug>/members/<str:username>/", views.MemberDetailView.as_view(), name="api-member"),
    path("projects/<slug:slug>/import/", views.ImportView.as_view(), name="api-import"),
    path("projects/<slug:slug>/items/", views.ItemListView.as_view(), name="api-items"),
    path("projects/<slug:slug>/next/", views.NextView.as_view(), name="api-next"),
    path("projects/<slug:slug>/progress/", views.ProgressView.as_view(), name="api-progress"),
    path("projects/<slug:slug>/preview/", views.PreviewView.as_view(), name="api-preview"),
    path("assignments/<id:assignment_id>/submit/", views.SubmitView.as_view(), name="api-submit"),
    path("assignments/<id:assignment_id>/skip/", comfort_views.SkipView.as_view(), name="api-skip"),
    path("assignments/<id:assignment_id>/heartbeat/", comfort_views.HeartbeatView.as_view(), name="api-heartbeat"),
    path("assignments/<id:assignment_id>/draft/", comfort_views.DraftView.as_view(), name="api-draft"),
    path("projects/<slug:slug>/mine/", comfort_views.MineView.as_view(), name="api-mine"),
    path("annotations/<id:annotation_id>/", comfort_views.AnnotationEditView.as_view(), name="api-annotation"),
    path("jobs/<id:job_id>/", views.JobView.as_view(), name="api-job"),
    path("", include("api.export_urls")),
    path("", include("api.results_urls")),
    path("", include("api.quality_urls")),
    path("", include("api.decision_urls")),
    path("", include("api.evaluation_urls")),
    path("", include("api.bias_urls")),
    path("", include("api.curation_urls")),
    path("", include("api.audit_urls")),
    path("", include("api.release_urls")),
    path("", include("api.review_urls")),
    # Each kind's own operations.
    *(path("", include(module)) for module in api_url_modules()),
]
