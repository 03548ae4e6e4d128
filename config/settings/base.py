"""Settings shared by every environment. Everything that differs between machines comes
from the environment: DATABASE_URL, CELERY_BROKER_URL, SECRET_KEY, DEBUG, ALLOWED_HOSTS."""

import ipaddress
import os
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext_lazy as _

BASE_DIR = Path(__file__).resolve().parent.parent.parent


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str) -> list[str]:
    return [part.strip() for part in os.environ.get(name, default).split(",") if part.strip()]


SECRET_KEY = os.environ.get("SECRET_KEY", "")
DEBUG = env_bool("DEBUG", False)
# With DEBUG, Django's debug 404 and 500 pages instead of the product's own (only when asked for).
MASHOV_DEBUG_PAGES = env_bool("MASHOV_DEBUG_PAGES", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "annotation",
    "api",
]

# The workflow kinds this site offers, each the dotted path of its Kind class (the kind's
# stored name is the class's `name`). The registry, the URL modules and the API's kind
# choices read this list; a kind left out is not offered, mounted or linked anywhere.
MASHOV_KINDS = [
    "annotation.kinds.qa.kind.QaAuthoringKind",
    "annotation.kinds.nli_authoring.kind.NliAuthoringKind",
    "annotation.kinds.nli.kind.NliRelabelKind",
    "annotation.kinds.translation.kind.TranslationRatingKind",
    "annotation.kinds.phrase.kind.PhrasePairKind",
    "annotation.kinds.summary.kind.SummaryRatingKind",
    "annotation.kinds.label_test.kind.LabelTestKind",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "annotation.middleware.ContentSecurityPolicyMiddleware",
    "annotation.middleware.RequestLimitsMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "annotation.middleware.AccessErrorPageMiddleware",
    "annotation.middleware.EmbeddedSweepMiddleware",
]

ROOT_URLCONF = "config.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.i18n",
                "annotation.context_processors.inbox",
            ],
        },
    },
]

WSGI_APPLICATION = "config.wsgi.application"

# No DATABASE_URL → the embedded default, a SQLite file in the project folder.
DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        conn_max_age=int(os.environ.get("DB_CONN_MAX_AGE", "60")),
    )
}


# A read replica of the primary (PostgreSQL streaming replication): the exports' and the
# reports' reads go to it (annotation/replica.py); writes and the annotate path never do.
def replica_database(url: str) -> dict:
    """The `replica` alias's settings for DATABASE_REPLICA_URL. In the test suite it mirrors
    the test database, unless a test points it at a real replica of its own."""
    database = dj_database_url.parse(url, conn_max_age=int(os.environ.get("DB_CONN_MAX_AGE", "60")))
    database["TEST"] = {"MIRROR": "default"}
    return database


if os.environ.get("DATABASE_REPLICA_URL"):
    DATABASES["replica"] = replica_database(os.environ["DATABASE_REPLICA_URL"])
DATABASE_ROUTERS = ["annotation.replica.ReplicaRouter"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# The annotate path runs its statements as server-side prepared statements on PostgreSQL
# (annotation/sql.py); off for a pooler that hands one session's statements to another
# server connection (PgBouncer in transaction mode).
MASHOV_PREPARED_STATEMENTS = env_bool("DB_PREPARED_STATEMENTS", True)

# Sessions in PostgreSQL, which every web process and every web replica reads: a session
# opened through one is valid through all of them, so the proxy in front needs no sticky
# sessions (docker-compose.yml's replicas; tests/test_web_replicas.py).
SESSION_ENGINE = "django.contrib.sessions.backends.db"

# Django's password check, behind the login throttle (annotation/throttle.py states the rule).
AUTHENTICATION_BACKENDS = ["annotation.throttle.ThrottledModelBackend"]
# Addresses or networks of the reverse proxies whose X-Forwarded-For names the client for the
# login throttle; from any other address the header is ignored. Checked here, at start.
MASHOV_TRUSTED_PROXIES = [str(ipaddress.ip_network(net, strict=False)) for net in env_list("TRUSTED_PROXIES", "")]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
    {"NAME": "annotation.passwords.VisibleCharactersValidator"},
    # Not a check: the hook that ends a user's API token when their password changes.
    {"NAME": "annotation.passwords.RevokeTokensOnPasswordChange"},
]

LANGUAGE_CODE = "en"
LANGUAGES = [("en", _("English")), ("he", _("Hebrew")), ("fa", _("Persian"))]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# Security headers (docs/security.md "Pages").
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)

