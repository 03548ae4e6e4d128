"""Many annotators at once on PostgreSQL, with real transactions: no item over-filled, no
item labeled twice by one person, every item completed.

The threads share nothing but the database; each opens and closes its own connection."""

import threading
import time
import traceback
from collections import Counter

import pytest
from django.db import connection

pytestmark = [pytest.mark.postgres]

THREADS = 50
ITEMS = 40
VOTES = 4  # consensus_n 5 with a reference label on every item → 4 annotator votes each
# Everyone agrees with the reference label, so that consensus (run when an item completes)
# accepts every item and never reopens one for revision while the threads still run.
LABELS = ("entailment",) * 3


def make_crowd(make_user, *, annotators: int, items: int, slug: str = "crowd", settings: dict | None = None):
    """A project of `items` items needing VOTES votes each (or as `settings` say), and
    `annotators` active annotators."""
    from annotation.models import Item, Membership
    from annotation.services.projects import project_create

    admin = make_user(f"{slug}-admin", staff=True)
    project = project_create(actor=admin, slug=slug, name="Crowd", kind="nli_relabel", language="fa", settings=settings)
    Item.objects.bulk_create(
        Item(
            project=project,
            external_id=f"x{i}",
            payload={"premise": f"مقدمه {i}", "hypothesis": "فرضیه"},
            reference_label="entailment",
            group=f"q{i // 3}",
            position=i,
        )
        for i in range(items)
    )
    users = [make_user(f"{slug}-ann{i:02d}") for i in range(annotators)]
    Membership.objects.bulk_create(
        Membership(project=project, user=u, role="annotator", status="active") for u in users
    )
    return project, users


def run_threads(target, args_list, timeout: float = 300.0):
    """Run target(*args) in one thread each, released together; returns per-thread errors."""
    barrier = threading.Barrier(len(args_list))
    errors: list[str] = []
    lock = threading.Lock()

    def wrapper(*args):
        try:
            barrier.wait(timeout=30)
            target(*args)
        except Exception:  # collected and reported by the test
            with lock:
                errors.append(traceback.format_exc())
        finally:
            connection.close()

    threads = [threading.Thread(target=wrapper, args=args, daemon=True) for args in args_list]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "threads still running: a deadlock or a livelock"
    return errors


