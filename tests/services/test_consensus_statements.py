"""What the rounds' worker spends on a closed round of a consensus kind: the statements of
one consensus run (its decision, and the aggregation request it makes itself once the
decision commits, instead of queueing a second task to make it), and that a request
that fails there is handed to that task. Texts are our own."""

import pytest
from django.db import OperationalError, connection
from django.test.utils import CaptureQueriesContext

from tests.tasks.test_consensus_worker import new_item, vote_directly

pytestmark = pytest.mark.django_db(transaction=True)

# BEGIN, the item's lock with its project and whether its round has an outcome, the votes,
# the outcome (in a savepoint), the ledger's standing decision, its new decision, the
# item's gold and status, its open claims, COMMIT; then the baseline model's check of the
# project, and the aggregation request: BEGIN, the project's lock, its change counter, the
# changed item, whether a job is queued, COMMIT.
STATEMENTS_PER_CLOSED_ROUND = 18


@pytest.fixture
def closed_rounds(make_user, monkeypatch):
    """A 2-of-3 nli_relabel project with three items whose votes are in, the first one
    decided already (its aggregation job queued: the others' requests are debounced);
    the names of the tasks published from then on."""
    from annotation.models import Membership
    from annotation.services import aggregation, tasks_queue
    from annotation.services.consensus import consensus_compute_for_item
    from annotation.services.projects import project_create

    admin = make_user("cs-admin", staff=True)
    project = project_create(
        actor=admin, slug="cs-rounds", name="Closed rounds", kind="nli_relabel", language="fa",
        settings={"consensus_k": 2, "consensus_n": 3},
    )  # fmt: skip
    voters = [make_user(f"cs-{n}") for n in range(2)]
    for user in voters:
        Membership.objects.create(project=project, user=user, role="annotator", status="active")
    items = [new_item(project, f"cs{n}") for n in range(3)]
    for item in items:
        vote_directly(item, voters, ["entailment", "entailment"])
    published = []

    def publish(task_name, *args):
        published.append((task_name, *args))
        return True

    monkeypatch.setattr(tasks_queue, "enqueue_rollback_unsafe", publish)
    monkeypatch.setattr(aggregation, "enqueue_rollback_unsafe", publish)
    consensus_compute_for_item(items[0].pk)
    published.clear()
    return project, items, published


def test_a_closed_round_is_decided_and_its_aggregation_asked_for_in_one_run(closed_rounds):
    from annotation.models import AggregationChange, Decision, Item, Project
    from annotation.services.consensus import consensus_compute_for_item

    project, items, published = closed_rounds
    requested = Project.objects.get(pk=project.pk).aggregation_requested
    with CaptureQueriesContext(connection) as run:
        outcome = consensus_compute_for_item(items[1].pk)
    assert outcome is not None and outcome.gold == "entailment"
    assert Item.objects.get(pk=items[1].pk).status == "accepted"
    assert Decision.objects.filter(item=items[1]).count() == 1
    # Asked for here: the change is recorded and counted, and no task was queued to ask.
    assert AggregationChange.objects.filter(project=project, item_id=items[1].pk).exists()
    assert Project.objects.get(pk=project.pk).aggregation_requested == requested + 1
    assert [name for name, *_ in published if name == "annotation.tasks.request_aggregation"] == []
    assert len(run) == STATEMENTS_PER_CLOSED_ROUND, "\n".join(query["sql"][:160] for query in run.captured_queries)

    # Run again (a redelivery): the lock reads that the round is decided, and its stored
    # outcome is the answer.
    with CaptureQueriesContext(connection) as again:
        assert consensus_compute_for_item(items[1].pk) == outcome
    assert len(again) == 4  # BEGIN, the lock, the outcome, COMMIT
    assert Decision.objects.filter(item=items[1]).count() == 1


def test_a_request_that_fails_in_the_run_is_queued_as_its_task(closed_rounds, monkeypatch):
    from annotation.models import Item
    from annotation.services import aggregation
    from annotation.services.consensus import consensus_compute_for_item

    project, items, published = closed_rounds

    def unreachable(*args, **kwargs):
        raise OperationalError("the server closed the connection")

    monkeypatch.setattr(aggregation, "aggregation_request", unreachable)
    consensus_compute_for_item(items[2].pk)
    assert Item.objects.get(pk=items[2].pk).status == "accepted"
    assert ("annotation.tasks.request_aggregation", project.pk, [items[2].pk]) in published
