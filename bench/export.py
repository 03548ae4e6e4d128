"""Benchmark: exporting 10,000 decided nli_relabel items over HTTP (gunicorn + PostgreSQL).

The product brief's comparison: Label Studio took 15 s to export 10,000 items on this kind
of machine. This script loads N items × 5 votes with premise and hypothesis of realistic
length (Hebrew words, about 150 and 60 characters), decides them with the product's own
consensus sweep, serves the project with gunicorn and times
`GET /api/projects/bench/export/?format=…&status=all` for each export format of the kind:
seconds to the last byte (best and median of --repeat), size, records (checked against N),
and the peak memory of the web workers, which stream the file instead of building it. A
script, not a test:

    python bench/export.py [--items 10000] [--repeat 5]

It creates (and drops) the scratch database `mashov_bench_export` on --server and serves on
a free port of 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from consensus import insert_votes, synthetic_votes  # noqa: E402 (bench/ is on sys.path when run as a script)
from scratch import admin_sql, free_port, production_env, wait_until_serving  # noqa: E402

FORMATS = ("jsonl", "csv", "farstail")
# Made-up Hebrew words for the items' text (the demo's own writing, not a dataset's).
WORDS = "הילדה קראה ספר חדש בספרייה של העיר אחרי שהגשם פסק והשמש יצאה מבין העננים הכבדים".split()


def payload_of(i: int) -> str:
    def text(length: int, shift: int) -> str:
        words, size, k = [], 0, 0
        while size < length:
            word = WORDS[(i * 7 + k * shift) % len(WORDS)]
            words.append(word)
            size += len(word) + 1
            k += 1
        return " ".join(words)

    return json.dumps({"premise": text(150, 3), "hypothesis": text(60, 5)}, ensure_ascii=False)


def peak_memory_mib(server_group: int) -> float:
    """The largest peak resident size (VmHWM) among the web server's processes."""
    peak = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.getpgid(int(pid)) != server_group:
                continue
            with open(f"/proc/{pid}/status") as handle:
                for line in handle:
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]))
        except (OSError, ProcessLookupError):
            continue
    return peak / 1024


def timed_download(url: str, token: str) -> tuple[float, int, bytes]:
    """Seconds to the last byte, bytes received, and the body."""
    started = time.perf_counter()
    with requests.get(url, headers={"Authorization": f"Token {token}"}, stream=True, timeout=300) as response:
        response.raise_for_status()
        body = b"".join(response.iter_content(chunk_size=1 << 16))
    return time.perf_counter() - started, len(body), body


def records_in(fmt: str, body: bytes) -> int:
    """Data records in an export, read independently of the product."""
    text = body.decode("utf-8-sig")
    if fmt == "jsonl":
        return sum(1 for line in text.splitlines() if json.loads(line))
    import csv
    import io

    rows = list(csv.reader(io.StringIO(text, newline=""), delimiter="\t" if fmt == "farstail" else ","))
    return len(rows) - 1  # the header


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--votes", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--database", default="mashov_bench_export")
    args = parser.parse_args()

    url = f"{args.server}/{args.database}"
    admin_sql(args.server, f"DROP DATABASE IF EXISTS {args.database}")
    admin_sql(args.server, f"CREATE DATABASE {args.database}")
    os.environ["DATABASE_URL"] = url
    os.environ.pop("CELERY_BROKER_URL", None)  # the consensus sweep runs in-process here
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.local"
    import django

    django.setup()
    import numpy as np
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from rest_framework.authtoken.models import Token

    from annotation.models import Membership, Project
    from annotation.services.consensus import consensus_sweep

    server = None
    try:
        call_command("migrate", verbosity=0)
        User = get_user_model()
        coders = [User.objects.create_user(f"coder{i:02d}", password=None) for i in range(20)]
        supervisor = User.objects.create_user("bench-sup", password=None)
        project = Project.objects.create(
            slug="bench",
            name="bench",
            kind="nli_relabel",
            language="he",
            settings={"consensus_k": 4, "consensus_n": args.votes, "revision_rounds": 0, "claim_ttl": 1800},
        )
        Membership.objects.create(project=project, user=supervisor, role="supervisor", status="active")
        Membership.objects.bulk_create(
            Membership(project=project, user=u, role="annotator", status="active") for u in coders
        )
        token = Token.objects.create(user=supervisor).key
        who, labels = synthetic_votes(np.random.default_rng(7), args.items, args.votes, len(coders))
        insert_votes(project, coders, who, labels, payload_of=payload_of)
        decided = consensus_sweep()
        assert decided == args.items, decided
        connection.close()

        port = free_port()
        env = production_env()
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "config.wsgi:application",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                str(args.workers),
                "--log-level",
                "error",
                "--timeout",
                "300",
            ],
            cwd=ROOT,
            env=env,
            start_new_session=True,
        )
        base = f"http://127.0.0.1:{port}"
        wait_until_serving(base)
        resting = peak_memory_mib(server.pid)
        rows = []
        for fmt in FORMATS:
            export_url = f"{base}/api/projects/bench/export/?format={fmt}&status=all"
            seconds, size, body = [], 0, b""
            for _ in range(args.repeat):
                took, size, body = timed_download(export_url, token)
                seconds.append(took)
            records = records_in(fmt, body)
            assert records == args.items, (fmt, records)
            rows.append((fmt, min(seconds), statistics.median(seconds), size, records))
        peak = peak_memory_mib(server.pid)
    finally:
        if server is not None:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
        connection.close()
        admin_sql(args.server, f"DROP DATABASE IF EXISTS {args.database}")

    print(
        f"\n{args.items:,} items × {args.votes} votes, decided; gunicorn {args.workers} workers, {os.cpu_count()} cores; best and median of {args.repeat}"
    )
    print(f"{'format':<10}{'best s':>9}{'median s':>10}{'MB':>8}{'records':>10}")
    for fmt, best, median, size, records in rows:
        print(f"{fmt:<10}{best:>9.2f}{median:>10.2f}{size / 1e6:>8.1f}{records:>10,}")
    print(f"peak resident memory of a web worker: {resting:.0f} MiB after start, {peak:.0f} MiB after the exports")
    print("reference: Label Studio, 15 s for 10,000 items on this kind of machine (the product brief)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
