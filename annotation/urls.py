from django.contrib.auth import views as auth_views
from django.urls import include, path

from annotation import throttle, views
from annotation.kinds.registry import page_url_modules

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz/", views.healthz, name="healthz"),
    path(
        "login/",
        throttle.answer_429_when_refused(auth_views.LoginView.as_view(authentication_form=throttle.LoginForm)),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("p/<slug:slug>/", views.project_overview, name="project"),
    path("p/<slug:slug>/annotate/", views.annotate, name="annotate"),
    path("p/<slug:slug>/members/add/", views.project_member_add, name="project-member-add"),
    path("p/<slug:slug>/members/<str:username>/", views.project_member_update, name="project-member-update"),
    path("p/<slug:slug>/import/", views.project_import, name="project-import"),
    path("", include("annotation.urls_dashboard")),
    path("", include("annotation.urls_quality")),
    path("", include("annotation.urls_audit")),
    path("", include("annotation.release.urls")),
    path("", include("annotation.release.bias_urls")),
    path("", include("annotation.console.urls")),
    path("", include("annotation.release.curation_urls")),
    path("", include("annotation.release.publish_urls")),
    path("", include("annotation.urls_feedback")),
    # Each kind's own pages.
    *(path("", include(module)) for module in page_url_modules()),
]
