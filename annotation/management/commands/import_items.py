"""`manage.py import_items SLUG FILE --format jsonl|csv|farstail [--split NAME] [--labels-final]`:
the API's import, from the shell."""

from pathlib import Path

from django.core.management.base import BaseCommand

from annotation.errors import ApplicationError
from annotation.management.project_file_commands import project_and_file, refuse
from annotation.models import Job
from annotation.services.imports import import_options_clean, items_import


class Command(BaseCommand):
    help = "Import items into a project (all or nothing)."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("file", type=Path)
        parser.add_argument("--format", required=True, dest="fmt")
        parser.add_argument(
            "--split", default="", help="every row gets this split (FarsTail's Train/Val/Test file names give one)"
        )
        parser.add_argument("--labels-final", action="store_true", help="the file's labels are gold as published")

    def handle(self, *args, slug, file, fmt, split="", labels_final=False, **options):
        project, data = project_and_file(slug, file)
        try:
            import_options = import_options_clean(split, labels_final)
            result = items_import(project=project, data=data, fmt=fmt, filename=file.name, options=import_options)
        except ApplicationError as exc:
            raise refuse(self.stderr, exc, "nothing was imported") from None
        if result.job:
            job = Job.objects.get(pk=result.job)
            self.stdout.write(f"job {job.pk}: {job.status} {job.result or job.error or ''}")
        else:
            self.stdout.write(
                self.style.SUCCESS(f"created {result.created}, skipped {result.skipped}, held out {result.held_out}")
            )
            for held in result.held_out_rows:
                self.stdout.write(f"row {held.row} ({held.id}): {held.reason}")
