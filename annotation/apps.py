from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Before any URLconf is imported: its patterns use <id:...>.
        from django.urls import register_converter

        from annotation.converters import IdConverter

        register_converter(IdConverter, "id")

        # The tasks join the Celery app's registry in every process, so that services can
        # enqueue them by name (annotation/services/tasks_queue.py) without importing them.
        from annotation import (
            checks,  # noqa: F401  (registers the deployment checks)
            tasks,  # noqa: F401
        )

        # The built-in model retrains after new decisions (docs/kinds.md "Model in the loop").
        from annotation.release.baseline_model import model_retrain_if_due
        from annotation.services.decisions import decisions_listen

        decisions_listen(model_retrain_if_due)