# Uploads: imports are parsed, never served back. Larger than this → 413.
MASHOV_MAX_IMPORT_BYTES = int(os.environ.get("MASHOV_MAX_IMPORT_BYTES", str(64 * 1024 * 1024)))
# Files with more rows than this are validated and stored by a Job on the worker.
MASHOV_IMPORT_JOB_ROWS = int(os.environ.get("MASHOV_IMPORT_JOB_ROWS", "5000"))
# Any other request body (JSON, forms) larger than this → 413, before it is read.
MASHOV_MAX_BODY_BYTES = int(os.environ.get("MASHOV_MAX_BODY_BYTES", str(2 * 1024 * 1024)))
# The fields of a multipart form beside its files: no larger than any other body.
DATA_UPLOAD_MAX_MEMORY_SIZE = MASHOV_MAX_BODY_BYTES
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.authentication.FastTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": [
        "annotation.rest.parsers.StrictJSONParser",
        "annotation.rest.parsers.StrictMultiPartParser",
        "annotation.rest.parsers.StrictFormParser",
    ],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PAGINATION_CLASS": "annotation.rest.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "api.exception_handlers.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Mashov API",
    "DESCRIPTION": "Annotation and validation of NLP datasets in right-to-left languages.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI from the installed sidecar package, not a CDN; its init script is a separate
    # file (the split view), so the enforced CSP holds on the docs page too.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # annotation.converters.IdConverter: ids fit PostgreSQL's bigint.
    "PATH_CONVERTER_OVERRIDES": {"id": {"type": "integer", "minimum": 0, "maximum": 2**63 - 1}},
    "ENUM_NAME_OVERRIDES": {
        "ItemStatusEnum": "annotation.models.items.Item.Status",
        "MembershipStatusEnum": "annotation.models.projects.Membership.Status",
        "JobStatusEnum": "annotation.models.jobs.Job.Status",
        # An evaluation's status is its scoring job's (api/views/evaluation.py).
        "EvaluationStatusEnum": ["queued", "running", "done", "failed"],
    },
}

# Cache: Redis when configured (shared by every web process, so login throttling holds
# across them); otherwise process-local memory, which production replaces with the broker's
# Redis (config/settings/production.py) and `check --deploy` refuses (annotation/checks.py).
# A Redis that is down or unreachable must fail a login's throttle check within a second,
# not hang it (the login then goes on unthrottled).


