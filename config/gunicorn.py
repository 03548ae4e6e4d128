"""gunicorn's settings for Mashov's web process (`gunicorn -c config/gunicorn.py`).

The application is loaded once, in the master, and the workers are forked from it: they
share the pages of the imported code (Django, DRF, the app, numpy) instead of each
importing its own copy, which is what keeps five workers near the memory of one
(README "At rest"). The price: a HUP reloads the configuration but not the code — restart
the container to deploy new code.
"""

import gc
import os

wsgi_app = "config.wsgi:application"
bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", "5"))
preload_app = True
# Ends a worker that sits idle holding the master's pages it copied (config/web_worker.py).
worker_class = "config.web_worker.RecyclingWorker"
accesslog = os.environ.get("GUNICORN_ACCESS_LOG", "-") or None


def when_ready(server):
    """In the master, after the application is loaded and before the first fork."""
    from config.preload import warm_web

    warm_web()


def pre_fork(server, worker):
    # Nothing the master opened may be inherited: a PostgreSQL or Redis socket shared by two
    # processes interleaves their protocol streams. Loading the app opens none (the probes in
    # tests/test_startup_memory.py hold it), and this closes any a future import would.
    from django.db import connections

    connections.close_all()
    # Objects allocated so far go to the permanent generation: the workers' collections never
    # visit them, so they never write to (and copy) the pages those objects live on.
    gc.freeze()
