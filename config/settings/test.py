"""Settings for the test suite: PostgreSQL, Redis and a real worker when the environment names them."""

from .base import *  # noqa: F403

SECRET_KEY = "mashov-test-key"  # noqa: S105
DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests

# One test database per run, so that several runs on one server (developers, CI, helpers)
# never ask to delete each other's database.
if DATABASES["default"]["ENGINE"].endswith("postgresql"):  # noqa: F405
    import os as _os

    DATABASES["default"]["TEST"] = {"NAME": f"test_mashov_{_os.getpid()}"}  # noqa: F405