def caches_for(cache_url: str) -> dict:
    """CACHES for a Redis URL, or process-local memory when it is empty."""
    if not cache_url:
        return {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    return {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": cache_url,
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }


def cache_url_beside_broker(broker_url: str) -> str:
    """The broker's Redis on another database number (the next one; 14 for 15, the last of
    Redis's 16), so that cache keys never mix with Celery's queues; "" when the broker is
    not Redis.

    >>> cache_url_beside_broker("redis://redis:6379/0"), cache_url_beside_broker("rediss://:pw@r:6380/15?ssl_cert_reqs=none")
    ('redis://redis:6379/1', 'rediss://:pw@r:6380/14?ssl_cert_reqs=none')
    >>> cache_url_beside_broker("redis://redis:6379"), cache_url_beside_broker("amqp://guest@rabbit//")
    ('redis://redis:6379/1', '')
    """
    parts = urlsplit(broker_url)
    if parts.scheme not in ("redis", "rediss"):
        return ""
    path = parts.path.strip("/")
    database = int(path) if path.isdigit() else 0
    return urlunsplit(parts._replace(path=f"/{database + 1 if database < 15 else database - 1}"))


CACHES = caches_for(os.environ.get("CACHE_URL", ""))

# Celery (docs/jobs.md "Tasks"). No CELERY_BROKER_URL → tasks run in-process.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("CELERY_QUEUE", "mashov")
# Past one machine: the jobs (imports, aggregation, curation, evaluation, the kinds' own —
# everything `run_job` runs) on a queue of their own, read by their own workers, so that a
# long job never delays a round's consensus step or an aggregation request. Unset: one queue.
CELERY_JOBS_QUEUE = os.environ.get("CELERY_JOBS_QUEUE", "")
CELERY_TASK_ROUTES = {"annotation.tasks.run_job": {"queue": CELERY_JOBS_QUEUE}} if CELERY_JOBS_QUEUE else {}
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = 30 * 60
CELERY_TASK_SOFT_TIME_LIMIT = 25 * 60
# A publish to a broker that is down must fail fast: the write is already stored and the
# periodic sweep enqueues it later, so a request never waits on (or does) the heavy work.
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_BROKER_TRANSPORT_OPTIONS = {"max_retries": 0, "socket_connect_timeout": 2, "socket_timeout": 5}
CELERY_TASK_PUBLISH_RETRY = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Recovering jobs whose worker died (kill -9, out of memory, a lost host): a running job's
# worker writes a heartbeat every MASHOV_JOB_HEARTBEAT_SECONDS; the sweep (every 60 s on
# beat) queues a running job again once its heartbeat is MASHOV_JOB_STALE_SECONDS old, up to
# MASHOV_JOB_MAX_ATTEMPTS runs in all, then marks it failed with the reason. Recovery does not
# rely on the broker redelivering the message (Redis restores an unacknowledged one only
# after its one-hour visibility timeout, and loses it when restarted without persistence).
MASHOV_JOB_HEARTBEAT_SECONDS = float(os.environ.get("MASHOV_JOB_HEARTBEAT_SECONDS", "20"))
MASHOV_JOB_STALE_SECONDS = float(os.environ.get("MASHOV_JOB_STALE_SECONDS", "120"))
MASHOV_JOB_MAX_ATTEMPTS = int(os.environ.get("MASHOV_JOB_MAX_ATTEMPTS", "3"))
# Aggregation requests for one project closer together than this are folded into one job;
# the periodic sweep picks up what a skipped request would have covered.
MASHOV_AGGREGATION_DEBOUNCE_SECONDS = int(os.environ.get("MASHOV_AGGREGATION_DEBOUNCE_SECONDS", "30"))
MASHOV_FIGURES_LIVE_ITEMS = int(os.environ.get("MASHOV_FIGURES_LIVE_ITEMS", "5000"))
# Incremental aggregation: a project of at least MASHOV_AGGREGATION_INCREMENTAL_ITEMS items
# recomputes only the changed items after a round closes; the whole project (Dawid-Skene
# and MACE re-estimated) once MASHOV_AGGREGATION_FULL_SHARE of its items changed or its last
# full run is MASHOV_AGGREGATION_FULL_SECONDS old, at the next run.
MASHOV_AGGREGATION_INCREMENTAL_ITEMS = int(os.environ.get("MASHOV_AGGREGATION_INCREMENTAL_ITEMS", "5000"))
MASHOV_AGGREGATION_FULL_SHARE = float(os.environ.get("MASHOV_AGGREGATION_FULL_SHARE", "0.1"))
MASHOV_AGGREGATION_FULL_SECONDS = int(os.environ.get("MASHOV_AGGREGATION_FULL_SECONDS", "3600"))
# BERTScore of summaries (HeSum Table 3): a local model directory in the Hugging Face layout
# (the paper used AlephBERT) and the layer to match, or the model's last when unset. Empty:
# no BERTScore. Needs requirements-embeddings.txt on the worker.
MASHOV_BERTSCORE_MODEL = os.environ.get("MASHOV_BERTSCORE_MODEL", "")
MASHOV_BERTSCORE_LAYERS = int(os.environ.get("MASHOV_BERTSCORE_LAYERS", "0")) or None
if MASHOV_JOB_STALE_SECONDS < 3 * MASHOV_JOB_HEARTBEAT_SECONDS:
    # A live job would look dead between two heartbeats and be run a second time.
    raise ImproperlyConfigured("MASHOV_JOB_STALE_SECONDS must be at least 3 × MASHOV_JOB_HEARTBEAT_SECONDS")
# Dataset releases (docs/operations.md "Releases"): written once through Django's storage API,
# to STORAGES["releases"] when configured (any backend), else to files under this folder.
MASHOV_RELEASE_ROOT = os.environ.get("MASHOV_RELEASE_ROOT", str(BASE_DIR / "media" / "releases"))
# Webhooks (docs/operations.md "Webhooks"): networks beside the public internet that endpoints
# may resolve to (CIDRs; private and link-local ranges are refused otherwise), whether plain
# HTTP to loopback is allowed (local use and tests), the first retry's delay (doubling up to
# an hour), and how long an endpoint may fail before it is disabled.
MASHOV_WEBHOOK_ALLOWED_NETWORKS = env_list("MASHOV_WEBHOOK_ALLOWED_NETWORKS", "")
MASHOV_WEBHOOK_ALLOW_LOOPBACK = env_bool("MASHOV_WEBHOOK_ALLOW_LOOPBACK", True)
MASHOV_WEBHOOK_BACKOFF_SECONDS = float(os.environ.get("MASHOV_WEBHOOK_BACKOFF_SECONDS", "30"))
MASHOV_WEBHOOK_DISABLE_AFTER_SECONDS = float(os.environ.get("MASHOV_WEBHOOK_DISABLE_AFTER_SECONDS", str(24 * 3600)))
MASHOV_WEBHOOK_TIMEOUT_SECONDS = float(os.environ.get("MASHOV_WEBHOOK_TIMEOUT_SECONDS", "10"))
CELERY_BEAT_SCHEDULE = {
    "sweep-stalled-jobs": {"task": "annotation.tasks.sweep_jobs", "schedule": timedelta(seconds=60)},
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}
