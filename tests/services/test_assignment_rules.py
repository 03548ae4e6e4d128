"""The assignment engine's rules, through its services (docs/api.md "Annotating").

Runs on SQLite and PostgreSQL: nothing here needs concurrency, only the rules."""

from datetime import timedelta

import pytest
from django.db import IntegrityError
from django.utils import timezone

from annotation.errors import Conflict, NotFound, PermissionDenied
from annotation.models import Annotation, Assignment, Item, Membership
from annotation.services.assignments import annotation_submit, assignment_next_for_annotator
from annotation.services.projects import project_create

pytestmark = pytest.mark.django_db

LABEL = {"label": "neutral"}


@pytest.fixture
def make_project(make_user):
    """A project with `annotators` active annotators; returns (project, [users])."""
    counter = {"n": 0}

    def make(*, annotators: int = 3, kind: str = "nli_relabel", settings: dict | None = None):
        counter["n"] += 1
        n = counter["n"]
        admin = make_user(f"admin{n}", staff=True)
        project = project_create(
            actor=admin, slug=f"rules-{n}", name=f"Rules {n}", kind=kind, language="he", settings=settings
        )
        users = []
        for i in range(annotators):
            user = make_user(f"p{n}-ann{i}")
            Membership.objects.create(project=project, user=user, role="annotator", status="active")
            users.append(user)
        return project, users

    return make


def add_items(
    project, count: int, *, prefix: str = "i", group=None, reference_label: str = "", author=None, status="open"
):
    items = []
    for i in range(count):
        items.append(
            Item.objects.create(
                project=project,
                external_id=f"{prefix}{i}",
                payload={"premise": f"פרמיסה {prefix}{i}", "hypothesis": "השערה"},
                reference_label=reference_label,
                group=group(i) if callable(group) else (group or ""),
                author=author,
                status=status,
                position=i,
            )
        )
    return items


def draw(user, project):
    return assignment_next_for_annotator(user=user, slug=project.slug)


def label_everything(user, project, limit: int = 1000) -> list[Assignment]:
    """next → submit until nothing is left; the assignments in the order they were served."""
    served = []
    for _ in range(limit):
        assignment = draw(user, project)
        if assignment is None:
            return served
        served.append(assignment)
        annotation_submit(user=user, assignment_id=assignment.pk, value=LABEL)
    raise AssertionError("the engine kept serving items")


def expire(assignment):
    Assignment.objects.filter(pk=assignment.pk).update(
        claimed_at=timezone.now() - timedelta(hours=2), expires_at=timezone.now() - timedelta(seconds=1)
    )


# --- never the caller's own item ---------------------------------------------------------


def test_never_serves_the_callers_own_item(make_project):
    project, (author, other) = make_project(annotators=2, settings={"consensus_n": 10, "consensus_k": 8})
    own = add_items(project, 5, prefix="own", author=author)
    foreign = add_items(project, 5, prefix="foreign")
    served = label_everything(author, project)
    assert {a.item_id for a in served} == {item.pk for item in foreign}
    assert not {a.item_id for a in served} & {item.pk for item in own}
    # The other annotator may label the author's items.
    assert {a.item_id for a in label_everything(other, project)} == {item.pk for item in own + foreign}


def test_only_own_items_left_means_nothing(make_project):
    project, (author,) = make_project(annotators=1)
    add_items(project, 3, author=author)
    assert draw(author, project) is None


# --- never an item already labeled in this round -----------------------------------------


def test_never_serves_an_item_the_caller_labeled_in_this_round(make_project):
    project, (ann,) = make_project(annotators=1, settings={"consensus_n": 10, "consensus_k": 8})
    items = add_items(project, 4)
    served = label_everything(ann, project)
    assert sorted(a.item_id for a in served) == sorted(item.pk for item in items)  # each exactly once
    assert draw(ann, project) is None
    # A new round of one item makes it assignable to the same annotator again, once.
    Item.objects.filter(pk=items[0].pk).update(round=2)
    again = draw(ann, project)
    assert again is not None and again.item_id == items[0].pk and again.round == 2
    annotation_submit(user=ann, assignment_id=again.pk, value=LABEL)
    assert draw(ann, project) is None


