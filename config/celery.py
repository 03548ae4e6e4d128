import gc
import os

from celery import Celery, signals

# Every process that imports the `config` package imports this module first (config/__init__.py),
# gunicorn's and uvicorn's included, before config/wsgi.py or config/asgi.py run. So the default
# here must be theirs, production; manage.py sets local before it imports anything of ours.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")

app = Celery("mashov")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.worker_init.connect
def freeze_before_the_pool_forks(**_kwargs) -> None:
    # The worker's main process has imported Django, the tasks and what they import; the pool's
    # processes are forked from it next. Frozen, those objects are never visited by the
    # children's garbage collections, so the pages they live on stay shared (README "At rest").
    gc.freeze()
