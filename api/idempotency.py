"""`Idempotency-Key` for writes a client may retry: the same key returns the first result
and changes nothing."""

import functools
from collections.abc import Callable

from django.db import IntegrityError, transaction
from rest_framework.response import Response

from annotation.errors import ApplicationError, InvalidInput
from annotation.models import IdempotencyRecord


def idempotent(request, produce: Callable[[], Response]) -> Response:
    key = request.headers.get("Idempotency-Key")
    if key is None:
        return produce()
    if not key or len(key) > 200 or not key.isprintable():
        raise InvalidInput("must be 1-200 printable characters", field="Idempotency-Key")
    scope = f"{request.method} {request.path}"
    previous = IdempotencyRecord.objects.filter(user=request.user, key=key, scope=scope).first()
    if previous is not None:
        return Response(previous.body, status=previous.status_code)
    try:
        response = produce()
    except ApplicationError:
        # A concurrent request with the same key may have won; replay its result.
        previous = IdempotencyRecord.objects.filter(user=request.user, key=key, scope=scope).first()
        if previous is not None:
            return Response(previous.body, status=previous.status_code)
        raise
    if 200 <= response.status_code < 300:
        try:
            with transaction.atomic():
                IdempotencyRecord.objects.create(
                    user=request.user, key=key, scope=scope, status_code=response.status_code, body=response.data
                )
        except IntegrityError:
            pass
    return response


def idempotent_write(method):
    """Decorator for a view's write method: `Idempotency-Key` replays its first result."""

    @functools.wraps(method)
    def wrapper(self, request, *args, **kwargs):
        return idempotent(request, lambda: method(self, request, *args, **kwargs))

    return wrapper
