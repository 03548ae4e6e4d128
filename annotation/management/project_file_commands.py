"""What the management commands that take a project and a file share."""

from pathlib import Path

from django.core.management.base import CommandError

from annotation.errors import ApplicationError
from annotation.models import Project


def project_and_file(slug: str, file: Path) -> tuple[Project, bytes]:
    """The project `slug` and the bytes of `file`, or a CommandError saying which is missing."""
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        raise CommandError(f"no project {slug!r}")
    try:
        return project, file.read_bytes()
    except OSError as exc:
        raise CommandError(f"cannot read {file}: {exc.strerror}") from None


def refuse(stderr, exc: ApplicationError, outcome: str) -> CommandError:
    """Write every error of `exc` as `row N: field: message`; the CommandError to raise."""
    for error in exc.errors:
        where = f"row {error.row}: " if error.row is not None else ""
        field = f"{error.field}: " if error.field else ""
        stderr.write(f"{where}{field}{error.message}")
    return CommandError(outcome)
