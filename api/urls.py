from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from annotation.kinds.registry import api_url_modules
from api import views

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path("auth/token/", views.TokenView.as_view(), name="api-token"),
    path("auth/token/current/", views.TokenRevokeView.as_view(), name="api-token-current"),
    path("users/", views.UserCreateView.as_view(), name="api-users"),
    path("projects/", views.ProjectListView.as_view(), name="api-projects"),
    path("projects/<slug:slug>/", views.ProjectDetailView.as_view(), name="api-project"),
    path("projects/<slug:slug>/members/", views.MemberListView.as_view(), name="api-members"),
    path("projects/<slug:slug>/members/<str:username>/", views.MemberDetailView.as_view(), name="api-member"),
    path("projects/<slug:slug>/import/", views.ImportView.as_view(), name="api-import"),
    path("projects/<slug:slug>/items/", views.ItemListView.as_view(), name="api-items"),
    path("projects/<slug:slug>/next/", views.NextView.as_view(), name="api-next"),
    path("projects/<slug:slug>/progress/", views.ProgressView.as_view(), name="api-progress"),
    path("assignments/<id:assignment_id>/submit/", views.SubmitView.as_view(), name="api-submit"),
    path("jobs/<id:job_id>/", views.JobView.as_view(), name="api-job"),
    path("", include("api.export_urls")),
    path("", include("api.results_urls")),
    path("", include("api.curation_urls")),
    # Each kind's own operations.
    *(path("", include(module)) for module in api_url_modules()),
]
