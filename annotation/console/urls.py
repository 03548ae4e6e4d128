from django.urls import path

from annotation.console import views

urlpatterns = [
    path("console/projects/new/", views.project_new, name="console-project-new"),
    path("console/users/", views.users, name="console-users"),
    path("console/p/<slug:slug>/settings/", views.project_settings, name="console-project-settings"),
    path("console/p/<slug:slug>/items/", views.items, name="console-items"),
    path("console/p/<slug:slug>/items/<id:item_id>/", views.item_detail, name="console-item"),
    path("console/p/<slug:slug>/preview/", views.preview, name="console-preview"),
]
