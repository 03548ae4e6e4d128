import gc
import os

from celery import Celery, signals

# Every process that imports the `config` package imports this module first (config/__init__.py),
# gunicorn's and uvicorn's included, before config/wsgi.py or config/asgi.py run. So the default
# here must be theirs, production; manage.py sets local before it imports anything of ours.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")
# Celery's Django fixup runs Django's system checks as a worker starts, and the URL checks
# import the URLconf: every view, DRF's and drf-spectacular's machinery, the admin — about 600
# modules and 25 MiB a worker never uses to run its tasks (README "At rest"). The checks run
# where they belong: `manage.py migrate`, which docker-compose.yml runs before any worker
# starts, and `manage.py check`. Set CELERY_SKIP_CHECKS to an empty value to run them anyway.
os.environ.setdefault("CELERY_SKIP_CHECKS", "1")

app = Celery("mashov")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.worker_init.connect
def freeze_before_the_pool_forks(**_kwargs) -> None:
    # The installed kinds: nearly every task reads its project's kind (the sweep, the consensus
    # step), and with the system checks skipped nothing imports them at start. Imported here,
    # before the pool forks, they are shared by its processes instead of imported by each on
    # its first task.
    from annotation.kinds.registry import installed_kinds

    installed_kinds()
    # The worker's main process has imported Django, the tasks and what they import; the pool's
    # processes are forked from it next. Frozen, those objects are never visited by the
    # children's garbage collections, so the pages they live on stay shared (README "At rest").
    gc.freeze()
