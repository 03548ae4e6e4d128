"""The kept reports as docker-compose.yml deploys the product: gunicorn with production
settings over plain HTTP, a worker on the rounds' queue, one on the jobs' queue and beat,
driven through the REST API alone. On projects above MASHOV_FIGURES_LIVE_ITEMS (set low in
the started processes), `GET /api/projects/{slug}/report/` serves what the worker kept by the
changed items (services.figures); once the worker is idle it must equal the report computed
whole on the same database.

- qa_authoring, the HeQ sample: paragraphs imported, questions authored, graded and
  validated; then an answer corrected.
- translation_rating, the LCHAIM and ConTRoL samples: the back-translation filter run with
  the real model on the jobs' worker, ratings submitted, a removed item restored; then two more.
- summary_rating, articles of our own writing: ratings submitted; then an open one edited.

The debounce is short and every run after the first incremental: the first burst's last
changes wait for beat's sweep, and the second step's single change per project, on items a
run has read already, is kept only if its service recorded it (one run given that item)."""

import json
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import ROOT, start_worker, stop_worker, wait_for_worker_idle, wait_until
from tests.test_scale_out import Web, production_env

pytestmark = [pytest.mark.postgres, pytest.mark.worker, pytest.mark.embeddings]

DATA = ROOT.parent / "shared" / "data"
LIVE_ITEMS = 8
# Short enough that a later request queues the next run, long enough that a burst of
# changes is held back (recorded, counted) for the sweep.
DEBOUNCE_SECONDS = 3
PASSWORD = "pass-word-123"


class Beat:
    """`celery -A config.beat beat` as the compose file's `beat` service runs it."""

    def __init__(self, env: dict[str, str], folder: Path):
        self.log_path = folder / f".beat-{uuid.uuid4().hex[:8]}.log"
        self.schedule = self.log_path.with_suffix(".schedule")
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config.beat", "beat", "-l", "warning",
             "--schedule", str(self.schedule)],
            cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
        for path in self.schedule.parent.glob(f"{self.schedule.name}*"):
            path.unlink(missing_ok=True)
        self.log_path.unlink(missing_ok=True)


@pytest.fixture
def deployment(transactional_db):
    """One gunicorn web, the two workers and beat on the test database, with production
    settings, the figures kept from LIVE_ITEMS items and every run after the first incremental."""
    suffix = uuid.uuid4().hex[:8]
    rounds, jobs = f"mashov-rounds-{suffix}", f"mashov-jobs-{suffix}"
    env = production_env(
        CELERY_QUEUE=rounds,
        CELERY_JOBS_QUEUE=jobs,
        MASHOV_FIGURES_LIVE_ITEMS=str(LIVE_ITEMS),
        MASHOV_AGGREGATION_DEBOUNCE_SECONDS=str(DEBOUNCE_SECONDS),
        MASHOV_AGGREGATION_INCREMENTAL_ITEMS="1",
        MASHOV_AGGREGATION_FULL_SHARE="1000",
        MASHOV_AGGREGATION_FULL_SECONDS=str(10**9),
    )
    started: list = []
    try:
        web = Web(env, ROOT / "tests" / f".web-{suffix}.log")
        started.append(web)
        started.append(start_worker(rounds, env=env))
        started.append(start_worker(jobs, concurrency=1, env=env))
        started.append(Beat(env, ROOT / "tests"))
        web.wait_ready()
        yield {"url": web.url, "rounds": rounds, "jobs": jobs}
    finally:
        for process in reversed(started):
            if isinstance(process, Web | Beat):
                process.stop()
            else:
                stop_worker(process)


class Api:
    """A REST client of one user on the started web: every call checked for its status."""

    def __init__(self, url: str, token: str):
        import requests

        self.url = url
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Token {token}"

    def call(self, method: str, path: str, expect: int | tuple[int, ...] = 200, **kwargs):
        response = self.session.request(method, f"{self.url}/api/{path}", timeout=60, **kwargs)
        allowed = (expect,) if isinstance(expect, int) else expect
        assert response.status_code in allowed, f"{method} {path}: {response.status_code} {response.text[:2000]}"
        return response

    def get(self, path: str, expect=200, **kwargs):
        return self.call("GET", path, expect, **kwargs)

    def post(self, path: str, expect=201, **kwargs):
        return self.call("POST", path, expect, **kwargs)


def login(url: str, username: str) -> Api:
    import requests

    response = requests.post(f"{url}/api/auth/token/", json={"username": username, "password": PASSWORD}, timeout=30)
    assert response.status_code == 200, response.text
    return Api(url, response.json()["token"])


