"""The embedded default for a laptop: SQLite and in-process tasks unless the environment says otherwise."""

from .base import *  # noqa: F403
from .base import env_bool

DEBUG = env_bool("DEBUG", True)
# A fixed development key is acceptable only here; production refuses to start without one.
SECRET_KEY = SECRET_KEY or "mashov-local-development-key-not-for-production"  # noqa: F405
