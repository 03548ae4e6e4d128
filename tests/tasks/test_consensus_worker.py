"""The consensus step on a real Celery worker, PostgreSQL and Redis:
racing last votes give one outcome, the job run twice changes nothing, a pool process
killed with SIGKILL mid-consensus still leaves exactly one outcome after the redelivery,
and votes that arrive while Redis is down are kept and decided once it is back (by the
sweep, in chunks). The batch path's semantics against the per-item path's run on both
stacks."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from tests.conftest import ROOT, _wait_for_worker, wait_for_worker_idle, wait_until

SLUG = "consensus-w"
OUTCOME_FIELDS = (
    "id",
    "item_id",
    "round",
    "outcome",
    "gold",
    "votes",
    "n_votes",
    "agreement",
    "label_changed",
    "computed_at",
)
ITEM_FIELDS = ("id", "status", "gold_label", "round")


@pytest.fixture
def relabel(transactional_db, make_user, client_for, request):
    """An nli_relabel project (4 of 5, one revision round) with a supervisor, an author
    and four annotators; `clients[name]` are their token clients. Torn down before the
    tables are truncated, once the worker (where the test has one) has finished what the
    test left queued."""
    from annotation.models import Membership
    from annotation.services.projects import project_create

    admin = make_user("cw-admin", staff=True)
    project = project_create(actor=admin, slug=SLUG, name="Consensus on the worker", kind="nli_relabel", language="fa")
    users = {"author": make_user("cw-author")}
    for name in ("r1", "r2", "r3", "r4"):
        users[name] = make_user(f"cw-{name}")
        Membership.objects.create(project=project, user=users[name], role="annotator", status="active")
    yield project, users, {name: client_for(user) for name, user in users.items()}
    if "celery_worker" in request.fixturenames:
        wait_for_worker_idle()


def new_item(project, external_id: str, *, reference="entailment", author=None, hypothesis="دو مرد در حال صحبت هستند."):
    from annotation.models import Item

    return Item.objects.create(
        project=project,
        external_id=external_id,
        payload={"premise": "دو مرد کنار میز نشسته\u200cاند و گفتگو می\u200cکنند.", "hypothesis": hypothesis},
        reference_label=reference,
        author=author,
        group=external_id,
    )


def vote_directly(item, users, labels, *, complete=True):
    """Store votes as a submit would (assignment + annotation) without the HTTP path and
    without enqueuing anything: the state a lost message leaves behind."""
    from django.utils import timezone

    from annotation.models import Annotation, Assignment, Item

    now = timezone.now()
    for user, label in zip(users, labels):
        assignment = Assignment.objects.create(
            project=item.project,
            item=item,
            annotator=user,
            round=item.round,
            status="submitted",
            claimed_at=now,
            expires_at=now,
            submitted_at=now,
        )
        Annotation.objects.create(
            assignment=assignment, item=item, annotator=user, round=item.round, value={"label": label}
        )
    if complete:
        Item.objects.filter(pk=item.pk).update(status=Item.Status.COMPLETE)


def claim(client, slug=SLUG) -> dict:
    response = client.get(f"/api/projects/{slug}/next/")
    assert response.status_code == 200, response.content
    return response.json()


def submit(client, assignment_id: int, label: str, key: str | None = None):
    extra = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
    return client.post(f"/api/assignments/{assignment_id}/submit/", {"value": {"label": label}}, format="json", **extra)


def outcome_rows(**filters) -> list[dict]:
    from annotation.models import ConsensusOutcome

    return list(ConsensusOutcome.objects.filter(**filters).order_by("item_id", "round").values(*OUTCOME_FIELDS))


def item_rows(ids) -> list[dict]:
    from annotation.models import Item

    return list(Item.objects.filter(pk__in=list(ids)).order_by("pk").values(*ITEM_FIELDS))


def in_thread(target, *args):
    """Run target(*args) in a thread with its own database connection, closed after."""
    from django.db import connection

    result: dict = {}

    def run():
        try:
            result["value"] = target(*args)
        except BaseException as exc:  # reported by the caller
            result["error"] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, result


# --- racing last votes -----------------------------------------------------------------


@pytest.mark.worker
@pytest.mark.postgres
def test_two_racing_last_votes_give_one_outcome(relabel, celery_worker):
    """Four relabelers claim one item; the last two submit at the same moment from two
    threads. Both votes are stored, exactly one of the two transactions sees the round
    complete, the worker decides it once: 4 × entailment (the original label counted)
    against 1 × neutral is accepted with agreement 0.8."""
    from annotation.models import Annotation, ConsensusOutcome, Item

    project, users, clients = relabel
    item = new_item(project, "race")
    claims = {name: claim(clients[name]) for name in ("r1", "r2", "r3", "r4")}
    assert {c["item"]["id"] for c in claims.values()} == {item.pk}
    assert submit(clients["r1"], claims["r1"]["assignment"], "entailment").status_code == 201
    assert submit(clients["r2"], claims["r2"]["assignment"], "neutral").status_code == 201

    barrier = threading.Barrier(2)

    def last_vote(name, label):
        barrier.wait(timeout=10)
        return submit(clients[name], claims[name]["assignment"], label).status_code

    racers = [in_thread(last_vote, "r3", "entailment"), in_thread(last_vote, "r4", "entailment")]
    for thread, _ in racers:
        thread.join(timeout=30)
    assert [result.get("value", result.get("error")) for _, result in racers] == [201, 201]
    assert Annotation.objects.filter(item=item).count() == 4

    wait_until(lambda: Item.objects.get(pk=item.pk).status == Item.Status.ACCEPTED, timeout=30)
    time.sleep(0.5)  # a second, late run would land now
    [row] = outcome_rows(item=item)
    assert (row["outcome"], row["gold"], row["votes"], row["n_votes"], row["agreement"], row["label_changed"]) == (
        "accepted",
        "entailment",
        {"entailment": 4, "neutral": 1},
        5,
        0.8,
        False,
    )
    assert Item.objects.get(pk=item.pk).gold_label == "entailment"
    assert ConsensusOutcome.objects.count() == 1


@pytest.mark.worker
@pytest.mark.postgres
def test_per_item_and_batch_runs_racing_on_one_item_write_one_outcome(relabel, celery_worker):
    """The on-commit task on the worker, the per-item service and the batch service in
    two threads, all at once on the same complete item: one outcome, and every caller
    agrees on it."""
    from annotation.models import Item
    from annotation.services.consensus import consensus_compute_batch, consensus_compute_for_item
    from annotation.tasks import compute_consensus

    project, users, _ = relabel
    author = users["author"]
    items = [new_item(project, f"dup{n}", author=author) for n in range(5)]
    for item in items:
        vote_directly(
            item, [users[n] for n in ("r1", "r2", "r3", "r4")], ["neutral", "neutral", "contradiction", "entailment"]
        )

    barrier = threading.Barrier(3)

    def per_item():
        barrier.wait(timeout=10)
        return [getattr(consensus_compute_for_item(item.pk), "outcome", None) for item in items]

    def batch():
        barrier.wait(timeout=10)
        return consensus_compute_batch([item.pk for item in items])

    def on_worker():
        barrier.wait(timeout=10)
        for item in items:
            compute_consensus.delay(item.pk)

    runs = [in_thread(per_item), in_thread(batch), in_thread(on_worker)]
    for thread, _ in runs:
        thread.join(timeout=60)
    for _, result in runs:
        assert "error" not in result, result["error"]
    written_by_batch = runs[1][1]["value"]
    # Every item was decided by one of them; the per-item calls return the stored outcome
    # whoever wrote it (None only when the item was already moved on by another run).
    assert 0 <= written_by_batch <= len(items)
    assert set(runs[0][1]["value"]) <= {"failed", None}

    wait_until(lambda: not Item.objects.filter(project=project, status=Item.Status.COMPLETE).exists(), timeout=30)
    time.sleep(1.0)  # let the worker's late runs finish
    rows = outcome_rows(item__project=project)
    assert [r["item_id"] for r in rows] == [item.pk for item in items]
    # 2 × neutral, 1 × contradiction, 2 × entailment (the author's one): failed, round 1
    # with a revision left → back to the author.
    assert {(r["outcome"], r["gold"], tuple(sorted(r["votes"].items())), r["n_votes"]) for r in rows} == {
        ("failed", "", (("contradiction", 1), ("entailment", 2), ("neutral", 2)), 5)
    }
    assert {row["status"] for row in item_rows(i.pk for i in items)} == {Item.Status.NEEDS_REVISION}


# --- the job run twice -------------------------------------------------------------------


@pytest.mark.worker
@pytest.mark.postgres
def test_sweep_on_the_worker_then_every_path_again_changes_nothing(relabel, celery_worker):
    """Items left complete without a message (a lost one) are found by the sweep, sent in
    chunks to the batch task on the worker and decided; running the sweep, the batch task
    and the per-item task again leaves every outcome and item row as it was."""
    from annotation.models import Item
    from annotation.services import consensus
    from annotation.services.consensus import consensus_compute_batch, consensus_sweep
    from annotation.tasks import compute_consensus, compute_consensus_batch

    project, users, _ = relabel
    relabelers = [users[n] for n in ("r1", "r2", "r3", "r4")]
    author = users["author"]
    cases = {
        "accepted": (new_item(project, "acc"), ["entailment"] * 3 + ["neutral"]),
        "overruled": (new_item(project, "over", reference="contradiction"), ["neutral"] * 4),
        "revise": (new_item(project, "rev", author=author), ["neutral", "neutral", "contradiction", "contradiction"]),
        "removed": (new_item(project, "rem"), ["neutral", "neutral", "contradiction", "contradiction"]),
    }
    for item, labels in cases.values():
        vote_directly(item, relabelers, labels)
    # Many more, so that the sweep sends several chunks.
    bulk = [new_item(project, f"bulk{n}", reference="neutral") for n in range(40)]
    for n, item in enumerate(bulk):
        vote_directly(item, relabelers, ["neutral", "neutral", "neutral", "entailment" if n % 2 else "neutral"])
    ids = [item.pk for item, _ in cases.values()] + [item.pk for item in bulk]

    consensus_sweep_chunk = 16
    assert consensus_sweep(chunk_size=consensus_sweep_chunk) == len(ids)
    wait_until(lambda: not Item.objects.filter(project=project, status=Item.Status.COMPLETE).exists(), timeout=60)
    time.sleep(0.5)
    outcomes, items = outcome_rows(item__project=project), item_rows(ids)
    assert len(outcomes) == len(ids)
    by_item = {row["id"]: row for row in items}
    status = {name: by_item[item.pk]["status"] for name, (item, _) in cases.items()}
    assert status == {"accepted": "accepted", "overruled": "accepted", "revise": "needs_revision", "removed": "removed"}
    assert by_item[cases["overruled"][0].pk]["gold_label"] == "neutral"
    overruled = next(r for r in outcomes if r["item_id"] == cases["overruled"][0].pk)
    assert overruled["label_changed"] is True and overruled["votes"] == {"contradiction": 1, "neutral": 4}
    assert all(by_item[item.pk]["status"] == "accepted" for item in bulk)

    # Again, by every path: nothing is complete any more, so nothing is written.
    assert consensus_sweep() == 0
    assert consensus_compute_batch(ids) == 0
    compute_consensus_batch.apply(args=[ids])
    for pk in ids:
        compute_consensus.apply(args=[pk])
    compute_consensus_batch.delay(ids)  # and on the worker
    for pk in ids[:5]:
        compute_consensus.delay(pk)
    time.sleep(2.0)
    assert outcome_rows(item__project=project) == outcomes
    assert item_rows(ids) == items
    assert consensus.BATCH_SIZE >= consensus_sweep_chunk


# --- SIGKILL mid-consensus ---------------------------------------------------------------


def _active_pid(app, worker_prefix: str, task_name: str, args: list, *, not_pid: int | None = None) -> int | None:
    replies = app.control.inspect(timeout=1.0).active() or {}
    for name, tasks in replies.items():
        if not name.startswith(worker_prefix):
            continue
        for task in tasks:
            if (
                task.get("name") == task_name
                and list(task.get("args") or []) == args
                and task.get("worker_pid") != not_pid
            ):
                return task.get("worker_pid")
    return None


def _waiting_on_a_lock() -> bool:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
        )
        return cursor.fetchone()[0] >= 1


@pytest.mark.worker
@pytest.mark.postgres
def test_pool_process_killed_mid_consensus_writes_the_outcome_once_after_redelivery(relabel, celery_worker):
    """The per-item task blocks on the item's row lock, held by the test; its pool process
    is killed with SIGKILL; acks_late + reject_on_worker_lost put the message back, a new
    pool process takes it (and blocks in turn); once the lock is released the outcome is
    written exactly once and the worker itself carries on."""
    from django.db import connection, transaction

    from annotation.models import Item
    from annotation.tasks import compute_consensus
    from config.celery import app

    project, users, _ = relabel
    item = new_item(project, "kill", author=users["author"], reference="neutral")
    vote_directly(
        item, [users[n] for n in ("r1", "r2", "r3", "r4")], ["neutral", "neutral", "neutral", "contradiction"]
    )
    holding, release = threading.Event(), threading.Event()

    def hold_item_lock():
        try:
            with transaction.atomic():
                Item.objects.select_for_update().get(pk=item.pk)
                holding.set()
                release.wait(timeout=180)
        finally:
            connection.close()

    blocker = threading.Thread(target=hold_item_lock, daemon=True)
    blocker.start()
    assert holding.wait(timeout=10)
    name = "annotation.tasks.compute_consensus"
    prefix = f"{celery_worker.queue}@"
    try:
        compute_consensus.delay(item.pk)
        wait_until(_waiting_on_a_lock, timeout=60)
        pid = wait_until(lambda: _active_pid(app, prefix, name, [item.pk]), timeout=20)
        os.kill(pid, signal.SIGKILL)
        # The message comes back to a fresh pool process, which waits on the lock too.
        wait_until(lambda: _active_pid(app, prefix, name, [item.pk], not_pid=pid), timeout=60)
        assert outcome_rows(item=item) == []
        assert Item.objects.get(pk=item.pk).status == Item.Status.COMPLETE
    finally:
        release.set()
        blocker.join(timeout=30)

    wait_until(lambda: Item.objects.get(pk=item.pk).status == Item.Status.ACCEPTED, timeout=60)
    wait_until(lambda: _active_pid(app, prefix, name, [item.pk]) is None, timeout=30)
    [row] = outcome_rows(item=item)
    assert (row["outcome"], row["gold"], row["votes"]) == ("accepted", "neutral", {"contradiction": 1, "neutral": 4})
    assert Item.objects.get(pk=item.pk).gold_label == "neutral"
    assert celery_worker.process.poll() is None


@pytest.mark.worker
@pytest.mark.postgres
def test_batch_killed_mid_chunk_writes_nothing_and_the_next_sweep_decides_once(relabel, celery_worker):
    """The batch task locks its chunk and blocks writing the outcomes (the test holds an
    uncommitted outcome row with one of the chunk's keys); its pool process is killed.
    Nothing of the chunk is committed; the redelivered message and the following sweeps
    decide every item exactly once — the unique (item, round) key never trips."""
    from django.db import connection, transaction

    from annotation.models import ConsensusOutcome, Item
    from annotation.services.consensus import consensus_sweep
    from annotation.tasks import compute_consensus_batch
    from config.celery import app

    project, users, _ = relabel
    relabelers = [users[n] for n in ("r1", "r2", "r3", "r4")]
    items = [new_item(project, f"chunk{n}", reference="contradiction") for n in range(6)]
    for item in items:
        vote_directly(item, relabelers, ["contradiction"] * 4)
    ids = [item.pk for item in items]
    holding, release = threading.Event(), threading.Event()

    def hold_outcome_key():
        try:
            with transaction.atomic():
                ConsensusOutcome.objects.create(
                    item=items[-1], round=1, outcome="failed", votes={}, n_votes=0, agreement=0
                )
                holding.set()
                release.wait(timeout=180)
                transaction.set_rollback(True)
        finally:
            connection.close()

    blocker = threading.Thread(target=hold_outcome_key, daemon=True)
    blocker.start()
    assert holding.wait(timeout=10)
    name = "annotation.tasks.compute_consensus_batch"
    prefix = f"{celery_worker.queue}@"
    try:
        compute_consensus_batch.delay(ids)
        wait_until(_waiting_on_a_lock, timeout=60)
        pid = wait_until(lambda: _active_pid(app, prefix, name, [ids]), timeout=20)
        os.kill(pid, signal.SIGKILL)
        time.sleep(1.0)
        assert ConsensusOutcome.objects.filter(item__in=items).count() == 0
        assert Item.objects.filter(pk__in=ids, status=Item.Status.COMPLETE).count() == len(ids)
    finally:
        release.set()
        blocker.join(timeout=30)

    # The killed process's database session may still hold the chunk's row locks for a
    # moment (its COPY finishes, then it finds its client gone and rolls back); the
    # redelivered message skips locked items, and the periodic sweep takes what is left.
    def decided():
        if Item.objects.filter(pk__in=ids, status=Item.Status.COMPLETE).exists():
            consensus_sweep()
            return False
        return True

    wait_until(decided, timeout=60, interval=1.0)
    wait_until(lambda: _active_pid(app, prefix, name, [ids]) is None, timeout=30)
    rows = outcome_rows(item__in=items)
    assert [r["item_id"] for r in rows] == ids
    assert {(r["outcome"], r["gold"], r["n_votes"], r["agreement"]) for r in rows} == {
        ("accepted", "contradiction", 5, 1.0)
    }
    assert set(Item.objects.filter(pk__in=ids).values_list("status", "gold_label")) == {("accepted", "contradiction")}
    assert celery_worker.process.poll() is None


# --- Redis stopped while votes arrive ----------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start_redis(port: int) -> subprocess.Popen:
    process = subprocess.Popen(
        ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no", "--bind", "127.0.0.1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def listening():
        with socket.socket() as sock:
            return sock.connect_ex(("127.0.0.1", port)) == 0

    wait_until(listening, timeout=10, interval=0.05)
    return process


def _stop(process: subprocess.Popen, sig=signal.SIGKILL) -> None:
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.mark.worker
@pytest.mark.postgres
@pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server to start a private broker")
def test_votes_kept_while_redis_is_down_and_decided_by_the_sweep_once_it_is_back(
    relabel, celery_worker, settings, monkeypatch
):
    """A private Redis (the machine's shared one is never touched) serves the web side and
    a second worker. It is killed; the last votes of three items still come in: stored,
    answered fast, the items complete, and no consensus computed in the request. Redis
    restarts empty on the same port; the sweep enqueues the items and the second worker
    decides each once."""
    from annotation.models import Annotation, ConsensusOutcome, Item
    from annotation.services.consensus import consensus_sweep
    from config.celery import app

    project, users, clients = relabel
    items = [new_item(project, f"down{n}") for n in range(3)]
    real_url = app.conf.broker_url
    port = _free_port()
    private_url = f"redis://127.0.0.1:{port}/0"

    def use_broker(url: str):
        settings.CELERY_BROKER_URL = url
        # Celery reads the CELERY_BROKER_URL environment variable before its own conf.
        monkeypatch.setenv("CELERY_BROKER_URL", url)
        app.conf.broker_url = url
        # Drop the app's cached connection and producer pools, built for the broker of the
        # time (kombu keeps one pool per URL, so the real broker's is reused afterwards).
        app._pool = None
        app.amqp._producer_pool = None

    redis = _start_redis(port)
    log = open(ROOT / "tests" / f".worker-{celery_worker.queue}-private.log", "w")
    second = None
    try:
        use_broker(private_url)
        second = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "-n",
                f"{celery_worker.queue}@private-%h",
                "-Q",
                celery_worker.queue,
                "-c",
                "1",
                "-l",
                "warning",
                "--without-gossip",
                "--without-mingle",
            ],
            cwd=ROOT,
            env={**celery_worker.env, "CELERY_BROKER_URL": private_url},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        _wait_for_worker(app, celery_worker.queue, second)

        # Three of the four relabels of each item, with the broker up.
        for name in ("r1", "r2", "r3"):
            for _ in items:
                assert submit(clients[name], claim(clients[name])["assignment"], "entailment").status_code == 201
        assert Item.objects.filter(project=project, status=Item.Status.OPEN).count() == 3

        _stop(redis)
        for n in range(len(items)):
            body = claim(clients["r4"])
            started = time.monotonic()
            response = submit(clients["r4"], body["assignment"], "neutral", key=f"down-{n}")
            elapsed = time.monotonic() - started
            assert response.status_code == 201, response.content
            assert elapsed < 5.0, f"a vote took {elapsed:.1f}s with the broker down"
        # Kept, complete, and nothing decided in the request.
        assert Annotation.objects.filter(item__in=items).count() == 12
        assert Item.objects.filter(project=project, status=Item.Status.COMPLETE).count() == 3
        time.sleep(1.0)
        assert ConsensusOutcome.objects.filter(item__in=items).count() == 0
        # A sweep while the broker is still down enqueues nothing and changes nothing.
        assert consensus_sweep() == 0
        assert Item.objects.filter(project=project, status=Item.Status.COMPLETE).count() == 3

        redis = _start_redis(port)  # back, empty, on the same port

        def decided():
            if Item.objects.filter(project=project, status=Item.Status.COMPLETE).exists():
                consensus_sweep()  # the periodic sweep, run until the broker takes it
                return False
            return True

        wait_until(decided, timeout=90, interval=1.0)
        time.sleep(1.0)
        rows = outcome_rows(item__in=items)
        assert [r["item_id"] for r in rows] == [item.pk for item in items]
        assert {(r["outcome"], r["gold"], r["n_votes"], r["agreement"]) for r in rows} == {
            ("accepted", "entailment", 5, 0.8)
        }
        assert set(Item.objects.filter(pk__in=[i.pk for i in items]).values_list("status", flat=True)) == {"accepted"}
        assert consensus_sweep() == 0
        assert outcome_rows(item__in=items) == rows
    finally:
        use_broker(real_url)
        if second is not None:
            _stop(second, signal.SIGTERM)
        _stop(redis)
        log.close()
        (ROOT / "tests" / f".worker-{celery_worker.queue}-private.log").unlink(missing_ok=True)


# --- batch path = per-item path (both stacks) --------------------------------------------


def test_batch_decides_like_the_per_item_path(db, make_user):
    """Twin items with the same votes, one set decided item by item, the other in one
    batch call with a chunk size that splits them: the same outcomes and the same item
    moves (accepted with gold, needs_revision, removed, back to open when short of votes,
    abstentions not counted), then a second batch run writes nothing."""
    from annotation.models import ConsensusOutcome, Item, Membership
    from annotation.services.consensus import consensus_compute_batch, consensus_compute_for_item
    from annotation.services.projects import project_create

    admin = make_user("twin-admin", staff=True)
    author = make_user("twin-author")
    voters = [make_user(f"twin-{n}") for n in range(6)]
    projects = []
    for slug in ("twin-a", "twin-b"):
        project = project_create(actor=admin, slug=slug, name=slug, kind="nli_relabel", language="fa")
        for user in voters:
            Membership.objects.create(project=project, user=user, role="annotator", status="active")
        projects.append(project)
    cases = [
        # (external id, reference, author?, round, labels)
        ("5-0", "entailment", False, 1, ["entailment"] * 4),
        ("4-1", "entailment", True, 1, ["entailment", "entailment", "entailment", "neutral"]),
        ("against-author", "contradiction", True, 1, ["neutral"] * 4),
        ("3-2 authored r1", "entailment", True, 1, ["entailment", "entailment", "neutral", "neutral"]),
        ("3-2 authored r2", "entailment", True, 2, ["entailment", "entailment", "neutral", "neutral"]),
        ("3-2 original", "neutral", False, 1, ["neutral", "neutral", "entailment", "entailment"]),
        ("2-2-1", "entailment", True, 1, ["entailment", "neutral", "neutral", "contradiction"]),
        ("short", "neutral", False, 1, ["neutral", "neutral", "neutral"]),
        ("abstention", "neutral", False, 1, ["neutral", "neutral", "neutral", None]),
        ("no reference", "", False, 1, ["neutral"] * 4 + ["entailment"]),
        (
            "over-assigned",
            "neutral",
            False,
            1,
            ["neutral", "neutral", "neutral", "entailment", "entailment", "entailment"],
        ),
    ]
    twins = []
    for project in projects:
        made = []
        for external_id, reference, authored, round_, labels in cases:
            item = new_item(project, external_id, reference=reference, author=author if authored else None)
            if round_ > 1:
                # An earlier round's votes must not count: a different set.
                vote_directly(item, voters[:4], ["contradiction"] * 4, complete=False)
                Item.objects.filter(pk=item.pk).update(round=round_)
                item.refresh_from_db()
            vote_directly(item, voters, labels)
            made.append(item)
        twins.append(made)
    per_item_ids, batch_ids = [i.pk for i in twins[0]], [i.pk for i in twins[1]]

    for pk in per_item_ids:
        consensus_compute_for_item(pk)
    written = consensus_compute_batch(batch_ids + [per_item_ids[0]], chunk_size=4)

    def described(ids):
        outcomes = {
            o.item.external_id: (o.round, o.outcome, o.gold, o.votes, o.n_votes, o.agreement, o.label_changed)
            for o in ConsensusOutcome.objects.filter(item_id__in=ids).select_related("item")
        }
        items = {i.external_id: (i.status, i.gold_label, i.round) for i in Item.objects.filter(pk__in=ids)}
        return outcomes, items

    per_item, batch = described(per_item_ids), described(batch_ids)
    for part in (0, 1):
        for key in per_item[part]:
            assert (key, batch[part].get(key)) == (key, per_item[part][key])
    assert batch == per_item
    outcomes, items = batch
    assert written == len(outcomes) == len(cases) - 2  # "short" and "abstention" have none
    assert items == {
        "5-0": ("accepted", "entailment", 1),
        "4-1": ("accepted", "entailment", 1),
        "against-author": ("accepted", "neutral", 1),
        "3-2 authored r1": ("needs_revision", "", 1),
        "3-2 authored r2": ("removed", "", 2),
        "3-2 original": ("removed", "", 1),
        "2-2-1": ("needs_revision", "", 1),
        "short": ("open", "", 1),
        "abstention": ("open", "", 1),
        "no reference": ("accepted", "neutral", 1),
        "over-assigned": ("accepted", "neutral", 1),
    }
    assert outcomes["against-author"][6] is True
    assert outcomes["3-2 authored r2"][:5] == (2, "failed", "", {"entailment": 3, "neutral": 2}, 5)
    assert outcomes["over-assigned"][1:5] == ("accepted", "neutral", {"entailment": 3, "neutral": 4}, 7)

    before = {o["id"]: o for o in ConsensusOutcome.objects.values()}
    assert consensus_compute_batch(batch_ids + per_item_ids) == 0
    assert {o["id"]: o for o in ConsensusOutcome.objects.values()} == before
