from django.conf import settings


class ContentSecurityPolicyMiddleware:
    """Enforced CSP without 'unsafe-inline' or 'unsafe-eval' (DESIGN.md §7): scripts live in
    static files and data reaches them through `json_script`."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        response.setdefault("Content-Security-Policy", settings.CONTENT_SECURITY_POLICY)
        return response


class AccessErrorPageMiddleware:
    """The access layer's refusals on HTML pages, in one place: "not found or not yours"
    becomes the 404 page and "your role does not allow this" the refusal page (403). The
    API answers the same errors through api.exception_handlers instead."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        from django.http import Http404
        from django.shortcuts import render
        from django.views.defaults import page_not_found

        from annotation.errors import NotFound, PermissionDenied

        if isinstance(exception, NotFound):
            return page_not_found(request, Http404())
        if isinstance(exception, PermissionDenied):
            return render(request, "annotation/refused.html", {"message": exception.message}, status=403)
        return None
