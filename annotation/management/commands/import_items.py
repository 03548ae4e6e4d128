"""`manage.py import_items SLUG FILE --format jsonl|csv|farstail`: the API's import, from the shell."""

from pathlib import Path

from django.core.management.base import BaseCommand

from annotation.errors import ApplicationError
from annotation.management.shell import project_and_file, refuse
from annotation.models import Job
from annotation.services.imports import items_import


class Command(BaseCommand):
    help = "Import items into a project (all or nothing)."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("file", type=Path)
        parser.add_argument("--format", required=True, dest="fmt")

    def handle(self, *args, slug, file, fmt, **options):
        project, data = project_and_file(slug, file)
        try:
            result = items_import(project=project, data=data, fmt=fmt, filename=file.name)
        except ApplicationError as exc:
            raise refuse(self.stderr, exc, "nothing was imported") from None
        if result.job:
            job = Job.objects.get(pk=result.job)
            self.stdout.write(f"job {job.pk}: {job.status} {job.result or job.error or ''}")
        else:
            self.stdout.write(self.style.SUCCESS(f"created {result.created}, skipped {result.skipped}"))
