"""Login throttling shared by the login page (the API token view uses DRF's throttle)."""

from django.core.cache import cache

WINDOW_SECONDS = 300
MAX_FAILURES = 10


def _key(request, username: str) -> str:
    return f"login-failures:{request.META.get('REMOTE_ADDR', '')}:{username.lower()[:150]}"


def login_blocked(request, username: str) -> bool:
    return cache.get(_key(request, username), 0) >= MAX_FAILURES


def login_failed(request, username: str) -> None:
    key = _key(request, username)
    cache.add(key, 0, WINDOW_SECONDS)
    try:
        cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, WINDOW_SECONDS)


def login_succeeded(request, username: str) -> None:
    cache.delete(_key(request, username))
