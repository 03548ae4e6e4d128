"""`manage.py evaluate SLUG FILE [--name NAME] [--split SPLIT] [--format jsonl|csv|squad]`: score a
model's predictions against the project's gold, as `POST /api/projects/{slug}/evaluations/`
does, and print every figure with its 95 % bootstrap interval."""

import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.errors import ApplicationError
from annotation.management.project_file_commands import project_and_file, refuse
from annotation.models import Job
from annotation.release.evaluation import evaluation_start
from annotation.release.evaluation_figures import flatten_figures
from annotation.selectors.evaluations import evaluation_describe
from annotation.tasks import run_job


def figure_lines(tree: dict) -> list[str]:
    """One line per figure: `name value [ci_low, ci_high]`, or the value of a figure without
    an interval (counts, the confusion matrix)."""
    lines = []
    for name, value in flatten_figures(tree):
        if not isinstance(value, dict) or "value" not in value:
            lines.append(f"{name}\t{value}")
        elif value["value"] is None:
            lines.append(f"{name}\tundefined")
        elif value["ci_low"] is None:
            lines.append(f"{name}\t{value['value']:.4f}")
        else:
            lines.append(f"{name}\t{value['value']:.4f}\t[{value['ci_low']:.4f}, {value['ci_high']:.4f}]")
    return lines


class Command(BaseCommand):
    help = "Score a predictions file against a project's gold and print the figures with 95 % CIs."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("file", type=Path)
        parser.add_argument("--name", default=None, help="the model's name (default: the file's name)")
        parser.add_argument("--split", default=None, help='the split scored (default "test"; "all" for every split)')
        parser.add_argument(
            "--format", default="", dest="fmt", help="jsonl, csv or squad (default: found from the file)"
        )
        parser.add_argument(
            "--timeout", type=float, default=600.0, help="seconds to wait for a worker that took the job"
        )

    def handle(self, *args, slug, file, name, split, fmt, timeout, **options):
        project, data = project_and_file(slug, file)
        try:
            evaluation = evaluation_start(
                project=project, user=None, data=data, filename=file.name, name=name or file.name, split=split, fmt=fmt
            )
        except ApplicationError as exc:
            raise refuse(self.stderr, exc, "nothing was stored") from None
        run_job(evaluation.job_id)  # here, unless a worker took it first
        deadline = time.monotonic() + timeout
        job = Job.objects.get(pk=evaluation.job_id)
        while job.status not in (Job.Status.DONE, Job.Status.FAILED) and time.monotonic() < deadline:
            time.sleep(0.5)
            job.refresh_from_db()
        evaluation.refresh_from_db()
        described = evaluation_describe(evaluation)
        if job.status != Job.Status.DONE:
            raise CommandError(f"evaluation {evaluation.pk} is {job.status}: {job.error or 'still running'}")
        self.stdout.write(
            f"evaluation {evaluation.pk} · {evaluation.name} · split {described['split']} · {evaluation.items} items"
        )
        for line in figure_lines(described["figures"]):
            self.stdout.write(line)
