"""Drive a running Mashov through its REST API, from an import to the exported gold.

    python scripts/compose_smoke.py http://127.0.0.1:8000 --username supervisor --password ...

With the login of a supervisor (or an administrator) it creates three annotators and a small
Hebrew `nli_relabel` project (two of three labels decide an item), imports three items, has
the annotators label (next → submit until the server has nothing left for them),
then waits for the worker: each item accepted with its gold label, an agreement job done.
Last it streams the gold export and checks every record, and publishes a release: built by
the jobs' worker, downloaded as a zip from a web. Everything it creates has a fresh
random suffix, so it can be run again on the same site; it deletes nothing.

It uses only the standard library, so it runs with any Python 3.11 on the operator's
machine, and talks to nothing but the given address. It exits 0 when every step passed and
1 (saying which step failed) otherwise; each wait for the worker is bounded by --timeout.
"""

import argparse
import getpass
import json
import os
import secrets
import sys
import time
import urllib.error
import urllib.request
import uuid

LABEL = "entailment"
ITEMS = [
    {"id": "smoke-1", "premise": "הילדים שיחקו בפארק כל אחר הצהריים.", "hypothesis": "הילדים היו בחוץ."},
    {"id": "smoke-2", "premise": "החנות נסגרה בשמונה בערב.", "hypothesis": "החנות הייתה פתוחה בבוקר."},
    {"id": "smoke-3", "premise": "היא קראה את הספר בתוך יומיים.", "hypothesis": "היא קראה ספר."},
]
ANNOTATORS = 3
AGREEING = 2


class SmokeFailure(Exception):
    """A step whose answer was not the one a working stack gives."""


