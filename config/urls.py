from django.contrib import admin
from django.urls import include, path

from annotation import throttle

# The admin's login page under the same login throttle as the others.
admin.site.login_form = throttle.AdminLoginForm

handler404 = "annotation.views.errors.page_not_found"
handler500 = "annotation.views.errors.server_error"

urlpatterns = [
    path("api/", include("api.urls")),
    path("admin/login/", throttle.answer_429_when_refused(admin.site.login)),
    path("admin/", admin.site.urls),
    path("i18n/", include("django.conf.urls.i18n")),
    path("", include("annotation.urls")),
]