def member(admin: Api, slug: str, username: str, role: str, status: str = "active") -> Api:
    admin.post("users/", json={"username": username, "password": PASSWORD})
    admin.post(f"projects/{slug}/members/", json={"username": username, "role": role, "status": status})
    return login(admin.url, username)


def wait_for_job(api: Api, job_id: int, timeout: float = 120.0) -> dict:
    def finished():
        body = api.get(f"jobs/{job_id}/").json()
        return body if body["status"] in ("done", "failed") else None

    body = wait_until(finished, timeout=timeout, interval=0.5)
    assert body["status"] == "done", body
    return body


def words_span(context: str, first_word: int, words: int) -> dict:
    """A span of whole words of the paragraph served (read here, at run time)."""
    tokens = context.split(" ")
    start = len(" ".join(tokens[:first_word])) + (1 if first_word else 0)
    text = " ".join(tokens[first_word : first_word + words])
    assert context[start : start + len(text)] == text
    return {"start": start, "text": text}


# --- qa_authoring --------------------------------------------------------------------------


def drive_qa(admin: Api) -> tuple[str, dict]:
    """HeQ's workflow on its sample, above the live threshold: paragraphs imported as dev
    (so that every question goes to validation), paragraphs authored by trial members (all
    reviewed), every question graded, questions validated. Returns the slug and a graded
    paragraph's entry of the review queue."""
    slug = "heq-kept"
    admin.post("projects/", json={"slug": slug, "name": slug, "kind": "qa_authoring", "language": "he"})
    sample = (DATA / "heq" / "val_v1.1_sample.json").read_bytes()
    imported = admin.post(
        f"projects/{slug}/import/",
        files={"file": ("val.json", sample)},
        data={"format": "squad", "split": "dev"},
    ).json()
    assert imported["created"] > LIVE_ITEMS, imported
    authors = [member(admin, slug, f"author{index}", "annotator", "trial") for index in range(2)]
    validator = member(admin, slug, "validator", "reviewer")
    for round_ in range(3):
        for author in authors:
            claim = author.get(f"projects/{slug}/next/").json()
            context = claim["item"]["payload"]["context"]
            questions = [
                {"question": "מה כתוב בתחילת הפסקה?", "answerable": True, "answer": words_span(context, 0, 2)},
                {"question": "איזו מילה באה אחר כך?", "answerable": True, "answer": words_span(context, 2 + round_, 1)},
                {"question": "מה צבע השמיים במאדים?", "answerable": False, "answer": None},
            ]
            author.post(f"assignments/{claim['assignment']}/submit/", json={"value": {"questions": questions}})
    pending = admin.get(f"projects/{slug}/reviews/pending/", params={"page_size": 100}).json()
    pending = pending["results"] if isinstance(pending, dict) else pending
    assert pending, "the trial members' paragraphs go to review"
    grades = ("good", "verified", "rejected", "gold")
    for index, entry in enumerate(pending):
        for question in range(len(entry["value"]["questions"])):
            grade = grades[(index + question) % len(grades)]
            admin.post(f"annotations/{entry['annotation']}/review/", json={"grade": grade, "question": question})
    for turn in range(6):
        task = validator.get(f"projects/{slug}/validations/next/").json()
        context = task["item"]["payload"]["context"]
        target = (
            {"annotation": task["annotation"], "question": task["question"]}
            if task["annotation"] is not None
            else {"item": task["item"]["id"], "question_key": task["question_key"]}
        )
        answer = {"answerable": True, "answer": words_span(context, turn % 3, 2)} if turn % 4 else {"answerable": False}
        if not answer["answerable"]:
            answer["answer"] = None
        validator.post("validations/submit/", json={**target, **answer})
    return slug, pending[0]


def correct_qa(admin: Api, slug: str, authored: dict) -> None:
    """An authored span (`authored`: its entry of the review queue) corrected by the
    supervisor, on a paragraph whose earlier changes (authored, graded) a run has read
    already: only the correction's own record brings the paragraph into the next run."""
    context = authored["item"]["payload"]["context"]
    admin.post(
        f"items/{authored['item']['id']}/answer-corrections/",
        json={"annotation": authored["annotation"], "question": 0, "answer": words_span(context, 0, 3)},
    )


# --- translation_rating --------------------------------------------------------------------


