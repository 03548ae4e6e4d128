"""annotation/metrics type-checks cleanly under mypy with the project's configuration
(pyproject.toml's [tool.mypy]), so that a change to the metrics cannot bring a type error
back unnoticed. `make types` runs the same check."""

from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api", reason="mypy is not installed (requirements-dev.txt)")

ROOT = Path(__file__).resolve().parent.parent


def test_metrics_type_check_cleanly(monkeypatch):
    # The configuration's `files` are relative to the project root.
    monkeypatch.chdir(ROOT)
    stdout, stderr, status = mypy_api.run(["--config-file", str(ROOT / "pyproject.toml")])
    assert status == 0, f"mypy found errors:\n{stdout}{stderr}"
    assert "no issues found" in stdout
