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
