"""Skips and edits racing the engine and the consensus step on PostgreSQL, with real
transactions (annotation/services/annotator_work.py). Threads share nothing but the database."""

from collections import Counter

import pytest
from django.db import connection

from tests.services.test_concurrency import assert_no_overfill_no_doubles, make_crowd, run_threads

pytestmark = [pytest.mark.postgres]


def test_skips_racing_claims_never_overfill_and_never_come_back(transactional_db, make_user):
    """Ten annotators at once, each skipping its first and fifth item: no item gets more
    claims than slots, nobody is served an item they skipped, and skipped items still reach
    others, so every item is completed."""
    from annotation.errors import Conflict
    from annotation.services.annotator_work import assignment_skip
    from annotation.services.assignments import annotation_submit, assignment_next_for_annotator

    project, users = make_crowd(make_user, annotators=10, items=12, slug="skippers")
    served: dict[int, list[int]] = {user.pk: [] for user in users}

    def annotate(user):
        for step in range(40):
            assignment = assignment_next_for_annotator(user=user, slug=project.slug)
            if assignment is None:
                return
            served[user.pk].append(assignment.item_id)
            if step in (0, 4):
                assignment_skip(user=user, assignment_id=assignment.pk)
                continue
            try:
                annotation_submit(user=user, assignment_id=assignment.pk, value={"label": "entailment"})
            except Conflict:
                pass
        raise AssertionError(f"{user.username} was served more than 40 items")

    errors = run_threads(annotate, [(u,) for u in users])
    assert errors == [], errors[0]
    # An annotator stops at the first "nothing to claim", which may come while another still
    # holds a slot they then skip: the race over, whoever can still take a slot takes it,
    # one at a time, so a skipped slot must reach them.
    for user in users:
        while (assignment := assignment_next_for_annotator(user=user, slug=project.slug)) is not None:
            served[user.pk].append(assignment.item_id)
            annotation_submit(user=user, assignment_id=assignment.pk, value={"label": "entailment"})
    assert_no_overfill_no_doubles(project, 4)
    for user_id, items in served.items():
        assert len(items) == len(set(items)), f"user {user_id} was served an item twice: {items}"
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT count(*) FROM annotation_assignment s JOIN annotation_annotation a
               ON a.item_id = s.item_id AND a.annotator_id = s.annotator_id AND a.round = s.round
               WHERE s.project_id = %s AND s.status = 'skipped'""",
            [project.pk],
        )
        assert cursor.fetchone()[0] == 0, "an annotator labeled an item they skipped"
        cursor.execute(
            """SELECT i.id, count(a.id) FROM annotation_item i LEFT JOIN annotation_annotation a ON a.item_id = i.id
               WHERE i.project_id = %s GROUP BY i.id HAVING count(a.id) <> 4""",
            [project.pk],
        )
        assert cursor.fetchall() == [], "items left short of votes although others could take the skipped slots"


@pytest.mark.parametrize("path", ["per-item", "batch"])
def test_an_edit_racing_the_decision_is_either_counted_or_refused(transactional_db, make_user, path):
    """For each of many complete items, one annotator changes their label while the consensus
    step decides the round. Whichever takes the item's row lock first wins: an edit that
    succeeded is in the stored outcome, a refused one (409, round decided) left the value as
    it was, and no outcome ever disagrees with the values stored."""
    from django.utils import timezone

    from annotation.errors import Conflict
    from annotation.models import Annotation, Assignment, ConsensusOutcome, Item, Membership
    from annotation.services.annotator_work import annotation_edit
    from annotation.services.consensus import consensus_compute_batch, consensus_compute_for_item
    from annotation.services.projects import project_create

    admin = make_user("race-admin", staff=True)
    project = project_create(actor=admin, slug=f"race-{path}", name="Race", kind="nli_relabel", language="he",
                             settings={"consensus_n": 3, "consensus_k": 2})  # fmt: skip
    voters = [make_user(f"race-{path}-{i}") for i in range(3)]
    for user in voters:
        Membership.objects.create(project=project, user=user, role="annotator", status="active")
    rounds = 30
    items = Item.objects.bulk_create(
        Item(project=project, external_id=f"r{i}", payload={"premise": f"הנחה {i}", "hypothesis": "השערה"}, status="complete",
             position=i)
        for i in range(rounds)
    )  # fmt: skip
    now = timezone.now()
    for item in items:
        for user, value in zip(voters, ("neutral", "entailment", "neutral")):
            assignment = Assignment.objects.create(project=project, item=item, annotator=user, round=1, status="submitted",
                                                   claimed_at=now, expires_at=now, submitted_at=now)  # fmt: skip
            Annotation.objects.create(assignment=assignment, item=item, annotator=user, round=1, value={"label": value})
    outcomes: dict[int, str] = {}

    def edit(item_id):
        annotation = Annotation.objects.get(item_id=item_id, annotator=voters[0])
        try:
            annotation_edit(user=voters[0], annotation_id=annotation.pk, value={"label": "entailment"})
            outcomes[item_id] = "edited"
        except Conflict:
            outcomes[item_id] = "refused"

    def decide(item_id):
        if path == "per-item":
            consensus_compute_for_item(item_id)
        else:
            consensus_compute_batch([item_id])

    for item in items:
        errors = run_threads(lambda f, item_id: f(item_id), [(edit, item.pk), (decide, item.pk)])
        assert errors == [], errors[0]
    # the batch path skips an item an edit holds: the sweep's next pass decides it
    consensus_compute_batch([item.pk for item in items])
    for item in Item.objects.filter(project=project):
        outcome = ConsensusOutcome.objects.get(item=item, round=1)
        values = Counter(v["label"] for v in Annotation.objects.filter(item=item).values_list("value", flat=True))
        assert outcome.votes == dict(values), (item.external_id, outcomes[item.pk], outcome.votes, values)
        assert item.status == "accepted"
        assert item.gold_label == ("entailment" if outcomes[item.pk] == "edited" else "neutral")
    print(f"\nedit vs decision ({path}): {Counter(outcomes.values())}")
