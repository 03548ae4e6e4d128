"""`manage.py export_items SLUG --format jsonl|csv|farstail [--status S] [--split S] [--output FILE]`:
the API's export from the shell (stdout by default)."""

import os
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.errors import ApplicationError
from annotation.models import Project
from annotation.services.exports import EXPORT_STATUSES, export_prepare, export_stream


class Command(BaseCommand):
    help = "Export a project's items with their outcomes (streamed, constant memory)."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--format", required=True, dest="fmt", help="jsonl, csv, or a kind's own (farstail)")
        parser.add_argument(
            "--status", default=None, help=f"one of {', '.join(EXPORT_STATUSES)}; default: the kind's finished items"
        )
        parser.add_argument("--split", default=None)
        parser.add_argument("--output", type=Path, default=None, help="file to write (default: stdout)")

    def handle(self, *args, slug, fmt, status, split, output, **options):
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise CommandError(f"no project {slug!r}")
        try:
            spec = export_prepare(project=project, fmt=fmt, status=status, split=split)
        except ApplicationError as exc:
            for error in exc.errors:
                self.stderr.write(f"{error.field}: {error.message}" if error.field else error.message)
            raise CommandError("nothing was exported") from None
        if output is None:
            self._to_stdout(export_stream(spec))
            return
        # Written beside the target and moved into place, so a failed export leaves no half file.
        partial = output.with_name(f".{output.name}.part")
        try:
            with open(partial, "wb") as handle:
                for chunk in export_stream(spec):
                    handle.write(chunk)
            os.replace(partial, output)
        except OSError as exc:
            partial.unlink(missing_ok=True)
            raise CommandError(f"cannot write {output}: {exc.strerror}") from None
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        self.stderr.write(f"wrote {output}")

    def _to_stdout(self, chunks):
        binary = getattr(self.stdout, "buffer", None)
        if binary is not None:
            self.stdout.flush()
            for chunk in chunks:
                binary.write(chunk)
            binary.flush()
        else:  # a text stream (call_command(stdout=StringIO()))
            for chunk in chunks:
                self.stdout.write(chunk.decode("utf-8"), ending="")
