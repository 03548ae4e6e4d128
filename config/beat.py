"""The Celery app Celery beat runs (`celery -A config.beat beat`): the broker and the schedule
read from Django's settings, and nothing else.

Beat sends its tasks by name, so it needs neither the tasks' modules nor Django's apps. With
the project's app (config.celery), starting beat imports every task module, and through
Celery's Django fixup sets up every Django app — models, views' dependencies, numpy — for a
process that only wakes up once a minute to publish a message (README "At rest").
tests/test_startup_memory.py holds what beat loads.
"""

import os

from celery import Celery
from celery.loaders.app import AppLoader

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")


class ScheduleOnlyLoader(AppLoader):
    def init_worker(self) -> None:
        # The default imports the task modules (and the Django fixup hooks django.setup() to
        # that import): beat publishes by name and runs no task.
        pass


# No fixups: the Django fixup would set Django up in this process.
app = Celery("mashov", loader=ScheduleOnlyLoader, fixups=[], set_as_current=False)
app.config_from_object("django.conf:settings", namespace="CELERY")
