"""Deployment checks of Mashov's own (`manage.py check --deploy`)."""

from django.conf import settings
from django.core import checks

# Cache backends whose entries live in one process's memory (or nowhere).
PER_PROCESS_CACHES = (
    "django.core.cache.backends.locmem.LocMemCache",
    "django.core.cache.backends.dummy.DummyCache",
)


@checks.register(checks.Tags.security, deploy=True)
def check_shared_cache(app_configs, **kwargs) -> list[checks.CheckMessage]:
    """Login throttling (annotation/throttle.py) counts failures in the default cache: a
    per-process cache gives every web worker its own count, so N workers let N times the
    limit of wrong passwords through."""
    backend = settings.CACHES.get("default", {}).get("BACKEND", "")
    if backend not in PER_PROCESS_CACHES:
        return []
    return [
        checks.Error(
            "The default cache lives in each process's memory, so every web worker counts login failures "
            "on its own and the throttle's limit multiplies by the number of workers.",
            hint="Set CACHE_URL to a Redis database (redis://host:6379/1), or CELERY_BROKER_URL to a Redis "
            "broker, whose server production then uses on the next database number.",
            id="mashov.E001",
        )
    ]
