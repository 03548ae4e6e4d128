"""docker-compose.yml's multi-host wiring: every queue the settings route a task to has a
worker service reading it, and the rounds' tasks never share a queue with the jobs."""

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
TASKS = (
    "annotation.tasks.run_job",
    "annotation.tasks.compute_consensus",
    "annotation.tasks.compute_consensus_batch",
    "annotation.tasks.request_aggregation",
    "annotation.tasks.sweep_jobs",
)


def compose():
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def app_environment() -> dict[str, str]:
    env = compose()["x-app"]["environment"]
    return {key: re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", str(value)) for key, value in env.items()}


def routes(env: dict[str, str]) -> dict[str, str]:
    """The queue each task goes to under `env`, as the Celery app of a container routes it."""
    code = (
        "import django; django.setup(); from config.celery import app; "
        f"print(*(app.amqp.router.route({{}}, name)['queue'].name for name in {TASKS!r}))"
    )
    keep = {k: v for k, v in os.environ.items() if k.startswith(("PATH", "HOME", "LANG", "VIRTUAL_ENV"))}
    wanted = {key: env[key] for key in ("CELERY_QUEUE", "CELERY_JOBS_QUEUE", "DATABASE_REPLICA_URL")}
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**keep, **wanted, "DJANGO_SETTINGS_MODULE": "config.settings.test"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return dict(zip(TASKS, result.stdout.split()))


def queues_read(service: dict) -> set[str]:
    command = service["command"]
    assert "worker" in command
    return set(command[command.index("-Q") + 1].split(","))


def test_every_routed_queue_has_its_own_workers_and_jobs_stay_apart_from_rounds():
    services = compose()["services"]
    routed = routes(app_environment())
    workers = {
        name: queues_read(service) for name, service in services.items() if "worker" in service.get("command", [])
    }
    assert set(workers) == {"worker", "worker-jobs"}
    assert routed["annotation.tasks.run_job"] == "mashov-jobs"
    assert {routed[name] for name in TASKS[1:]} == {"mashov"}
    assert workers == {"worker": {"mashov"}, "worker-jobs": {"mashov-jobs"}}
    # Beat publishes only the sweep, which goes to the rounds' queue.
    assert "beat" in services["beat"]["command"]
