from django.contrib.auth import views as auth_views
from django.urls import include, path

from annotation import throttle
from annotation.kinds.registry import url_modules
from annotation.views import annotator_quality, audit, dashboard, feedback, projects

urlpatterns = [
    path("", projects.home, name="home"),
    path("healthz/", projects.healthz, name="healthz"),
    path(
        "login/",
        throttle.answer_429_when_refused(auth_views.LoginView.as_view(authentication_form=throttle.LoginForm)),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("p/<slug:slug>/", projects.project_overview, name="project"),
    path("p/<slug:slug>/annotate/", projects.annotate, name="annotate"),
    path("p/<slug:slug>/members/add/", projects.project_member_add, name="project-member-add"),
    path("p/<slug:slug>/members/<str:username>/", projects.project_member_update, name="project-member-update"),
    path("p/<slug:slug>/import/", projects.project_import, name="project-import"),
    path("p/<slug:slug>/dashboard/", dashboard.dashboard, name="dashboard"),
    path("p/<slug:slug>/dashboard/recompute/", dashboard.dashboard_recompute, name="dashboard-recompute"),
    path("p/<slug:slug>/annotators/", annotator_quality.annotator_quality_page, name="annotator-quality"),
    path("p/<slug:slug>/adjudication/", annotator_quality.adjudication_page, name="adjudication"),
    path("p/<slug:slug>/audit/", audit.audit_page, name="audit"),
    path("feedback/", feedback.feedback, name="feedback"),
    path("feedback/<id:feedback_id>/read/", feedback.feedback_read, name="feedback-read"),
    path("", include("annotation.release.urls")),
    path("", include("annotation.console.urls")),
    # Each kind's own pages.
    *(path("", include(module)) for module in url_modules()),
]
