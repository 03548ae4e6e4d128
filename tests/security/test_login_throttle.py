"""One rule for failed logins on all three ways in: the login page, the admin's login page and
POST /api/auth/token/ (annotation/throttle.py states the rule). Each attempt is a fresh client
from the given socket address, as separate browsers and scripts would be."""

import logging
import socket

import pytest

from annotation import throttle

PASSWORD = "pass-word-123"
PATHS = ["/api/auth/token/", "/login/", "/admin/login/"]
ATTACKER = "203.0.113.9"
LAB = "198.51.100.7"


@pytest.fixture(autouse=True)
def clean_cache():
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


def attempt(path: str, username: str, password: str, address: str = LAB, **headers) -> str:
    """'ok', 'wrong' or 'refused', checked against what each path answers."""
    from django.test import Client
    from rest_framework.test import APIClient

    meta = {"REMOTE_ADDR": address, **headers}
    if path == "/api/auth/token/":
        response = APIClient().post(path, {"username": username, "password": password}, format="json", **meta)
        outcome = {200: "ok", 400: "wrong", 429: "refused"}[response.status_code]
        assert (outcome == "ok") == ("token" in response.json()), response.content
        if outcome == "refused":
            assert int(response["Retry-After"]) > 0
        return outcome
    client = Client()
    response = client.post(path, {"username": username, "password": password, "next": "/admin/"}, **meta)
    logged_in = "_auth_user_id" in client.session
    outcome = {302: "ok", 200: "wrong", 429: "refused"}[response.status_code]
    assert (outcome == "ok") == logged_in, (response.status_code, logged_in)
    if outcome == "refused":
        assert b"Too many failed attempts" in response.content
    return outcome


def fail(path: str, username: str, times: int, address: str = ATTACKER, **headers) -> list[str]:
    return [attempt(path, username, f"wrong-{n}", address, **headers) for n in range(times)]


@pytest.fixture
def user(make_user):
    """A staff user, so that a right password logs in on the admin's page too."""
    return make_user("dana", password=PASSWORD, staff=True)


@pytest.mark.django_db
@pytest.mark.parametrize("path", PATHS)
def test_honest_logins_from_one_address_never_count(path, make_user):
    for n in range(15):
        make_user(f"annotator{n}", password=PASSWORD, staff=True)
    assert [attempt(path, f"annotator{n}", PASSWORD) for n in range(15)] == ["ok"] * 15
    assert [attempt(path, "annotator0", PASSWORD) for _ in range(15)] == ["ok"] * 15


@pytest.mark.django_db
@pytest.mark.parametrize("path", PATHS)
def test_repeated_failures_for_a_username_are_refused_even_with_the_right_password(path, user):
    assert fail(path, "dana", throttle.USERNAME_LIMIT) == ["wrong"] * throttle.USERNAME_LIMIT
    assert attempt(path, "dana", "wrong-again", ATTACKER) == "refused"
    assert attempt(path, "dana", PASSWORD, ATTACKER) == "refused"


@pytest.mark.django_db
@pytest.mark.parametrize("path", PATHS)
def test_failures_spread_over_addresses_count_for_the_username(path, user):
    outcomes = [attempt(path, "dana", f"wrong-{n}", f"203.0.113.{n}") for n in range(throttle.USERNAME_LIMIT)]
    assert outcomes == ["wrong"] * throttle.USERNAME_LIMIT
    assert attempt(path, "dana", PASSWORD, "203.0.113.200") == "refused"


@pytest.mark.django_db
@pytest.mark.parametrize("path", PATHS)
def test_failures_for_many_usernames_from_one_address_are_refused(path, user):
    outcomes = [attempt(path, f"guess{n}", "wrong", ATTACKER) for n in range(throttle.ADDRESS_LIMIT)]
    assert outcomes == ["wrong"] * throttle.ADDRESS_LIMIT
    assert attempt(path, "dana", PASSWORD, ATTACKER) == "refused"
    assert attempt(path, "dana", PASSWORD, LAB) == "ok"


@pytest.mark.django_db
@pytest.mark.parametrize("path", PATHS)
def test_rotating_x_forwarded_for_does_not_escape_the_count(path, user):
    outcomes = [
        attempt(path, f"guess{n}", "wrong", ATTACKER, HTTP_X_FORWARDED_FOR=f"10.{n // 250}.{n % 250}.1")
        for n in range(throttle.ADDRESS_LIMIT)
    ]
    assert outcomes == ["wrong"] * throttle.ADDRESS_LIMIT
    assert attempt(path, "dana", PASSWORD, ATTACKER, HTTP_X_FORWARDED_FOR="10.99.99.99") == "refused"


