"""OpenAPI pieces that many endpoints declare alike."""

from drf_spectacular.utils import OpenApiParameter

from annotation.rest.serializers import ErrorsSerializer

IDEMPOTENCY_KEY = [
    OpenApiParameter(
        "Idempotency-Key",
        str,
        OpenApiParameter.HEADER,
        description="a retry with the same key returns the first result",
    )
]
ERRORS = {400: ErrorsSerializer, 401: ErrorsSerializer, 403: ErrorsSerializer, 404: ErrorsSerializer}
