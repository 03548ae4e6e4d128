"""Production: refuses to start without a real SECRET_KEY; `manage.py check --deploy` is clean."""

import os

from django.core.exceptions import ImproperlyConfigured

from .base import *  # noqa: F403
from .base import cache_url_beside_broker, caches_for, env_bool

if not SECRET_KEY or len(SECRET_KEY) < 50 or SECRET_KEY.startswith("django-insecure"):  # noqa: F405
    raise ImproperlyConfigured("SECRET_KEY must be set to a random value of at least 50 characters in production.")

DEBUG = False
# PLAIN_HTTP=1 serves plain HTTP (a local `docker compose up` with no TLS proxy in front): no
# redirect to HTTPS and cookies not marked Secure, which `check --deploy` then reports.
PLAIN_HTTP = env_bool("PLAIN_HTTP", False)
SECURE_SSL_REDIRECT = not PLAIN_HTTP
# Health checks come from inside the container network, over plain HTTP.
SECURE_REDIRECT_EXEMPT = [r"^healthz/$"]
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_SECURE = not PLAIN_HTTP
CSRF_COOKIE_SECURE = not PLAIN_HTTP
# Webhook endpoints on this host's loopback addresses: allowed on a local plain-HTTP run (a
# receiver beside it), refused by default behind TLS, where services listening on loopback
# must not be reachable through a webhook.
MASHOV_WEBHOOK_ALLOW_LOOPBACK = env_bool("MASHOV_WEBHOOK_ALLOW_LOOPBACK", PLAIN_HTTP)
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}


# Login throttling needs one count for every web process: without CACHE_URL, the broker's
# Redis. With neither, CACHES stays per-process and `check --deploy` fails (mashov.E001).
CACHES = caches_for(os.environ.get("CACHE_URL") or cache_url_beside_broker(CELERY_BROKER_URL))  # noqa: F405
