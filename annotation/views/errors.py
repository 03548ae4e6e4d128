"""The product's error pages: handler404 and handler500 (config/urls.py), every 404 page, and the
page of a project whose kind is not installed."""


def server_error(request):
    """handler500: Django's 500 page (no context processors: the database may be what failed),
    after making sure the CSRF cookie is set for the page's language buttons."""
    from django.middleware.csrf import get_token
    from django.views import defaults

    try:
        get_token(request)
    except Exception:  # noqa: BLE001 - the error page itself must not fail
        pass
    return defaults.server_error(request)


def page_not_found(request, exception=None):
    """handler404 and every 404 page: Django's, after making sure the CSRF cookie is set for
    the page's language buttons (the body holds nothing of the request)."""
    from django.http import Http404
    from django.middleware.csrf import get_token
    from django.views import defaults

    get_token(request)
    return defaults.page_not_found(request, exception or Http404())


def kind_not_installed(request, exception):
    """A page of a project whose kind the site does not install (annotation.errors.
    KindNotInstalled): what happened, in the interface language, and the way back to the
    project list. 409, as the API answers."""
    from django.shortcuts import render

    return render(request, "kind_not_installed.html", {"kind": exception.kind}, status=exception.status_code)