# --- only items short of votes -----------------------------------------------------------


def test_votes_needed_counts_the_reference_label_as_one_vote(make_project):
    project, users = make_project(annotators=5, settings={"consensus_n": 3, "consensus_k": 2})
    (with_reference,) = add_items(project, 1, prefix="ref", reference_label="entailment")
    (without_reference,) = add_items(project, 1, prefix="plain")
    for user in users:
        label_everything(user, project)
    votes = {
        item.pk: Annotation.objects.filter(item=item, round=1).count() for item in (with_reference, without_reference)
    }
    assert votes == {with_reference.pk: 2, without_reference.pk: 3}


def test_open_claims_hold_slots(make_project):
    project, users = make_project(annotators=4, settings={"consensus_n": 3, "consensus_k": 2})
    (item,) = add_items(project, 1, reference_label="neutral")  # needs 2
    first, second = draw(users[0], project), draw(users[1], project)
    assert first.item_id == second.item_id == item.pk
    assert draw(users[2], project) is None  # both slots are claimed, nothing submitted yet
    annotation_submit(user=users[0], assignment_id=first.pk, value=LABEL)
    assert draw(users[2], project) is None  # one submitted + one claimed = full


def test_label_test_kind_does_not_count_the_gold(make_project):
    project, users = make_project(annotators=4, kind="label_test", settings={"labels_per_item": 2})
    (item,) = add_items(project, 1, reference_label="entailment")
    for user in users:
        label_everything(user, project)
    assert Annotation.objects.filter(item=item).count() == 2


# --- open claims -------------------------------------------------------------------------


def test_open_claim_is_returned_again_until_submitted(make_project):
    project, (ann,) = make_project(annotators=1, settings={"consensus_n": 10, "consensus_k": 8})
    add_items(project, 5)
    first = draw(ann, project)
    for _ in range(5):
        assert draw(ann, project).pk == first.pk
    assert Assignment.objects.filter(annotator=ann, status="claimed").count() == 1
    annotation_submit(user=ann, assignment_id=first.pk, value=LABEL)
    second = draw(ann, project)
    assert second.pk != first.pk and second.item_id != first.item_id


def test_expired_claim_is_not_returned_and_frees_its_slot(make_project):
    project, (a, b, c) = make_project(annotators=3, settings={"consensus_n": 2, "consensus_k": 2})
    (item,) = add_items(project, 1, reference_label="neutral")  # needs exactly 1
    claim = draw(a, project)
    assert draw(b, project) is None
    expire(claim)
    taken = draw(b, project)
    assert taken is not None and taken.item_id == item.pk
    assert draw(c, project) is None


def test_late_submit_of_expired_claim_is_refused_when_the_slot_was_given_away(make_project):
    project, (a, b) = make_project(annotators=2, settings={"consensus_n": 2, "consensus_k": 2})
    (item,) = add_items(project, 1, reference_label="neutral")  # needs exactly 1
    claim = draw(a, project)
    expire(claim)
    taken = draw(b, project)
    assert taken.item_id == item.pk
    with pytest.raises(Conflict):
        annotation_submit(user=a, assignment_id=claim.pk, value=LABEL)
    assert not Annotation.objects.filter(item=item).exists()
    annotation_submit(user=b, assignment_id=taken.pk, value=LABEL)
    item.refresh_from_db()
    assert item.status == "complete"
    assert Annotation.objects.filter(item=item).count() == 1


def test_late_submit_of_expired_claim_is_taken_while_a_slot_is_free(make_project):
    project, (a, b) = make_project(annotators=2, settings={"consensus_n": 2, "consensus_k": 2})
    (item,) = add_items(project, 1, reference_label="neutral")  # needs exactly 1
    claim = draw(a, project)
    expire(claim)
    annotation = annotation_submit(user=a, assignment_id=claim.pk, value=LABEL)
    assert annotation.item_id == item.pk
    item.refresh_from_db()
    assert item.status == "complete"
    assert draw(b, project) is None


