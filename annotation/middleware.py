import logging

from django.conf import settings


class ContentSecurityPolicyMiddleware:
    """Enforced CSP without 'unsafe-inline' or 'unsafe-eval' (docs/security.md "Pages"): scripts live in
    static files and data reaches them through `json_script`."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        response.setdefault("Content-Security-Policy", settings.CONTENT_SECURITY_POLICY)
        return response


class AccessErrorPageMiddleware:
    """The access layer's refusals on HTML pages, in one place: "not found or not yours"
    becomes the 404 page, "your role does not allow this" the refusal page (403) and "this
    project's kind is not installed" its own page (409; the JSON error body under /api/ for
    the few API views DRF does not wrap). The API answers the same errors through
    api.exception_handlers instead."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        unknown = self.unknown_address(request)
        return unknown if unknown is not None else self.get_response(request)

    @staticmethod
    def product_pages() -> bool:
        """The product's own error pages, also under DEBUG (`make run`); Django's debug pages
        only when asked for (MASHOV_DEBUG_PAGES=1 with DEBUG)."""
        from django.conf import settings

        return not (settings.DEBUG and settings.MASHOV_DEBUG_PAGES)

    def unknown_address(self, request):
        """An address no route matches: the API's JSON error body under /api/, the product's
        404 page elsewhere. CommonMiddleware, earlier, has already redirected an address
        that only lacks its final slash."""
        from django.urls import Resolver404, resolve

        from annotation.views.errors import page_not_found

        try:
            resolve(request.path_info)
        except Resolver404:
            if request.path_info.startswith("/api/"):
                from django.utils.translation import gettext

                return _refusal(404, None, gettext("Not found."))
            return page_not_found(request) if self.product_pages() else None
        return None

    def process_exception(self, request, exception):
        from django.http import Http404
        from django.shortcuts import render

        from annotation.errors import KindNotInstalled, NotFound, PermissionDenied
        from annotation.views.errors import kind_not_installed, page_not_found

        if isinstance(exception, KindNotInstalled):
            if request.path_info.startswith("/api/"):
                return _refusal(exception.status_code, "kind", exception.message)
            return kind_not_installed(request, exception)
        if isinstance(exception, NotFound) or (isinstance(exception, Http404) and self.product_pages()):
            return page_not_found(request)
        if isinstance(exception, PermissionDenied):
            return render(request, "annotation/refused.html", {"message": exception.message}, status=403)
        return self.server_error_under_debug(request, exception)

    def server_error_under_debug(self, request, exception):
        """Under DEBUG Django would show its debug 500 page: the product's own instead (logged
        as Django logs it), unless debug pages were asked for. Without DEBUG handler500 does it."""
        from django.conf import settings
        from django.core import exceptions
        from django.http import Http404
        from django.utils.log import log_response

        from annotation.views.errors import server_error

        handled_by_django = (
            Http404,
            exceptions.PermissionDenied,
            exceptions.BadRequest,
            exceptions.SuspiciousOperation,
        )
        if not settings.DEBUG or not self.product_pages() or isinstance(exception, handled_by_django):
            return None
        response = server_error(request)
        log_response(
            "%s: %s", response.reason_phrase, request.path, response=response, request=request, exception=exception
        )
        return response


def _refusal(status: int, field: str | None, message: str):
    from django.http import JsonResponse

    return JsonResponse({"errors": [{"field": field, "message": message}]}, status=status)


class RequestLimitsMiddleware:
    """What every request must satisfy before a view, a parser or the session reads it:

    - a body no larger than the settings allow, judged by its Content-Length (413): a
      multipart upload may carry an import file of MASHOV_MAX_IMPORT_BYTES, any other body
      MASHOV_MAX_BODY_BYTES. A body without Content-Length is never read under WSGI;
    - query parameters (names and values) free of characters PostgreSQL cannot take (400
      naming the parameter), checked here because a streamed export has already answered
      200 by the time it would query with them;
    - a path free of them too (404: no resource is named so)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        refused = self.refusal(request)
        return refused if refused is not None else self.get_response(request)

    @staticmethod
    def refusal(request):
        from django.utils import translation

        # Before LocaleMiddleware: the refusal is said in the language the request asks for.
        with translation.override(translation.get_language_from_request(request)):
            return RequestLimitsMiddleware._refusal_in_language(request)

    @staticmethod
    def _refusal_in_language(request):
        from dataclasses import replace

        from django.conf import settings
        from django.utils.translation import gettext

        from annotation.metrics.text import forbidden_character
        from annotation.wording import fault_text

        limit = settings.MASHOV_MAX_BODY_BYTES
        if request.content_type == "multipart/form-data":
            limit += settings.MASHOV_MAX_IMPORT_BYTES
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return _refusal(400, "Content-Length", gettext("must be a whole number of bytes"))
        if length > limit:
            return _refusal(413, "body", gettext("the body is larger than %(n)s bytes") % {"n": limit})
        if forbidden_character(request.path_info):
            return _refusal(404, None, gettext("Not found."))
        for name, values in request.GET.lists():
            reason = forbidden_character(name)
            if reason:
                return _refusal(400, "<parameter name>", fault_text(replace(reason, in_key=True)))
            for value in values:
                reason = forbidden_character(value)
                if reason:
                    return _refusal(400, name, fault_text(reason))
        return None


class EmbeddedSweepMiddleware:
    """The embedded default has no beat: after each request, run the aggregations the
    debounce skipped whose delay has passed (services.aggregation.aggregation_run_due; no
    query when none is due), so that no aggregate stays stale. Inactive with a broker: beat
    sweeps there."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if settings.CELERY_TASK_ALWAYS_EAGER:
            from annotation.services.aggregation import aggregation_run_due

            try:
                aggregation_run_due()
            except Exception:  # the page was served; what failed stays due for the next request
                logging.getLogger(__name__).exception("embedded aggregation run failed")
        return response