class Client:
    """Requests to one Mashov site, as one user (a token once logged in)."""

    def __init__(self, base_url: str, token: str | None = None):
        self.base_url = base_url.rstrip("/")
        self.token = token

    def request(self, method: str, path: str, body=None, *, content_type="application/json", expect=(200,)):
        """The answer's status and body: parsed when it is application/json, bytes otherwise
        (an export's JSON Lines, a zip). A status not in `expect` is a failure that quotes
        the server's answer."""
        data = json.dumps(body).encode() if content_type == "application/json" and body is not None else body
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        if self.token:
            headers["Authorization"] = f"Token {self.token}"
        request = urllib.request.Request(self.base_url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                status, raw, kind = response.status, response.read(), response.headers.get("Content-Type", "")
        except urllib.error.HTTPError as error:
            status, raw, kind = error.code, error.read(), error.headers.get("Content-Type", "")
        if status not in expect:
            raise SmokeFailure(f"{method} {path}: {status} (expected {expect}): {raw[:500].decode(errors='replace')}")
        return status, json.loads(raw) if raw and kind.startswith("application/json") else raw

    def login(self, username: str, password: str) -> "Client":
        _, body = self.request("POST", "/api/auth/token/", {"username": username, "password": password})
        return Client(self.base_url, body["token"])


def multipart(fields: dict[str, str], file_name: str, file_bytes: bytes) -> tuple[bytes, str]:
    """A multipart/form-data body with `fields` and one file called `file`."""
    boundary = uuid.uuid4().hex
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        for name, value in fields.items()
    ]
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{file_name}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n".encode()
        + file_bytes
        + b"\r\n"
    )
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def wait_for(what: str, check, timeout: float):
    """`check()`'s first true answer, asked every half second for at most `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        answer = check()
        if answer:
            return answer
        if time.monotonic() > deadline:
            raise SmokeFailure(f"{what}: not within {timeout:g} s")
        time.sleep(0.5)


def run(base_url: str, username: str, password: str, timeout: float, say=print) -> None:
    """Every step, in order; raises SmokeFailure at the first one that fails."""
    site = Client(base_url)
    _, health = site.request("GET", "/healthz/")
    say(f"healthz: {health}")
    supervisor = site.login(username, password)

    suffix = secrets.token_hex(4)
    slug = f"smoke-{suffix}"
    annotators = []
    for number in range(ANNOTATORS):
        name, secret = f"smoke-{suffix}-{number}", secrets.token_urlsafe(16)
        supervisor.request("POST", "/api/users/", {"username": name, "password": secret}, expect=(201,))
        annotators.append((name, secret))
    supervisor.request(
        "POST",
        "/api/projects/",
        {
            "slug": slug,
            "name": f"Smoke test {suffix}",
            "kind": "nli_relabel",
            "language": "he",
            "settings": {"consensus_k": AGREEING, "consensus_n": ANNOTATORS},
        },
        expect=(201,),
    )
    for name, _ in annotators:
        supervisor.request(
            "POST",
            f"/api/projects/{slug}/members/",
            {"username": name, "role": "annotator", "status": "active"},
            expect=(201,),
        )
    say(f"project {slug}: {ANNOTATORS} annotators")

    lines = "".join(json.dumps({**item, "label": LABEL}, ensure_ascii=False) + "\n" for item in ITEMS)
    body, content_type = multipart({"format": "jsonl"}, "smoke.jsonl", lines.encode())
    _, imported = supervisor.request(
        "POST", f"/api/projects/{slug}/import/", body, content_type=content_type, expect=(201,)
    )
    if imported["created"] != len(ITEMS):
        raise SmokeFailure(f"import: {imported}")
    say(f"imported: {imported}")

    submitted = 0
    for name, secret in annotators:
        annotator = site.login(name, secret)
        # One label per item and annotator: more answers than items would be a loop.
        for _ in range(len(ITEMS) + 1):
            status, claim = annotator.request("GET", f"/api/projects/{slug}/next/", expect=(200, 204))
            if status == 204:
                break
            annotator.request(
                "POST", f"/api/assignments/{claim['assignment']}/submit/", {"value": {"label": LABEL}}, expect=(201,)
            )
            submitted += 1
        else:
            raise SmokeFailure(f"{name}: still offered items after labelling all {len(ITEMS)}")
    # Two agreeing labels decide an item, so the round may close before the third annotator.
    if submitted < AGREEING * len(ITEMS):
        raise SmokeFailure(f"labels: {submitted} given, {AGREEING * len(ITEMS)} needed")
    say(f"labelled: {submitted} labels by {ANNOTATORS} annotators")

    def decided():
        _, page = supervisor.request("GET", f"/api/projects/{slug}/items/?page_size=100")
        items = page["results"]
        return items if all(item["status"] == "accepted" for item in items) else None

    items = wait_for("every item accepted by the worker's consensus", decided, timeout)
    golds = {item["external_id"]: item.get("gold") for item in items}
    if len(items) != len(ITEMS) or any(gold is None or LABEL not in json.dumps(gold) for gold in golds.values()):
        raise SmokeFailure(f"gold after consensus: {golds}")
    say(f"accepted: {len(items)} items, gold {LABEL}")

    _, started = supervisor.request("POST", f"/api/projects/{slug}/agreement/", expect=(202,))

    def job_finished():
        _, job = supervisor.request("GET", f"/api/jobs/{started['job']}/")
        return job if job["status"] in ("done", "failed") else None

    job = wait_for(f"agreement job {started['job']}", job_finished, timeout)
    if job["status"] != "done":
        raise SmokeFailure(f"agreement job: {job}")
    _, reports = supervisor.request("GET", f"/api/projects/{slug}/agreement/")
    say(f"agreement job done: {len(reports)} reports")

    _, exported = supervisor.request("GET", f"/api/projects/{slug}/export/?format=jsonl&status=accepted")
    records = [json.loads(line) for line in exported.decode().splitlines() if line.strip()]
    if sorted(record.get("id") for record in records) != sorted(item["id"] for item in ITEMS):
        raise SmokeFailure(f"export: {records}")
    if any(record.get("gold_label") != LABEL for record in records):
        raise SmokeFailure(f"export without the gold label: {records}")
    say(f"exported: {len(records)} gold records")

    # The release job writes its files on the jobs' worker; a web serves the zip. Both must
    # see the same release storage.
    supervisor.request("POST", f"/api/projects/{slug}/releases/", {"version": "1.0"}, expect=(202,))

    def release_finished():
        _, release = supervisor.request("GET", f"/api/projects/{slug}/releases/1.0/")
        return release if release["status"] in ("ready", "failed") else None

    release = wait_for("release 1.0", release_finished, timeout)
    if release["status"] != "ready":
        raise SmokeFailure(f"release: {release}")
    _, archive = supervisor.request("GET", f"/api/projects/{slug}/releases/1.0/download/")
    if not archive.startswith(b"PK"):
        raise SmokeFailure(f"release download is not a zip: {archive[:100]!r}")
    say(f"release 1.0 ready: {len(release['files'])} files, zip of {len(archive)} bytes")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base_url", help="the site's address, e.g. http://127.0.0.1:8000")
    parser.add_argument("--username", required=True, help="a supervisor or an administrator")
    parser.add_argument(
        "--password",
        help="the login's password; by default MASHOV_PASSWORD from the environment, else asked for "
        "(a password on the command line shows in the process list and the shell's history)",
    )
    parser.add_argument("--timeout", type=float, default=60, help="seconds to wait for each step of the worker")
    options = parser.parse_args(argv)
    password = options.password or os.environ.get("MASHOV_PASSWORD") or getpass.getpass()
    try:
        run(options.base_url, options.username, password, options.timeout)
    except (SmokeFailure, urllib.error.URLError, OSError) as failure:
        print(f"FAILED: {failure}", file=sys.stderr)
        return 1
    except (ValueError, KeyError, TypeError) as failure:
        # An answer that is not the API's JSON (a proxy's error page, another site).
        print(f"FAILED: an unexpected answer: {failure!r}", file=sys.stderr)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