def test_late_submit_after_the_slot_was_given_away_and_freed_again(make_project):
    """a's claim expires, b takes the slot, b's claim expires too: the slot is free, a's late submit counts."""
    project, (a, b) = make_project(annotators=2, settings={"consensus_n": 2, "consensus_k": 2})
    add_items(project, 1, reference_label="neutral")
    claim = draw(a, project)
    expire(claim)
    taken = draw(b, project)
    expire(taken)
    annotation_submit(user=a, assignment_id=claim.pk, value=LABEL)
    with pytest.raises(Conflict):
        annotation_submit(user=b, assignment_id=taken.pk, value=LABEL)
    assert Annotation.objects.count() == 1


def test_late_submit_of_an_expired_claim_when_the_caller_reclaimed_the_same_item(make_project):
    """a's claim expires; a asks again and gets the same item (the only one); a then submits
    the OLD assignment id (a slow tab). The answer must be an annotation or a Conflict —
    never a database error — and the item must not end up with two votes of a."""
    project, (a,) = make_project(annotators=1, settings={"consensus_n": 5, "consensus_k": 4})
    (item,) = add_items(project, 1)
    old = draw(a, project)
    expire(old)
    new = draw(a, project)  # marks the old claim expired, claims the same item afresh
    assert new.pk != old.pk and new.item_id == item.pk
    try:
        annotation_submit(user=a, assignment_id=old.pk, value=LABEL)
    except Conflict:
        pass
    except IntegrityError as exc:  # pragma: no cover - the failure this test exists for
        pytest.fail(f"late submit of a re-claimed item raised a database error: {exc!r}")
    if Annotation.objects.filter(item=item, annotator=a).exists():
        with pytest.raises(Conflict):
            annotation_submit(user=a, assignment_id=new.pk, value=LABEL)
    else:
        annotation_submit(user=a, assignment_id=new.pk, value=LABEL)
    assert Annotation.objects.filter(item=item, annotator=a).count() == 1


# --- groups ------------------------------------------------------------------------------


def test_never_the_same_group_twice_in_a_row_when_another_is_available(make_project):
    project, users = make_project(annotators=6, settings={"consensus_n": 10, "consensus_k": 8})
    # Three groups of uneven size, so that the big group is left alone at the end.
    add_items(project, 30, prefix="g", group=lambda i: "q-big" if i < 18 else ("q-mid" if i < 26 else "q-small"))
    group_of = dict(Item.objects.filter(project=project).values_list("pk", "group"))
    checked = 0
    for user in users:
        served = label_everything(user, project)
        assert len(served) == 30
        remaining = {group: sum(1 for g in group_of.values() if g == group) for group in set(group_of.values())}
        previous = None
        for assignment in served:
            group = group_of[assignment.item_id]
            if previous is not None and group == previous:
                others = sum(count for g, count in remaining.items() if g != previous)
                assert others == 0, (
                    f"{user.username} got {group} twice in a row while {others} other-group items were left"
                )
                checked += 1
            remaining[group] -= 1
            previous = group
    assert checked > 0  # the tail of the big group was reached, so the exemption was exercised too


def test_group_alternation_with_two_groups_over_many_draws(make_project):
    project, users = make_project(annotators=8, settings={"consensus_n": 10, "consensus_k": 8})
    add_items(project, 20, group=lambda i: f"premise-{i % 2}")
    group_of = dict(Item.objects.filter(project=project).values_list("pk", "group"))
    for user in users:
        groups = [group_of[a.item_id] for a in label_everything(user, project)]
        assert len(groups) == 20
        # Equal halves: strict alternation is always possible, so it must happen.
        assert all(x != y for x, y in zip(groups, groups[1:])), groups


# --- disqualified members and other roles ------------------------------------------------


def test_disqualified_member_gets_permission_denied(make_project):
    project, (a, b) = make_project(annotators=2)
    add_items(project, 3)
    claim = draw(a, project)
    Membership.objects.filter(project=project, user=a).update(status="disqualified")
    with pytest.raises(PermissionDenied):
        draw(a, project)
    with pytest.raises(PermissionDenied):
        annotation_submit(user=a, assignment_id=claim.pk, value=LABEL)
    assert not Annotation.objects.filter(annotator=a).exists()
    assert draw(b, project) is not None


