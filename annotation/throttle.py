"""Login throttling: one rule for every way in — the login page, the admin's login page and
POST /api/auth/token/ — applied where the password is checked, in the authentication backend.

Only failed attempts count; a successful login never does, so a lab of annotators behind one
address all log in. Failures are counted for WINDOW_SECONDS from the first one, three ways:
per username (from any address), per username and address, and per address (any username).
An attempt is refused, its password not even checked, when

- its address has ADDRESS_LIMIT failures (one place trying many usernames), or
- its username has USERNAME_LIMIT failures from this address, or
- its username has USERNAME_LIMIT failures in all, and this address is not one from which the
  user logged in successfully within KNOWN_ADDRESS_SECONDS.

Usernames are counted case-folded, so that "Dana" and "DANA" share dana's count. A successful
login clears its username-and-address count (her own typos no longer weigh on that address)
but not the username's count (a guesser elsewhere gets no fresh guesses from it).

Why this rule: a lock per username is the standard defence against guessing a password, and
spreading the guesses over many addresses (or forged X-Forwarded-For headers) must not buy
more of them. But such a lock lets anyone who knows a username lock its owner out. So failures
made elsewhere never lock a user out at an address she has logged in from before: there the
right password is accepted. From a new address it waits for the window to end, like any other
attempt. The right password is NOT accepted during a lock that applies to its address:
answering it would let the guessing go on at full speed, each guess told "refused" or "welcome".

The address is the socket's (REMOTE_ADDR), or — only when the socket's address is in
settings.MASHOV_TRUSTED_PROXIES — the nearest address in X-Forwarded-For that is not a trusted
proxy (each proxy appends the address it received from; what is left of it the client wrote).
IPv6 addresses count by their /64, which one host usually holds whole.

The counts live in the default cache (Redis when CACHE_URL is set, in production else the
broker's Redis: shared by every web process; `check --deploy` refuses a per-process cache,
annotation/checks.py). When the cache fails, logins go on unthrottled and each one logs a warning: a broken
cache must not lock everyone out. authenticate() without a request (createsuperuser, shell,
the test client's login()) is not throttled.
"""

import functools
import hashlib
import ipaddress
import logging

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import cache
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils.translation import gettext_lazy as _

logger = logging.getLogger(__name__)

WINDOW_SECONDS = 15 * 60
USERNAME_LIMIT = 10
ADDRESS_LIMIT = 50
KNOWN_ADDRESS_SECONDS = 90 * 24 * 3600

# Set on the request when an attempt is refused: the seconds to wait.
_REFUSED_FOR = "login_refused_for"


def client_address(request) -> str:
    remote = request.META.get("REMOTE_ADDR", "")
    proxies = [ipaddress.ip_network(net) for net in settings.MASHOV_TRUSTED_PROXIES]

    def is_proxy(address) -> bool:
        return any(address in net for net in proxies)

    try:
        address = ipaddress.ip_address(remote)
    except ValueError:
        return remote
    if is_proxy(address):
        hops = [hop.strip() for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
        for hop in reversed(hops):
            try:
                forwarded = ipaddress.ip_address(hop)
            except ValueError:
                break  # a proxy appends addresses only; this and what is left of it the client wrote
            if not is_proxy(forwarded):
                address = forwarded
                break
    if address.version == 6:
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


class _Attempt:
    def __init__(self, request, username: str):
        address = client_address(request)
        user = hashlib.sha256(username.casefold().encode("utf-8", "surrogatepass")).hexdigest()[:32]
        self.by_address = f"login-failures:address:{address}"
        self.by_user = f"login-failures:user:{user}"
        self.by_pair = f"login-failures:pair:{user}:{address}"
        self.known = f"login-known:{user}:{address}"

    def refused(self) -> bool:
        counts = _cache_or_none(cache.get_many, [self.by_address, self.by_user, self.by_pair, self.known]) or {}
        return (
            counts.get(self.by_address, 0) >= ADDRESS_LIMIT
            or counts.get(self.by_pair, 0) >= USERNAME_LIMIT
            or (counts.get(self.by_user, 0) >= USERNAME_LIMIT and not counts.get(self.known))
        )

    def failed(self) -> None:
        for key in (self.by_address, self.by_user, self.by_pair):
            if _cache_or_none(_count, key) is None:
                return

    def succeeded(self) -> None:
        if _cache_or_none(cache.delete, self.by_pair) is not None:
            _cache_or_none(cache.set, self.known, True, KNOWN_ADDRESS_SECONDS)


def _count(key: str) -> bool:
    try:
        cache.incr(key)
    except ValueError:  # no count yet, or it expired just now
        if not cache.add(key, 1, WINDOW_SECONDS):
            cache.incr(key)
    return True


def _cache_or_none(operation, *args):
    try:
        return operation(*args)
    except Exception as exc:  # noqa: BLE001 — whatever the cache backend raises when it is down
        logger.warning("Login throttling is off: the cache failed (%s: %s)", type(exc).__name__, exc)
        return None


class ThrottledModelBackend(ModelBackend):
    """Django's username-and-password backend behind the rule above."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if username is None:
            username = kwargs.get(get_user_model().USERNAME_FIELD)
        if request is None or not isinstance(username, str) or password is None:
            return super().authenticate(request, username, password, **kwargs)
        attempt = _Attempt(request, username)
        if attempt.refused():
            setattr(request, _REFUSED_FOR, WINDOW_SECONDS)
            raise PermissionDenied  # authenticate() then stops, trying no other backend
        user = super().authenticate(request, username, password, **kwargs)
        if user is None:
            attempt.failed()
        else:
            attempt.succeeded()
        return user


def refused_for(request) -> int | None:
    """Seconds to wait, when this request's login attempt was refused by the throttle."""
    return getattr(request, _REFUSED_FOR, None)


TOO_MANY = _("Too many failed attempts. Wait a few minutes and try again.")


class _RefusalMessage:
    def get_invalid_login_error(self):
        if refused_for(self.request) is not None:
            return ValidationError(TOO_MANY, code="throttled")
        return super().get_invalid_login_error()


class LoginForm(_RefusalMessage, AuthenticationForm):
    pass


class AdminLoginForm(_RefusalMessage, AdminAuthenticationForm):
    pass


def answer_429_when_refused(view):
    """A login page's view, answering 429 with Retry-After when the throttle refused the attempt."""

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        wait = refused_for(request)
        if wait is not None:
            response.status_code = 429
            response["Retry-After"] = str(wait)
        return response

    return wrapped
