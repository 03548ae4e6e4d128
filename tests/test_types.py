"""The pure-Python metrics (annotation/metrics) and the reads and writes (annotation/selectors,
annotation/services) type-check cleanly under mypy with the project's configuration
(pyproject.toml's [tool.mypy], django-stubs' plugin typing the models and querysets), so that
a change cannot bring a type error back unnoticed. `make types` runs the same check."""

from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api", reason="mypy is not installed (requirements-dev.txt)")
pytest.importorskip("mypy_django_plugin", reason="django-stubs is not installed (requirements-dev.txt)")

ROOT = Path(__file__).resolve().parent.parent
CHECKED = ("annotation/metrics", "annotation/selectors", "annotation/services")


def test_metrics_selectors_and_services_type_check_cleanly(monkeypatch):
    # The configuration's `files` are relative to the project root.
    monkeypatch.chdir(ROOT)
    stdout, stderr, status = mypy_api.run(["--config-file", str(ROOT / "pyproject.toml")])
    assert status == 0, f"mypy found errors:\n{stdout}{stderr}"
    assert "no issues found" in stdout


def test_the_configuration_checks_the_three_packages():
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert set(CHECKED) <= set(config["files"])
    assert config["check_untyped_defs"] is True
    assert "mypy_django_plugin.main" in config["plugins"]