def assert_no_overfill_no_doubles(project, needed: int):
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT a.item_id, a.round, count(*) FROM annotation_annotation a
               JOIN annotation_item i ON i.id = a.item_id WHERE i.project_id = %s
               GROUP BY a.item_id, a.round HAVING count(*) > %s""",
            [project.pk, needed],
        )
        assert cursor.fetchall() == [], "items with more annotations than needed"
        cursor.execute(
            """SELECT item_id, round, count(*) FROM annotation_assignment
               WHERE project_id = %s AND status IN ('submitted', 'claimed')
               GROUP BY item_id, round HAVING count(*) > %s""",
            [project.pk, needed],
        )
        assert cursor.fetchall() == [], "items with more live assignments than needed"
        cursor.execute(
            """SELECT item_id, annotator_id, round, count(*) FROM annotation_annotation
               WHERE item_id IN (SELECT id FROM annotation_item WHERE project_id = %s)
               GROUP BY item_id, annotator_id, round HAVING count(*) > 1""",
            [project.pk],
        )
        assert cursor.fetchall() == [], "an annotator labeled an item twice in a round"
        cursor.execute(
            """SELECT item_id, annotator_id, round, count(*) FROM annotation_assignment
               WHERE project_id = %s AND status <> 'expired'
               GROUP BY item_id, annotator_id, round HAVING count(*) > 1""",
            [project.pk],
        )
        assert cursor.fetchall() == [], "an annotator holds an item twice in a round"
        cursor.execute(
            """SELECT count(*) FROM annotation_assignment a JOIN annotation_item i ON i.id = a.item_id
               WHERE a.project_id = %s AND a.annotator_id = i.author_id""",
            [project.pk],
        )
        assert cursor.fetchone()[0] == 0


def assert_every_item_completed(project, needed: int):
    with connection.cursor() as cursor:
        # Every item got exactly its needed votes in round 1 and left "open". (Completion may
        # hand the item straight on to consensus, which moves it on to "accepted".)
        cursor.execute(
            """SELECT i.id, i.status, count(a.id) FROM annotation_item i
               LEFT JOIN annotation_annotation a ON a.item_id = i.id AND a.round = 1
               WHERE i.project_id = %s GROUP BY i.id, i.status""",
            [project.pk],
        )
        rows = cursor.fetchall()
        assert len(rows) == ITEMS
        assert [row for row in rows if row[1] == "open" or row[2] != needed] == []
        cursor.execute(
            """SELECT count(*) FROM annotation_annotation
               WHERE item_id IN (SELECT id FROM annotation_item WHERE project_id = %s)""",
            [project.pk],
        )
        assert cursor.fetchone()[0] == ITEMS * needed


def test_fifty_annotators_through_the_services(transactional_db, make_user):
    from annotation.errors import Conflict
    from annotation.services.assignments import annotation_submit, assignment_next_for_annotator

    project, users = make_crowd(make_user, annotators=THREADS, items=ITEMS)
    conflicts = Counter()
    done = Counter()

    def annotate(user, index):
        for step in range(ITEMS + 5):
            assignment = assignment_next_for_annotator(user=user, slug=project.slug)
            if assignment is None:
                return
            try:
                annotation_submit(user=user, assignment_id=assignment.pk, value={"label": LABELS[(index + step) % 3]})
                done[user.pk] += 1
            except Conflict:
                conflicts[user.pk] += 1
        raise AssertionError(f"{user.username} was served more than {ITEMS} items")

    started = time.monotonic()
    errors = run_threads(annotate, [(u, i) for i, u in enumerate(users)])
    elapsed = time.monotonic() - started
    print(
        f"\n50 annotators via services: {ITEMS * VOTES} annotations in {elapsed:.2f}s; conflicts {sum(conflicts.values())}"
    )
    assert_no_overfill_no_doubles(project, VOTES)
    assert errors == [], errors[0]
    assert sum(done.values()) == ITEMS * VOTES
    assert_every_item_completed(project, VOTES)


def http_annotator(project, tokens: dict[int, str], bases: list[str], statuses: Counter):
    """An annotator's loop over HTTP (next, then submit) until `next` has nothing left, for
    run_threads with (user, index). With several web servers in `bases`, each `next` goes
    to one and its `submit` to the next one. Counts every answer in `statuses`, and which
    server took it ("on <base>")."""
    import requests

    lock = threading.Lock()

    def annotate(user, index):
        with requests.Session() as http:
            http.headers["Authorization"] = f"Token {tokens[user.pk]}"
            for step in range(ITEMS + 5):
                first, second = bases[(index + step) % len(bases)], bases[(index + step + 1) % len(bases)]
                got = http.get(f"{first}/api/projects/{project.slug}/next/", timeout=60)
                with lock:
                    statuses[f"next {got.status_code}"] += 1
                    statuses[f"next on {first}"] += 1
                if got.status_code == 204:
                    return
                assert got.status_code == 200, (got.status_code, got.text[:500])
                body = got.json()
                assert set(body["item"]["payload"]) == {"premise", "hypothesis"}
                sent = http.post(
                    f"{second}/api/assignments/{body['assignment']}/submit/",
                    json={"value": {"label": LABELS[(index + step) % 3]}},
                    timeout=60,
                )
                with lock:
                    statuses[f"submit {sent.status_code}"] += 1
                    statuses[f"submit on {second}"] += 1
                assert sent.status_code in (201, 409), (sent.status_code, sent.text[:500])
            raise AssertionError(f"{user.username} was served more than {ITEMS} items")

    return annotate


def test_fifty_annotators_through_http(live_server, make_user):
    from rest_framework.authtoken.models import Token

    project, users = make_crowd(make_user, annotators=THREADS, items=ITEMS, slug="crowd-http")
    tokens = {u.pk: Token.objects.create(user=u).key for u in users}
    statuses: Counter = Counter()
    annotate = http_annotator(project, tokens, [live_server.url], statuses)

    started = time.monotonic()
    errors = run_threads(annotate, [(u, i) for i, u in enumerate(users)])
    elapsed = time.monotonic() - started
    print(f"\n50 annotators via HTTP: {dict(statuses)} in {elapsed:.2f}s")
    assert_no_overfill_no_doubles(project, VOTES)
    assert errors == [], errors[0]
    assert statuses["submit 201"] == ITEMS * VOTES
    assert_every_item_completed(project, VOTES)


def test_same_annotator_calling_next_from_five_threads_gets_one_claim(transactional_db, make_user):
    from annotation.models import Assignment
    from annotation.services.assignments import assignment_next_for_annotator

    project, (user,) = make_crowd(make_user, annotators=1, items=ITEMS, slug="crowd-one")
    for attempt in range(5):
        got: list[int] = []

        def ask():
            assignment = assignment_next_for_annotator(user=user, slug=project.slug)
            got.append(assignment.pk)

        errors = run_threads(ask, [()] * 5)
        assert errors == [], errors[0]
        assert len(got) == 5 and len(set(got)) == 1, got
        claimed = Assignment.objects.filter(project=project, annotator=user, status="claimed")
        assert list(claimed.values_list("pk", flat=True)) == [got[0]]
        claimed.update(status="expired")  # next attempt starts without an open claim


def test_two_simultaneous_submits_of_one_assignment(live_server, make_user):
    import requests
    from rest_framework.authtoken.models import Token

    from annotation.models import Annotation
    from annotation.services.assignments import assignment_next_for_annotator

    project, (user,) = make_crowd(make_user, annotators=1, items=10, slug="crowd-twice")
    token = Token.objects.create(user=user).key
    for attempt in range(5):
        assignment = assignment_next_for_annotator(user=user, slug=project.slug)
        codes: list[int] = []

        def submit():
            response = requests.post(
                f"{live_server.url}/api/assignments/{assignment.pk}/submit/",
                json={"value": {"label": "neutral"}},
                headers={"Authorization": f"Token {token}"},
                timeout=30,
            )
            codes.append(response.status_code)

        errors = run_threads(submit, [(), ()])
        assert errors == [], errors[0]
        assert sorted(codes) == [201, 409], codes
        assert Annotation.objects.filter(assignment=assignment).count() == 1


ADAPTIVE = {"consensus_k": 4, "consensus_n": 5, "overlap_min": 2, "overlap_max": 6}


def test_fifty_annotators_with_adaptive_overlap(transactional_db, make_user):
    """Adaptive overlap under 50 concurrent annotators: each item first gets overlap_min
    votes, then one more at a time exactly while the rule asks for it; never more votes or
    live claims than the item needs at that moment, never more than overlap_max, never
    one annotator twice."""
    from annotation.errors import Conflict
    from annotation.metrics.aggregation import needs_another_vote
    from annotation.models import Annotation, Item
    from annotation.services.assignments import annotation_submit, assignment_next_for_annotator

    project, users = make_crowd(make_user, annotators=THREADS, items=ITEMS, slug="adaptive", settings=ADAPTIVE)
    high = ADAPTIVE["overlap_max"]

    def annotate(user, index):
        # One annotator in three disagrees with the reference label: items split and ask for more.
        label = "neutral" if index % 3 == 0 else "entailment"
        for _step in range(ITEMS + 5):
            assignment = assignment_next_for_annotator(user=user, slug=project.slug)
            if assignment is None:
                return
            try:
                annotation_submit(user=user, assignment_id=assignment.pk, value={"label": label})
            except Conflict:
                pass
        raise AssertionError(f"{user.username} was served more than {ITEMS} items")

    errors = run_threads(annotate, [(u, i) for i, u in enumerate(users)])
    assert errors == [], errors[0]
    assert_no_overfill_no_doubles(project, high)
    grew = 0
    for item in Item.objects.filter(project=project):
        assert item.status != "open", "an item was left waiting for a vote"
        labels = list(
            Annotation.objects.filter(item=item, round=1).order_by("id").values_list("value__label", flat=True)
        )
        assert len(labels) == (item.votes_target or ADAPTIVE["overlap_min"]), "votes beyond what the item needed"
        grew += len(labels) > ADAPTIVE["overlap_min"]
        # The engine asked for each vote past overlap_min, and stopped where the rule says.
        for count in range(ADAPTIVE["overlap_min"], len(labels) + 1):
            asked = needs_another_vote([*labels[:count], "entailment"], k=4, votes_left=high - count)
            assert asked is (count < len(labels)), (item.external_id, labels, count)
    assert grew, "no item asked for more votes: the test does not exercise adaptive overlap"