def test_non_annotators_and_outsiders_get_nothing(make_project, make_user):
    project, (a,) = make_project(annotators=1)
    add_items(project, 3)
    reviewer = make_user("a-reviewer")
    Membership.objects.create(project=project, user=reviewer, role="reviewer", status="active")
    with pytest.raises(PermissionDenied):
        draw(reviewer, project)
    with pytest.raises(NotFound):
        draw(make_user("stranger"), project)


def test_only_the_claimant_may_submit(make_project):
    project, (a, b) = make_project(annotators=2)
    add_items(project, 2)
    claim = draw(a, project)
    with pytest.raises(NotFound):
        annotation_submit(user=b, assignment_id=claim.pk, value=LABEL)
    annotation_submit(user=a, assignment_id=claim.pk, value=LABEL)
    with pytest.raises(Conflict):
        annotation_submit(user=a, assignment_id=claim.pk, value=LABEL)
    assert Annotation.objects.count() == 1


# --- completion and item status ----------------------------------------------------------


@pytest.mark.parametrize(("reference_label", "needed"), [("", 3), ("contradiction", 2)])
def test_item_becomes_complete_exactly_with_its_last_needed_vote(make_project, reference_label, needed):
    project, users = make_project(annotators=4, settings={"consensus_n": 3, "consensus_k": 2})
    (item,) = add_items(project, 1, reference_label=reference_label)
    claims = [draw(user, project) for user in users[:needed]]
    assert all(c is not None for c in claims)
    assert draw(users[needed], project) is None
    for number, (user, claim) in enumerate(zip(users, claims), start=1):
        item.refresh_from_db()
        assert item.status == "open", f"complete after {number - 1} of {needed} votes"
        annotation_submit(user=user, assignment_id=claim.pk, value=LABEL)
    item.refresh_from_db()
    assert item.status == "complete"
    assert Annotation.objects.filter(item=item).count() == needed
    assert draw(users[needed], project) is None


@pytest.mark.parametrize("status", ["complete", "accepted", "needs_revision", "removed"])
def test_items_that_are_not_open_are_never_served(make_project, status):
    project, users = make_project(annotators=2, settings={"consensus_n": 10, "consensus_k": 8})
    closed = add_items(project, 6, prefix="closed", status=status)
    (open_item,) = add_items(project, 1, prefix="open")
    for user in users:
        served = label_everything(user, project)
        assert [a.item_id for a in served] == [open_item.pk]
    assert not Assignment.objects.filter(item__in=closed).exists()


def test_submit_for_an_item_that_stopped_being_open_is_a_conflict(make_project):
    project, (a,) = make_project(annotators=1)
    (item,) = add_items(project, 1)
    claim = draw(a, project)
    Item.objects.filter(pk=item.pk).update(status="removed")
    with pytest.raises(Conflict):
        annotation_submit(user=a, assignment_id=claim.pk, value=LABEL)
    assert not Annotation.objects.exists()


@pytest.mark.parametrize("change", [{"status": "removed"}, {"status": "accepted"}, {"round": 2}])
def test_open_claim_on_an_item_that_stopped_taking_votes_is_not_served_again(make_project, change):
    """A supervisor closes (or re-rounds) an item while an annotator holds a claim on it.
    Serving that claim again would be serving a non-open item whose submit can only be a
    409: the annotator would be stuck on it until the claim expires (claim_ttl, 30 min)."""
    project, (a,) = make_project(annotators=1, settings={"consensus_n": 5, "consensus_k": 4})
    first, second = add_items(project, 2)
    claim = draw(a, project)
    closed = first if claim.item_id == first.pk else second
    other = second if closed is first else first
    Item.objects.filter(pk=closed.pk).update(**change)
    again = draw(a, project)
    assert again is not None, "nothing served although another open item is left"
    assert (again.item_id, again.round) != (closed.pk, claim.round), "the dead claim was served again"
    if "round" not in change:
        assert again.item_id == other.pk
    annotation_submit(user=a, assignment_id=again.pk, value=LABEL)
