"""Production settings plus the benchmark's reference endpoints (bench/reference_views.py)."""

from config.settings.production import *  # noqa: F403

ROOT_URLCONF = "bench.reference_views"
