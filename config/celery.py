import os

from celery import Celery

# Every process that imports the `config` package imports this module first (config/__init__.py),
# gunicorn's and uvicorn's included, before config/wsgi.py or config/asgi.py run. So the default
# here must be theirs, production; manage.py sets local before it imports anything of ours.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")

app = Celery("mashov")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