@pytest.mark.django_db
@pytest.mark.parametrize("path", PATHS)
def test_a_trusted_proxy_passes_on_the_client_address(path, user, settings):
    proxy = "192.0.2.1"
    settings.MASHOV_TRUSTED_PROXIES = ["192.0.2.0/28"]
    outcomes = [
        attempt(path, f"guess{n}", "wrong", proxy, HTTP_X_FORWARDED_FOR=ATTACKER) for n in range(throttle.ADDRESS_LIMIT)
    ]
    assert outcomes == ["wrong"] * throttle.ADDRESS_LIMIT
    assert attempt(path, "dana", PASSWORD, proxy, HTTP_X_FORWARDED_FOR=ATTACKER) == "refused"
    # Another client behind the same proxy is not the attacker.
    assert attempt(path, "dana", PASSWORD, proxy, HTTP_X_FORWARDED_FOR=LAB) == "ok"
    # The attacker cannot pose as that client by writing its address first: the proxy appends.
    assert attempt(path, "dana", PASSWORD, proxy, HTTP_X_FORWARDED_FOR=f"{LAB}, {ATTACKER}") == "refused"


@pytest.mark.django_db
@pytest.mark.parametrize("path", PATHS)
def test_failures_for_another_username_from_the_same_address_do_not_lock_a_user_out(path, user, make_user):
    make_user("ghost-owner", password=PASSWORD)
    fail(path, "ghost-owner", throttle.USERNAME_LIMIT + 2, address=LAB)
    assert attempt(path, "dana", PASSWORD, LAB) == "ok"


@pytest.mark.django_db
@pytest.mark.parametrize("path", PATHS)
def test_failures_from_another_address_do_not_lock_a_user_out_where_she_logged_in_before(path, user):
    assert attempt(path, "dana", PASSWORD, LAB) == "ok"
    fail(path, "dana", throttle.USERNAME_LIMIT + 2, address=ATTACKER)
    assert attempt(path, "dana", PASSWORD, ATTACKER) == "refused"
    assert attempt(path, "dana", PASSWORD, LAB) == "ok"
    # From an address she never logged in from, the username's lock holds until the window ends.
    assert attempt(path, "dana", PASSWORD, "192.0.2.77") == "refused"


@pytest.mark.django_db
@pytest.mark.parametrize("path", PATHS)
def test_username_case_does_not_buy_more_guesses(path, user):
    fail(path, "dana", throttle.USERNAME_LIMIT // 2)
    fail(path, "DANA", throttle.USERNAME_LIMIT - throttle.USERNAME_LIMIT // 2)
    assert attempt(path, "Dana", "wrong", ATTACKER) == "refused"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.django_db
@pytest.mark.parametrize("path", PATHS)
def test_logins_work_while_the_cache_is_down_and_a_warning_is_logged(path, user, settings, caplog):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{closed_port()}/0",
        }
    }
    with caplog.at_level(logging.WARNING, logger="annotation.throttle"):
        assert attempt(path, "dana", "wrong") == "wrong"
        assert attempt(path, "dana", PASSWORD) == "ok"
    warnings = [r for r in caplog.records if r.name == "annotation.throttle" and r.levelno == logging.WARNING]
    assert warnings and all("cache" in r.getMessage() for r in warnings)


@pytest.mark.parametrize(
    ("remote", "forwarded", "expected"),
    [
        ("203.0.113.9", "", "203.0.113.9"),
        ("203.0.113.9", "10.0.0.1", "203.0.113.9"),  # not a trusted proxy: the header is the client's own
        ("192.0.2.1", "198.51.100.7", "198.51.100.7"),
        ("192.0.2.1", "10.0.0.1, 198.51.100.7", "198.51.100.7"),  # only the hop the proxy appended
        ("192.0.2.1", "198.51.100.7, 192.0.2.2", "198.51.100.7"),  # two trusted proxies in a row
        ("192.0.2.1", "not-an-address", "192.0.2.1"),
        ("192.0.2.1", "", "192.0.2.1"),
        ("2001:db8:1:2:3:4:5:6", "", "2001:db8:1:2::/64"),  # one host usually holds its whole /64
    ],
)
def test_client_address(remote, forwarded, expected, settings, rf):
    settings.MASHOV_TRUSTED_PROXIES = ["192.0.2.0/28"]
    request = rf.get("/", REMOTE_ADDR=remote, HTTP_X_FORWARDED_FOR=forwarded)
    assert throttle.client_address(request) == expected
