"""Helpers the benchmark scripts share: their scratch PostgreSQL databases and the servers
they start on 127.0.0.1."""

import io
import json
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# A `manage.py shell -c` script: an nli_relabel project `BENCH_SLUG` of BENCH_ITEMS items,
# k-of-n consensus with n = BENCH_VOTES, a supervisor and BENCH_ANNOTATORS annotators who
# sign in with tokens. Unless BENCH_FRESH is set, the project is under way: every item
# already holds 0 to n − 1 votes (evenly spread), each from a different annotator.
# Prints {"supervisor": token, "annotators": [[user id, token], ...]}.
NLI_PROJECT_SETUP = """
import json, os, random
from datetime import timedelta
from django.contrib.auth import get_user_model
from django.utils import timezone
from rest_framework.authtoken.models import Token
from annotation.models import Annotation, Assignment, Item, Membership, Project
slug, fresh = os.environ["BENCH_SLUG"], os.environ.get("BENCH_FRESH") == "1"
n_items, n_annotators, votes = (int(os.environ[name]) for name in ("BENCH_ITEMS", "BENCH_ANNOTATORS", "BENCH_VOTES"))
User = get_user_model()
sup = User.objects.create_user("bench-sup")  # token auth only: no password to hash
project = Project.objects.create(slug=slug, name=slug, kind="nli_relabel", language="he",
    settings={"consensus_k": votes // 2 + 1, "consensus_n": votes, "revision_rounds": 0, "claim_ttl": 1800}, created_by=sup)
Membership.objects.create(project=project, user=sup, role="supervisor", status="active")
Item.objects.bulk_create(
    (Item(project=project, external_id=f"i{i}", payload={"premise": f"הנחה מספר {i}", "hypothesis": f"השערה {i}"},
          group=f"g{i // 3}", position=i) for i in range(n_items)), batch_size=5000)
annotators = []
for a in range(n_annotators):
    user = User.objects.create_user(f"bench-ann{a}")
    Membership.objects.create(project=project, user=user, role="annotator", status="active")
    annotators.append((user, Token.objects.create(user=user).key))
rng, earlier = random.Random(7), timezone.now() - timedelta(days=1)
claims = [
    Assignment(project=project, item=item, annotator=annotator, round=item.round, status="submitted",
               claimed_at=earlier, expires_at=earlier, submitted_at=earlier)
    for item in ([] if fresh else Item.objects.filter(project=project).order_by("id"))
    for annotator in rng.sample([user for user, _ in annotators], min(n_annotators, rng.randrange(votes)))
]
claims = Assignment.objects.bulk_create(claims, batch_size=5000)
Annotation.objects.bulk_create(
    (Annotation(assignment=claim, item_id=claim.item_id, annotator_id=claim.annotator_id, round=claim.round,
                value={"label": rng.choice(["entailment", "neutral", "contradiction"])}, created_at=earlier)
     for claim in claims), batch_size=5000)
print(json.dumps({"supervisor": Token.objects.create(user=sup).key, "annotators": [[user.pk, token] for user, token in annotators]}))
"""


def create_nli_project(env: dict, *, slug: str, items: int, annotators: int, votes: int, fresh: bool) -> dict:
    """Create NLI_PROJECT_SETUP's project on env's database; its accounts."""
    parameters = {
        "BENCH_SLUG": slug,
        "BENCH_ITEMS": str(items),
        "BENCH_ANNOTATORS": str(annotators),
        "BENCH_VOTES": str(votes),
        "BENCH_FRESH": "1" if fresh else "",
    }
    output = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", NLI_PROJECT_SETUP],
        cwd=ROOT,
        env={**env, **parameters},
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(output.strip().splitlines()[-1])


def admin_sql(server: str, sql: str) -> None:
    """Run `sql` on the server's maintenance database (CREATE / DROP DATABASE)."""
    import psycopg2

    conn = psycopg2.connect(f"{server}/postgres")
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(sql)
    conn.close()


def copy_rows(cursor, table, columns, rows):
    """Bulk-load tab-separated text rows with COPY (far faster than INSERTs at 100K rows)."""
    buffer = io.StringIO()
    for row in rows:
        buffer.write("\t".join(row))
        buffer.write("\n")
    buffer.seek(0)
    cursor.copy_expert(f"COPY {table} ({', '.join(columns)}) FROM STDIN", buffer)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def production_env(**extra) -> dict:
    """The environment of a production process serving 127.0.0.1 over plain HTTP."""
    import os

    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "SECRET_KEY": secrets.token_urlsafe(60),
        "PLAIN_HTTP": "1",
        "SECURE_HSTS_SECONDS": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
        "LOG_LEVEL": "ERROR",
        **extra,
    }


def wait_until_serving(base: str, attempts: int = 150) -> None:
    """Until `base`/healthz/ answers 200 (gunicorn has booted its workers)."""
    import requests

    for _ in range(attempts):
        try:
            if requests.get(f"{base}/healthz/", timeout=1).status_code == 200:
                return
        except requests.RequestException:
            time.sleep(0.2)
    raise RuntimeError(f"{base} did not answer")
