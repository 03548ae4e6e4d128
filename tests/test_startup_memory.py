"""What a web or beat process loads at start (bench/footprint.py measures the memory): the
app, its URLs and its task modules, but not scipy's statistics and sparse matrices, which
cost every process that imports them about 75 MiB and are used only where intervals,
correlations and agreement are computed (imported there, on first use)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBE = """
import sys
import django
django.setup()
import config.wsgi
from django.urls import resolve
resolve("/")
import annotation.tasks
import api.urls
print(sorted(name for name in ("scipy.stats", "scipy.sparse", "sklearn") if name in sys.modules))
"""


def test_a_web_process_does_not_load_scipy_stats_or_sparse():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test"}
    result = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "[]"
