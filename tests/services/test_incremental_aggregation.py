"""Incremental aggregation: on a project above MASHOV_AGGREGATION_INCREMENTAL_ITEMS, a run
after a few rounds changed reads and writes only those items, and gives what a full
recompute gives — exactly for k-of-n and majority (labels, confidences, the annotators'
agreement counts and competences), and for Dawid-Skene and MACE each changed item's
posterior under the parameters of the last full run. Votes are written directly (as the
engine stores them), the changes requested as the services that close a round request them."""

import random

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

pytestmark = pytest.mark.django_db

LABELS = ("entailment", "neutral", "contradiction")
ANNOTATORS = 6
AGREEMENT = ("k_of_n", "majority")
_counter = {"project": 0}


@pytest.fixture(autouse=True)
def small_threshold(settings):
    settings.MASHOV_AGGREGATION_INCREMENTAL_ITEMS = 20
    settings.MASHOV_AGGREGATION_FULL_SHARE = 0.5


def build(make_user, items: int, *, seed: int = 0, aggregation: str = "k_of_n"):
    """An nli_relabel project of `items` items, three votes each from six annotators with a
    skill each; every fifth item's round still open with one vote."""
    from annotation.models import Annotation, Assignment, Item, Membership
    from annotation.services.projects import project_create

    rng = random.Random(seed)
    _counter["project"] += 1
    slug = f"inc-{_counter['project']}"
    sup = make_user(f"{slug}-sup", staff=True)
    project = project_create(
        actor=sup, slug=slug, name=slug, kind="nli_relabel", language="he",
        settings={"consensus_k": 2, "consensus_n": 3, "aggregation": aggregation, "revision_rounds": 0},
    )  # fmt: skip
    people = [make_user(f"{slug}-a{index}") for index in range(ANNOTATORS)]
    Membership.objects.bulk_create(
        Membership(project=project, user=user, role="annotator", status="active") for user in people
    )
    truth = [rng.choice(LABELS) for _ in range(items)]
    rows = Item.objects.bulk_create(
        Item(project=project, external_id=f"i{index}", payload={"premise": "הנחה", "hypothesis": "השערה"},
             reference_label=truth[index], position=index,
             status=Item.Status.OPEN if index % 5 == 4 else Item.Status.ACCEPTED)
        for index in range(items)
    )  # fmt: skip
    now = timezone.now()
    for item, label in zip(rows, truth):
        voters = rng.sample(people, 1 if item.status == Item.Status.OPEN else 3)
        for person in voters:
            skill = 0.6 + 0.07 * people.index(person)
            vote(project, item, person, label if rng.random() < skill else rng.choice(LABELS), now=now)
    assert (
        Annotation.objects.filter(item__project=project).count() == Assignment.objects.filter(project=project).count()
    )
    return project, rows, people


def vote(project, item, person, label: str, *, now=None):
    """`person`'s vote on the item's current round: a new one, or their earlier one edited."""
    from annotation.models import Annotation, Assignment

    now = now or timezone.now()
    mine = Annotation.objects.filter(item=item, annotator=person, round=item.round)
    if mine.update(value={"label": label}, edited_at=now):
        return
    claim = Assignment.objects.create(
        project=project, item=item, annotator=person, round=item.round, status="submitted",
        claimed_at=now, expires_at=now, submitted_at=now,
    )  # fmt: skip
    Annotation.objects.create(assignment=claim, item=item, annotator=person, round=item.round, value={"label": label})


def agreement_figures(project):
    """What k-of-n and majority stored: per item and per annotator."""
    from annotation.models import AnnotatorCompetence, ItemAggregate

    items = sorted(
        ItemAggregate.objects.filter(item__project=project, method__in=AGREEMENT).values_list(
            "item_id", "method", "round", "label", "confidence", "contributions"
        )
    )
    annotators = sorted(
        AnnotatorCompetence.objects.filter(project=project, method__in=AGREEMENT).values_list(
            "annotator_id", "method", "competence", "agreed", "counted"
        )
    )
    return items, annotators


def pool_rows(project):
    from annotation.models import ItemAggregate

    return {
        (item_id, method): (label, confidence, computed_at)
        for item_id, method, label, confidence, computed_at in ItemAggregate.objects.filter(
            item__project=project, method__in=("dawid_skene", "mace")
        ).values_list("item_id", "method", "label", "confidence", "computed_at")
    }


def apply(project, rows, people, changes) -> set[int]:
    """Change some items as annotators, a supervisor's reopen and a round's close would;
    the ids of the items changed."""
    from annotation.models import Item

    changed = set()
    for position, action, label in changes:
        item = rows[position % len(rows)]
        item.refresh_from_db()
        if action == "vote":
            vote(project, item, people[position % ANNOTATORS], label)
        elif action == "reopen":
            Item.objects.filter(pk=item.pk).update(status=Item.Status.OPEN, round=item.round + 1)
        elif action == "close":
            Item.objects.filter(pk=item.pk).update(status=Item.Status.COMPLETE)
        changed.add(item.pk)
    return changed


changes_strategy = st.lists(
    st.tuples(st.integers(0, 59), st.sampled_from(["vote", "reopen", "close"]), st.sampled_from(LABELS)),
    min_size=1,
    max_size=8,
)


