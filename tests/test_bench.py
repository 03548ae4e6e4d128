"""The benchmarks' servers as production runs them (bench/scratch.py): what a figure measured
on them stands for depends on it. Not a benchmark: nothing here is timed."""

import sys
from pathlib import Path

from gunicorn.app.wsgiapp import WSGIApplication

from bench.scratch import WEB_WORKER_REPLACED, production_gunicorn_arguments

ROOT = Path(__file__).resolve().parent.parent


def gunicorn_settings(monkeypatch, arguments: list[str]):
    """gunicorn's settings for `gunicorn ARGUMENTS` run from the checkout, read by gunicorn's
    own parser (the configuration file executed, the command line over it), nothing started."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys, "argv", ["gunicorn", *arguments])
    return WSGIApplication("%(prog)s [OPTIONS] [APP_MODULE]").cfg


def test_the_loops_web_runs_the_images_gunicorn_configuration_on_the_loopback_address(monkeypatch):
    """bench/scale.py --loop: config/gunicorn.py as the image runs it — the app preloaded in
    the master, the workers that replace themselves when idle with its pages copied, the
    master's hooks — but bound to 127.0.0.1 on the bench's port with the bench's workers,
    whatever the configuration file and the environment say."""
    monkeypatch.setenv("GUNICORN_BIND", "0.0.0.0:8000")
    monkeypatch.setenv("WEB_CONCURRENCY", "2")
    settings = gunicorn_settings(monkeypatch, production_gunicorn_arguments(54321, 5))

    assert settings.worker_class_str == "config.web_worker.RecyclingWorker"
    assert settings.preload_app is True
    assert settings.wsgi_app == "config.wsgi:application"
    for hook in (settings.when_ready, settings.pre_fork):  # preloads the pages; closes the connections
        assert Path(hook.__code__.co_filename).resolve() == ROOT / "config" / "gunicorn.py"
    assert settings.bind == ["127.0.0.1:54321"]
    assert settings.workers == 5


def test_the_loop_counts_the_line_a_web_worker_logs_when_it_replaces_itself():
    """bench/scale.py --loop counts config/web_worker.py's log line: reworded there, the
    count would silently read zero."""
    assert WEB_WORKER_REPLACED in (ROOT / "config" / "web_worker.py").read_text()