def control_records() -> list[dict]:
    lines = (DATA / "lchaim" / "control_dev_sample.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def back_translations(shift: int, every: int) -> bytes:
    """English back-translations in the LCHAIM file's shape: the ConTRoL record itself (a
    perfect round trip), but every `every`-th record's texts taken from the record `shift`
    places on (another passage: a poor one), so the filter flags some items and shares
    some premises between items with different scores."""
    records = control_records()
    out = []
    for index, record in enumerate(records):
        other = records[(index + shift) % len(records)] if index % every == 0 else record
        out.append({**record, "premise": other["premise"], "hypothesis": other["hypothesis"]})
    return json.dumps(out, ensure_ascii=False).encode()


def drive_translation(admin: Api) -> tuple[str, list[int]]:
    """LCHAIM's workflow on its sample: the AWS translation imported for two systems with
    back-translations, the filter run on the jobs' worker (the real model), ratings
    submitted by two raters, an item the filter removed restored. Returns the slug and the
    ids of the items the filter removed that are still removed."""
    slug = "lchaim-kept"
    admin.post(
        "projects/",
        json={"slug": slug, "name": slug, "kind": "translation_rating", "language": "he",
              "settings": {"released_system": "aws", "raters_per_item": 2}},
    )  # fmt: skip
    translation = (DATA / "lchaim" / "aws_heb_dev_sample.json").read_bytes()
    imported = admin.post(
        f"projects/{slug}/import-lchaim/",
        data={"split": "dev", "system": ["aws", "aws-again"]},
        files=[
            ("source", ("control.jsonl", (DATA / "lchaim" / "control_dev_sample.jsonl").read_bytes())),
            ("translation", ("aws.json", translation)),
            ("translation", ("aws-again.json", translation)),
            ("back_translation", ("aws-back.json", back_translations(shift=20, every=5))),
            ("back_translation", ("again-back.json", back_translations(shift=7, every=3))),
        ],
    ).json()
    assert imported["created"] > LIVE_ITEMS, imported
    job = admin.post(f"projects/{slug}/back-translation/", expect=202).json()["job"]
    wait_for_job(admin, job)
    raters = [member(admin, slug, f"rater{index}", "annotator") for index in range(2)]
    for turn in range(4):
        for index, rater in enumerate(raters):
            claim = rater.get(f"projects/{slug}/next/").json()
            ratings = {
                str(candidate): {"accuracy": 1 + (turn + candidate + index) % 5, "fluency": 1 + (turn * 3 + index) % 5,
                                 "cultural_fit": 3, "label_valid": (turn + candidate) % 4 != 0}
                for candidate in range(len(claim["item"]["payload"]["candidates"]))
            }  # fmt: skip
            rater.post(f"assignments/{claim['assignment']}/submit/", json={"value": {"ratings": ratings}})
    removed = admin.get(f"projects/{slug}/items/", params={"status": "removed", "page_size": 100}).json()["results"]
    assert len(removed) >= 2, "the filter removes the released system's poor round trips"
    admin.post(f"projects/{slug}/back-translation/restore/", expect=200, json={"items": [removed[0]["id"]]})
    return slug, [item["id"] for item in removed[1:]]


# --- summary_rating ------------------------------------------------------------------------


def summary_ratings(payload: dict, turn: int) -> dict:
    tags = ("repetition", "hallucination", "copy_from_article")
    return {
        "ratings": {
            str(index): {"coherence": 1 + (turn + index) % 5, "completeness": 1 + (2 * turn + index) % 5,
                         "errors": [tags[(turn + index) % 3]] if (turn + index) % 2 else []}
            for index in range(len(payload["summaries"]))
        }
    }  # fmt: skip


def drive_summary(admin: Api) -> tuple[str, Api]:
    """HeSum's rating on the articles of our own writing the summary tests use (HeSum's
    files carry no licence), each imported three times over: two raters per article, one
    rater ahead of the other so that some rounds stay open. Returns the slug and the rater
    whose open ratings may still be edited."""
    from tests.kinds.summary.test_api import ARTICLES

    slug = "hesum-kept"
    admin.post(
        "projects/",
        json={"slug": slug, "name": slug, "kind": "summary_rating", "language": "he",
              "settings": {"raters_per_item": 2}},
    )  # fmt: skip
    rows = [{**article, "id": f"{article['id']}-{copy}"} for copy in range(3) for article in ARTICLES]
    lines = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    imported = admin.post(
        f"projects/{slug}/import/", files={"file": ("sums.jsonl", lines.encode())}, data={"format": "jsonl"}
    ).json()
    assert imported["created"] > LIVE_ITEMS, imported
    ahead, behind = (member(admin, slug, f"summary-rater{index}", "annotator") for index in range(2))
    for rater, turns in ((ahead, 6), (behind, 3)):
        for turn in range(turns):
            claim = rater.get(f"projects/{slug}/next/").json()
            value = summary_ratings(claim["item"]["payload"], turn)
            rater.post(f"assignments/{claim['assignment']}/submit/", json={"value": value})
    return slug, ahead


def edit_summary(rater: Api, slug: str) -> None:
    """A rating of a round still open edited by its rater (its item read by a run already)."""
    mine = rater.get(f"projects/{slug}/mine/", params={"page_size": 100}).json()["results"]
    entry = next(entry for entry in mine if entry["editable"])
    value = summary_ratings(entry["item"]["payload"], turn=7)
    rater.call("PATCH", f"annotations/{entry['annotation']}/", 200, json={"value": value})


# --- the comparison ------------------------------------------------------------------------


def settled(slugs: list[str]) -> bool:
    """Every change of the projects counted has been read by a finished run, and no job of
    theirs waits or runs."""
    from annotation.models import Job, Project

    projects = Project.objects.filter(slug__in=slugs)
    if any(project.aggregation_done < project.aggregation_requested for project in projects):
        return False
    return not Job.objects.filter(project__in=projects, status__in=("queued", "running")).exists()


def report_computed_whole(slug: str, viewer) -> dict:
    """The report as a small project computes it per request, on the same database, read as
    the API's JSON reads."""
    from django.test import override_settings

    from annotation.models import Project
    from annotation.selectors.reports import report_for_viewer
    from annotation.services.figures import _json

    with override_settings(MASHOV_FIGURES_LIVE_ITEMS=10**9):
        return _json(report_for_viewer(Project.objects.get(slug=slug), viewer))


def assert_served_equals_whole(admin: Api, slugs: list[str], viewer) -> None:
    """The report each project serves is the one the worker stored (the project is above the
    web's live threshold), and equals the report computed whole."""
    from annotation.models import ProjectFigures

    for slug in slugs:
        assert ProjectFigures.objects.filter(project__slug=slug, name="report_sections").exists(), slug
        served = admin.get(f"projects/{slug}/report/").json()
        expected = report_computed_whole(slug, viewer)
        assert {key: value for key, value in served.items() if value != expected.get(key)} == {}, slug
        assert served == expected, slug


def wait_settled(deployment, slugs: list[str]) -> None:
    """The rounds' worker idle (the consensus steps, the requests they queue), then every
    counted change read by a finished run: by the next request past the debounce, or by
    beat's sweep (every 60 s) for what the debounce held back last."""
    wait_for_worker_idle(deployment["rounds"], timeout=60)
    wait_until(lambda: settled(slugs), timeout=150, interval=1.0)
    wait_for_worker_idle(deployment["jobs"], timeout=60)


def test_the_served_report_of_a_large_project_equals_the_report_computed_whole(deployment, make_user):
    from rest_framework.authtoken.models import Token

    from annotation.models import Job

    started = time.monotonic()
    root = make_user("root", password=PASSWORD, staff=True)
    admin = Api(deployment["url"], Token.objects.create(user=root).key)
    qa, authored = drive_qa(admin)
    translation, removed = drive_translation(admin)
    summary, rater = drive_summary(admin)
    slugs = [qa, translation, summary]
    driven = time.monotonic()
    wait_settled(deployment, slugs)
    print(f"\nchanges driven in {driven - started:.1f} s, kept by the worker {time.monotonic() - driven:.1f} s later")
    assert_served_equals_whole(admin, slugs, root)
    done = {
        slug: set(Job.objects.filter(project__slug=slug, kind="aggregation").values_list("pk", flat=True))
        for slug in slugs
    }

    # One change each, on items a run has read already: a run given only that item keeps it,
    # queued by the change itself (the last run was queued more than the debounce ago).
    time.sleep(DEBOUNCE_SECONDS)
    correct_qa(admin, qa, authored)
    admin.post(f"projects/{translation}/back-translation/restore/", expect=200, json={"items": removed[:2]})
    edit_summary(rater, summary)
    driven = time.monotonic()
    wait_settled(deployment, slugs)
    print(f"one change each, kept {time.monotonic() - driven:.1f} s later")
    for slug in slugs:
        runs = Job.objects.filter(project__slug=slug, kind="aggregation").exclude(pk__in=done[slug])
        assert [run.result.get("full") for run in runs] == [False], f"{slug}: {[run.result for run in runs]}"
    assert_served_equals_whole(admin, slugs, root)