@hypothesis_settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(changes=changes_strategy, seed=st.integers(0, 3))
def test_an_incremental_run_equals_a_full_recompute(make_user, changes, seed):
    from annotation.services.aggregation import aggregation_compute_for_project, aggregation_request

    project, rows, people = build(make_user, 60, seed=seed)
    assert aggregation_compute_for_project(project)["full"] is True  # the first run reads everything
    changed = apply(project, rows, people, changes)
    aggregation_request(project.pk, item_ids=sorted(changed))
    assert aggregation_compute_for_project(project)["full"] is False
    incremental = agreement_figures(project)
    assert aggregation_compute_for_project(project, full=True)["full"] is True
    assert incremental == agreement_figures(project)


def test_an_incremental_run_touches_only_the_changed_items_whatever_the_size(make_user):
    from annotation.kinds.registry import get_kind
    from annotation.metrics.aggregation import posterior_from_competence
    from annotation.models import AggregationChange, AnnotatorCompetence, ItemAggregate
    from annotation.services.aggregation import aggregation_compute_for_project, aggregation_request
    from tests.services.vote_reference import project_votes

    queries = []
    for size in (100, 300):
        project, rows, people = build(make_user, size, seed=size)
        aggregation_compute_for_project(project)
        before = pool_rows(project)
        started = timezone.now()
        changed = apply(project, rows, people, [(0, "vote", "neutral"), (1, "vote", "contradiction")])
        aggregation_request(project.pk, item_ids=sorted(changed))
        with CaptureQueriesContext(connection) as captured:
            assert aggregation_compute_for_project(project)["full"] is False
        queries.append(len(captured))
        # Rows written: the changed items' four aggregates, nothing else.
        touched = ItemAggregate.objects.filter(item__project=project, computed_at__gte=started)
        assert sorted(set(touched.values_list("item_id", flat=True))) == sorted(changed)
        assert touched.count() == 4 * len(changed)
        assert not AggregationChange.objects.filter(project=project).exists()  # consumed
        # Dawid-Skene and MACE: the other items keep their rows; a changed one has its
        # posterior under the parameters the full run stored.
        after = pool_rows(project)
        assert {key: value for key, value in after.items() if key[0] not in changed} == {
            key: value for key, value in before.items() if key[0] not in changed
        }
        votes, _items = project_votes(project, get_kind("nli_relabel"), author_votes=True, item_ids=sorted(changed))
        for method in ("dawid_skene", "mace"):
            stored = {
                annotator: (competence, confusion)
                for annotator, competence, confusion in AnnotatorCompetence.objects.filter(
                    project=project, method=method
                ).values_list("annotator_id", "competence", "confusion")
            }
            median = sorted(competence for competence, _ in stored.values())[len(stored) // 2]
            for item_id in changed:
                cast = [(label, *(stored.get(who) or (None, None))) for key, who, label in votes if key == item_id]
                posterior = posterior_from_competence(cast, LABELS, default_competence=median)
                label, confidence, _at = after[(item_id, method)]
                assert confidence == pytest.approx(max(posterior.values()))
                assert posterior[label] == max(posterior.values())
    # The same statements at three times the items.
    assert queries[0] == queries[1]


def test_a_request_without_items_and_a_large_change_run_in_full(make_user):
    from annotation.services.aggregation import aggregation_compute_for_project, aggregation_request

    project, rows, people = build(make_user, 60)
    aggregation_compute_for_project(project)
    aggregation_request(project.pk)  # names no item
    assert aggregation_compute_for_project(project)["full"] is True
    # More than MASHOV_AGGREGATION_FULL_SHARE (a half here) of the items since the last full run.
    changed = apply(project, rows, people, [(index, "vote", "neutral") for index in range(31)])
    aggregation_request(project.pk, item_ids=sorted(changed))
    assert aggregation_compute_for_project(project)["full"] is True
    changed = apply(project, rows, people, [(0, "vote", "contradiction")])
    aggregation_request(project.pk, item_ids=sorted(changed))
    assert aggregation_compute_for_project(project)["full"] is False


def test_a_small_project_always_runs_in_full(make_user, settings):
    from annotation.services.aggregation import aggregation_compute_for_project, aggregation_request

    settings.MASHOV_AGGREGATION_INCREMENTAL_ITEMS = 5000
    project, rows, people = build(make_user, 30)
    aggregation_compute_for_project(project)
    changed = apply(project, rows, people, [(0, "vote", "neutral")])
    aggregation_request(project.pk, item_ids=sorted(changed))
    assert aggregation_compute_for_project(project)["full"] is True


def test_a_deciding_item_is_decided_by_an_incremental_run_through_the_ledger(make_user):
    from annotation.models import Decision, Item
    from annotation.services.aggregation import aggregation_compute_for_project, aggregation_request

    project, rows, people = build(make_user, 60, aggregation="dawid_skene")
    project.settings = {**project.settings, "confidence_target": 0.5}
    project.save(update_fields=["settings"])
    aggregation_compute_for_project(project)
    item = rows[4]  # an open round with one vote: two more, and it waits for the pool method
    item.refresh_from_db()
    for person in people:
        if not item.annotations.filter(annotator=person).exists() and item.annotations.count() < 3:
            vote(project, item, person, "neutral")
    Item.objects.filter(pk=item.pk).update(status=Item.Status.DECIDING)
    aggregation_request(project.pk, item_ids=[item.pk])
    result = aggregation_compute_for_project(project)
    assert result["full"] is False and result["decided"] == 1
    item.refresh_from_db()
    assert item.status != Item.Status.DECIDING
    assert Decision.objects.filter(item=item, method="dawid_skene", round=item.round).exists()
