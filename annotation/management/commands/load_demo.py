"""Load the demo: a Hebrew and a Persian `nli_relabel` project with items written for
Mashov, a supervisor and three annotators. Safe to run again: it changes nothing that
exists and prints the logins each time."""

from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation.models import Membership, Project
from annotation.services.imports import items_import

DEMO_DIR = Path(__file__).resolve().parents[2] / "demo"
SUPERVISOR = ("supervisor", "mashov-supervisor")
ANNOTATORS = [("annotator1", "mashov-annotator1"), ("annotator2", "mashov-annotator2"), ("annotator3", "mashov-annotator3")]
PROJECTS = [
    ("demo-he-nli", "הסקה בעברית — הדגמה", "he", "nli_he.jsonl"),
    ("demo-fa-nli", "استنتاج زبان طبیعی فارسی — نمونه", "fa", "nli_fa.jsonl"),
]


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
                user, created = User.objects.get_or_create(username=username)
                if created:
                    user.set_password(password)
                    user.save()
                users[username] = user
            for slug, name, language, filename in PROJECTS:
                project, created = Project.objects.get_or_create(
                    slug=slug,
                    defaults={
                        "name": name,
                        "kind": "nli_relabel",
                        "language": language,
                        # Three annotators in the demo: the author's label plus 3 votes, 3 of 4 agreeing.
                        "settings": {"consensus_k": 3, "consensus_n": 4, "revision_rounds": 1, "claim_ttl": 1800},
                        "created_by": users[SUPERVISOR[0]],
                    },
                )
                Membership.objects.get_or_create(
                    project=project, user=users[SUPERVISOR[0]], defaults={"role": "supervisor", "status": "active"}
                )
                for username, _ in ANNOTATORS:
                    Membership.objects.get_or_create(
                        project=project, user=users[username], defaults={"role": "annotator", "status": "active"}
                    )
                items_import(project=project, data=(DEMO_DIR / filename).read_bytes(), fmt="jsonl", filename=filename)
        self.stdout.write(self.style.SUCCESS("Demo ready. Logins (username / password):"))
        for username, password in [SUPERVISOR, *ANNOTATORS]:
            self.stdout.write(f"  {username:<12} {password}")
