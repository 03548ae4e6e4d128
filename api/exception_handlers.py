"""One mapping from errors to the error body of docs/api.md "General rules": `{"errors": [{"field", "message", "row"?}]}`."""

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response

from annotation.errors import ApplicationError


def _flatten(detail, prefix: str | None = None) -> list[dict]:
    if isinstance(detail, dict):
        errors = []
        for key, inner in detail.items():
            field = None if key == "non_field_errors" else (f"{prefix}.{key}" if prefix else str(key))
            errors.extend(_flatten(inner, field))
        return errors
    if isinstance(detail, list):
        errors = []
        for inner in detail:
            errors.extend(_flatten(inner, prefix))
        return errors
    return [{"field": prefix, "message": str(detail)}]


def exception_handler(exc, context):
    if isinstance(exc, ApplicationError):
        return Response({"errors": [error.as_dict() for error in exc.errors]}, status=exc.status_code)
    if isinstance(exc, RequestDataTooBig):
        # A multipart form's fields beside its files, over DATA_UPLOAD_MAX_MEMORY_SIZE.
        return Response(
            {"errors": [{"field": "body", "message": str(exc)}]}, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
        )
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    if isinstance(exc, exceptions.APIException):
        headers = {}
        if getattr(exc, "auth_header", None):
            headers["WWW-Authenticate"] = exc.auth_header
        if getattr(exc, "wait", None):
            headers["Retry-After"] = str(int(exc.wait))
        if isinstance(exc, exceptions.ValidationError):
            body = _flatten(exc.detail)
        else:
            body = [{"field": None, "message": str(exc.detail)}]
        return Response({"errors": body}, status=exc.status_code, headers=headers)
    return None


__all__ = ["exception_handler", "status"]
