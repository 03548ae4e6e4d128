"""`Idempotency-Key` for writes a client may retry: the same key with the same request returns
the first result and changes nothing; the same key with another request is refused with a 409
naming the header. (The IETF draft "The Idempotency-Key HTTP Header Field", "Error Scenarios",
suggests 422 for a reused key and keeps 409 for a retry while the first request runs.)

The key is stored in the write's own transaction, so that there is never a write without its
key (a crash after the write would turn the retry into a second write) nor a key without its
write. Concurrent requests with one key are settled by the key's unique constraint: the second
one's insert waits until the first commits, then replays its answer (or is refused)."""

import functools
import hashlib
import json
from collections.abc import Callable

from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, transaction
from django.http import QueryDict
from django.utils.translation import gettext
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from annotation.errors import Conflict, InvalidInput
from annotation.models import IdempotencyRecord


def request_fingerprint(request) -> str:
    """SHA-256 of method, path and the parsed body: form fields and uploaded files' names and
    contents for multipart (its random boundary is not part of the request's meaning), the
    canonical JSON otherwise."""
    digest = hashlib.sha256(f"{request.method} {request.path}\n".encode())
    data = request.data
    if isinstance(data, QueryDict):
        for name, values in sorted(data.lists()):
            for value in values:
                digest.update(json.dumps(name).encode() + b"=")
                if isinstance(value, UploadedFile):
                    digest.update(b"file:" + json.dumps(value.name or "").encode() + b":")
                    for chunk in value.chunks():
                        digest.update(chunk)
                    value.seek(0)
                else:
                    digest.update(json.dumps(value, ensure_ascii=False).encode())
                digest.update(b"\n")
    else:
        digest.update(json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode())
    return digest.hexdigest()


def _replay(previous: IdempotencyRecord, fingerprint: str) -> Response:
    if previous.fingerprint and previous.fingerprint != fingerprint:
        raise Conflict(
            gettext("this key was used for another request; use a new key for a new request"), field="Idempotency-Key"
        )
    return Response(previous.body, status=previous.status_code)


def idempotent(request, produce: Callable[[], Response]) -> Response:
    """Answer with `produce()`, once per `Idempotency-Key`: the engine of `idempotent_write`,
    which is how views use it (the whole write method runs inside, so a replay and the first
    answer went through the same checks)."""
    key = request.headers.get("Idempotency-Key")
    if key is None:
        return produce()  # the common case: no query, no transaction added
    if not key or len(key) > 200 or not key.isprintable():
        raise InvalidInput(gettext("must be 1-200 printable characters"), field="Idempotency-Key")
    scope = f"{request.method} {request.path}"
    fingerprint = request_fingerprint(request)
    with transaction.atomic():
        try:
            with transaction.atomic():
                record = IdempotencyRecord.objects.create(
                    user=request.user, key=key, scope=scope, fingerprint=fingerprint, status_code=0, body={}
                )
        except IntegrityError:
            # The key exists: committed before, or by a concurrent request we waited for.
            return _replay(IdempotencyRecord.objects.get(user=request.user, key=key, scope=scope), fingerprint)
        response = produce()
        if 200 <= response.status_code < 300:
            # What the client receives, as JSON: the replay is the same answer.
            record.status_code, record.body = (
                response.status_code,
                json.loads(JSONRenderer().render(response.data) or b"null"),
            )
            record.save(update_fields=["status_code", "body"])
        else:
            record.delete()  # an answer that did not write is not kept: the retry runs again
    return response


def idempotent_write(method):
    """Decorator for a view's write method: `Idempotency-Key` replays its first result. The
    one way a view becomes idempotent (docs/conventions.md "Idempotent writes")."""

    @functools.wraps(method)
    def wrapper(self, request, *args, **kwargs):
        return idempotent(request, lambda: method(self, request, *args, **kwargs))

    return wrapper
