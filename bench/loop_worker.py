"""The Celery app of `bench/scale.py --loop`'s worker: the project's own (config.celery),
with the CPU each task took in its pool process logged, so the loop can say which of the
deferred work takes the worker's CPU (the log's "succeeded in" is wall time, which on a
shared machine is mostly waiting for a core)."""

import logging
import time

from celery.signals import task_postrun, task_prerun

from config.celery import app

__all__ = ["app"]

logger = logging.getLogger("bench.loop")
_started: dict[str, float] = {}


@task_prerun.connect
def _task_started(task_id=None, **_kwargs) -> None:
    _started[task_id] = time.process_time()


@task_postrun.connect
def _task_finished(task_id=None, task=None, **_kwargs) -> None:
    began = _started.pop(task_id, None)
    if began is not None:
        logger.warning("task-cpu %s %.6f", task.name, time.process_time() - began)
