"""Publishing Celery tasks safely: after commit, and never running heavy work in a
request because a configured broker is down (docs/jobs.md "Tasks").

Tasks are named, not imported: annotation.tasks calls the services, so the services reach
its tasks through the Celery app's registry instead of importing them back."""

import logging

from celery import current_app
from django.conf import settings
from django.db import transaction

logger = logging.getLogger(__name__)


def enqueue_rollback_unsafe(task_name: str, *args) -> bool:
    """Publish the task named `task_name` with `args` now. With no broker configured it
    runs here, in-process (the embedded default). A publish that fails is logged and left to the periodic sweeps,
    which find the stored state and enqueue it again. Returns whether it was handed over.

    Unsafe inside a transaction that may still roll back: use `enqueue_on_commit`."""
    task = current_app.tasks[task_name]
    if settings.CELERY_TASK_ALWAYS_EAGER:
        task.apply(args=args)
        return True
    try:
        task.apply_async(args=args, retry=False)
    except Exception:  # kombu raises several unrelated types for an unreachable broker
        logger.warning("broker unavailable; %s%r left for the sweep", task.name, args, exc_info=True)
        return False
    return True


def enqueue_on_commit(task_name: str, *args) -> None:
    transaction.on_commit(lambda: enqueue_rollback_unsafe(task_name, *args))
