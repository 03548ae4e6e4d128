"""Load the demo: a Hebrew and a Persian NLI relabeling project and a Hebrew project of each
other annotating kind (annotation/demo/projects.json), with items written for Mashov, a
supervisor and three annotators. Safe to run again: it changes nothing that exists and
prints the logins each time."""

import json
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation.kinds.registry import available_kinds
from annotation.models import Membership, Project
from annotation.services.imports import items_import
from annotation.services.projects import project_create, user_create_by_operator

DEMO_DIR = Path(__file__).resolve().parents[2] / "demo"
SUPERVISOR = ("supervisor", "mashov-demo-supervisor")
ANNOTATORS = [
    ("annotator1", "mashov-demo-annotator1"),
    ("annotator2", "mashov-demo-annotator2"),
    ("annotator3", "mashov-demo-annotator3"),
]
# The demo's projects (annotation/demo/projects.json: slug, name, kind, language, file,
# settings): three annotators in the demo, so the protocols are scaled to them (e.g. the
# author's label plus 3 votes, 3 of 4 agreeing). Projects of a kind the site does not
# install are left out.
PROJECTS_FILE = DEMO_DIR / "projects.json"


class Command(BaseCommand):
    help = "Create the demo projects and users and print their logins."

    def add_arguments(self, parser):
        parser.add_argument("--force", action="store_true", help="load even when DEBUG is off")

    def handle(self, *args, force=False, **options):
        if not settings.DEBUG and not force:
            raise CommandError("The demo has well-known passwords; refusing with DEBUG off (use --force).")
        User = get_user_model()
        with transaction.atomic():
            users = {}
            for username, password in [SUPERVISOR, *ANNOTATORS]:
                user = User.objects.filter(username=username).first()
                if user is None:
                    # The demo supervisor may create projects and users (no open sign-up).
                    user = user_create_by_operator(
                        username=username, password=password, is_staff=username == SUPERVISOR[0]
                    )
                users[username] = user
            installed = available_kinds()
            for spec in json.loads(PROJECTS_FILE.read_text(encoding="utf-8")):
                if spec["kind"] not in installed:
                    continue
                slug, filename = spec["slug"], spec["file"]
                project = Project.objects.filter(slug=slug).first()
                if project is None:
                    project = project_create(
                        actor=users[SUPERVISOR[0]],
                        slug=slug,
                        name=spec["name"],
                        kind=spec["kind"],
                        language=spec["language"],
                        settings=spec["settings"],
                    )
                for username, _ in ANNOTATORS:
                    Membership.objects.get_or_create(
                        project=project, user=users[username], defaults={"role": "annotator", "status": "active"}
                    )
                items_import(project=project, data=(DEMO_DIR / filename).read_bytes(), fmt="jsonl", filename=filename)
        self.stdout.write(self.style.SUCCESS("Demo ready. Logins (username / password):"))
        for username, password in [SUPERVISOR, *ANNOTATORS]:
            self.stdout.write(f"  {username:<12} {password}")
