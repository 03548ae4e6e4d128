"""Load the demo: a Hebrew and a Persian `nli_relabel` project and a Hebrew project of each
other annotating kind, with items written for Mashov, a supervisor and three annotators. Safe to run again: it changes nothing that
exists and prints the logins each time."""

from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

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
# (slug, name, kind, language, file, settings): three annotators in the demo, so the
# protocols are scaled to them (e.g. the author's label plus 3 votes, 3 of 4 agreeing).
PROJECTS = [
    ("demo-he-nli", "הסקה בעברית — הדגמה", "nli_relabel", "he", "nli_he.jsonl", {"consensus_k": 3, "consensus_n": 4}),
    (
        "demo-fa-nli",
        "استنتاج زبان طبیعی فارسی — نمونه",
        "nli_relabel",
        "fa",
        "nli_fa.jsonl",
        {"consensus_k": 3, "consensus_n": 4},
    ),
    ("demo-he-qa", "שאלות על פסקאות — הדגמה", "qa_authoring", "he", "qa_he.jsonl", {}),
    ("demo-he-mt", "דירוג תרגומים — הדגמה", "translation_rating", "he", "translation_he.jsonl", {}),
    ("demo-he-phrases", "זוגות ביטויים — הדגמה", "phrase_pair", "he", "phrase_he.jsonl", {}),
    (
        "demo-he-summaries",
        "דירוג סיכומים — הדגמה",
        "summary_rating",
        "he",
        "summaries_he.jsonl",
        {"raters_per_item": 3},
    ),
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
                user = User.objects.filter(username=username).first()
                if user is None:
                    # The demo supervisor may create projects and users (no open sign-up).
                    user = user_create_by_operator(
                        username=username, password=password, is_staff=username == SUPERVISOR[0]
                    )
                users[username] = user
            for slug, name, kind, language, filename, protocol in PROJECTS:
                project = Project.objects.filter(slug=slug).first()
                if project is None:
                    project = project_create(
                        actor=users[SUPERVISOR[0]],
                        slug=slug,
                        name=name,
                        kind=kind,
                        language=language,
                        settings=protocol,
                    )
                for username, _ in ANNOTATORS:
                    Membership.objects.get_or_create(
                        project=project, user=users[username], defaults={"role": "annotator", "status": "active"}
                    )
                items_import(project=project, data=(DEMO_DIR / filename).read_bytes(), fmt="jsonl", filename=filename)
        self.stdout.write(self.style.SUCCESS("Demo ready. Logins (username / password):"))
        for username, password in [SUPERVISOR, *ANNOTATORS]:
            self.stdout.write(f"  {username:<12} {password}")
