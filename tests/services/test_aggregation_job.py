"""The aggregation job: on the real stack (PostgreSQL, Redis, the suite's Celery worker) the
completion of rounds requests it, it stores every method's aggregate and every annotator's
competence, the chosen method makes the gold, and the sweep requests what a debounced
request skipped; in-process, a second run writes the same rows and its figures are
crowd-kit's on the same votes. Items are pairs of the PhrasIS sample in shared/data."""

from datetime import timedelta
from pathlib import Path

import pytest

from tests.conftest import wait_until

DATA = Path(__file__).parents[3] / "shared" / "data" / "phrasis" / "PhrasIS.train.headlines.positives.txt"
METHODS = ("k_of_n", "majority", "dawid_skene", "mace")


def phrasis_pairs(count: int) -> list[tuple[str, str, str]]:
    from annotation.kinds.phrase.labels import canonical_label

    pairs = []
    for line in DATA.read_text(encoding="utf-8").split("\n"):
        cells = line.split("\t")
        if len(cells) == 7:
            pairs.append((cells[2], cells[3], canonical_label(cells[1])))
        if len(pairs) == count:
            break
    return pairs


def build(make_user, *, settings: dict, items: int = 12):
    from annotation.models import Item, Membership
    from annotation.services.projects import project_create

    admin = make_user("agg-admin", staff=True)
    project = project_create(
        actor=admin, slug="agg-job", name="Aggregation", kind="phrase_pair", language="en", settings=settings
    )
    users = []
    for name in ("agg-a", "agg-b", "agg-c", "agg-spam"):
        users.append(make_user(name))
        Membership.objects.create(project=project, user=users[-1], role="annotator", status="active")
    for index, (left, right, label) in enumerate(phrasis_pairs(items)):
        Item.objects.create(project=project, external_id=f"p{index}", payload={"left": left, "right": right},
                            reference_label=label, position=index)  # fmt: skip
    return project, users


def label_everything(project, users):
    """Each annotator labels every item through the engine: the three careful ones give the
    imported label but for one item each; the spammer always says UNRELATED."""
    from annotation.services.assignments import annotation_submit, assignment_next_for_annotator

    for position, user in enumerate(users):
        while (assignment := assignment_next_for_annotator(user=user, slug=project.slug)) is not None:
            item = assignment.item
            if user.username == "agg-spam":
                label = "UNRELATED"
            else:
                label = "SIMILAR" if item.position == position else item.reference_label
            annotation_submit(user=user, assignment_id=assignment.pk, value={"label": label})


def stored(project):
    from annotation.models import ItemAggregate

    return sorted(
        ItemAggregate.objects.filter(item__project=project).values_list(
            "item__external_id", "method", "round", "label", "confidence"
        )
    )


@pytest.mark.postgres
@pytest.mark.worker
def test_rounds_request_the_job_on_the_worker_and_gold_follows_dawid_skene(transactional_db, make_user, celery_worker):
    from django.db.models import F
    from django.utils import timezone

    from annotation.kinds.registry import get_kind
    from annotation.metrics.aggregation import aggregate
    from annotation.models import AnnotatorCompetence, Item, Job, Project
    from annotation.services.aggregation import aggregation_sweep
    from tests.services.vote_reference import project_votes

    project, users = build(make_user, settings={"aggregation": "dawid_skene", "labels_per_item": 4, "probe_rate": 0.0})
    label_everything(project, users)
    # The chosen pool method decides the rounds: they wait for the job, visibly.
    assert set(Item.objects.filter(project=project).values_list("status", flat=True)) <= {"deciding", "complete"}
    # The first completion requested a job; later ones within the debounce were folded in.
    wait_until(lambda: Job.objects.filter(project=project, kind="aggregation", status="done").exists(), timeout=120)
    # As if the debounce had passed: the periodic sweep requests the rest. Whether the first
    # run left changes behind depends on when the worker took it (on a busy machine every
    # round may have closed before it began); the sweep queues a run exactly when it did.
    Job.objects.filter(project=project, kind="aggregation").update(created_at=timezone.now() - timedelta(minutes=5))
    left = Project.objects.filter(pk=project.pk, aggregation_requested__gt=F("aggregation_done")).exists()
    assert aggregation_sweep() == int(left)
    wait_until(lambda: not Job.objects.filter(project=project, kind="aggregation").exclude(status="done").exists()
               and len(stored(project)) == 12 * len(METHODS), timeout=120)  # fmt: skip
    assert aggregation_sweep() == 0  # nothing left without an aggregate
    kind = get_kind("phrase_pair")
    votes, _items = project_votes(project, kind, author_votes=False)
    expected = aggregate(votes, "dawid_skene", labels=kind.labels)
    by_id = dict(Item.objects.filter(project=project).values_list("external_id", "pk"))
    for external_id, method, _round, label, confidence in stored(project):
        if method == "dawid_skene":
            assert (label, confidence) == pytest.approx(expected.items[by_id[external_id]])
    # The chosen method decided every round; the spammer's competence is the lowest.
    for item in Item.objects.filter(project=project):
        assert item.status == "complete"
        assert item.gold_label == expected.items[item.pk][0] == item.reference_label
        # A later run may replace its own earlier decision as more votes came in.
        assert set(item.decisions.values_list("method", flat=True)) == {"dawid_skene"}
    competence = dict(
        AnnotatorCompetence.objects.filter(project=project, method="dawid_skene").values_list(
            "annotator__username", "competence"
        )
    )
    assert set(competence) == {user.username for user in users}
    assert min(competence, key=competence.get) == "agg-spam"
    assert set(AnnotatorCompetence.objects.filter(project=project).values_list("method", flat=True)) == set(METHODS)


@pytest.mark.django_db
def test_a_second_run_writes_the_same_rows_and_k_of_n_keeps_the_kinds_gold(make_user, settings):
    from annotation.models import AnnotatorCompetence, Item
    from annotation.services.aggregation import aggregation_compute_for_project

    settings.CELERY_TASK_ALWAYS_EAGER = True
    project, users = build(make_user, settings={"labels_per_item": 3, "probe_rate": 0.0}, items=6)
    label_everything(project, users[:3])
    before_gold = dict(Item.objects.filter(project=project).values_list("pk", "gold_label"))
    first = aggregation_compute_for_project(project)
    rows = [row[:4] for row in stored(project)]
    competences = sorted(
        AnnotatorCompetence.objects.filter(project=project).values_list("annotator_id", "method", "competence")
    )
    second = aggregation_compute_for_project(project)
    assert first == second and first["items"] == 6 and first["gold_changed"] == 0
    assert [row[:4] for row in stored(project)] == rows
    assert (
        sorted(AnnotatorCompetence.objects.filter(project=project).values_list("annotator_id", "method", "competence"))
        == competences
    )
    # k-of-n (the default) leaves phrase pairs' own gold (set on submit) as it was.
    assert dict(Item.objects.filter(project=project).values_list("pk", "gold_label")) == before_gold
    # The k-of-n rule of phrase pairs: 2 of 3 agree on every item (one careful annotator
    # disagrees on one item each).
    assert all(row[3] for row in rows if row[1] == "k_of_n")


@pytest.mark.django_db
@pytest.mark.parametrize(("method", "outcome", "gold"), [("k_of_n", "failed", ""), ("majority", "accepted", "neutral")])
def test_nli_rounds_are_decided_by_the_chosen_per_round_method(make_user, method, outcome, gold):
    """3 of 5 (the author's label included) fail FarsTail's 4 of 5 but win a majority."""
    from django.utils import timezone

    from annotation.models import Annotation, Assignment, ConsensusOutcome, Item, Membership
    from annotation.services.consensus import consensus_compute_for_item
    from annotation.services.projects import project_create

    admin = make_user("nli-admin", staff=True)
    project = project_create(actor=admin, slug="nli-agg", name="N", kind="nli_relabel", language="fa",
                             settings={"aggregation": method, "revision_rounds": 0})  # fmt: skip
    item = Item.objects.create(project=project, external_id="x", payload={"premise": "p", "hypothesis": "h"},
                               reference_label="neutral", status="complete")  # fmt: skip
    now = timezone.now()
    for index, label in enumerate(["neutral", "neutral", "entailment", "entailment"]):
        user = make_user(f"nli-r{index}")
        Membership.objects.create(project=project, user=user, role="annotator", status="active")
        assignment = Assignment.objects.create(project=project, item=item, annotator=user, round=1, status="submitted",
                                               claimed_at=now, expires_at=now, submitted_at=now)  # fmt: skip
        Annotation.objects.create(assignment=assignment, item=item, annotator=user, round=1, value={"label": label})
    consensus_compute_for_item(item.pk)
    assert ConsensusOutcome.objects.get(item=item).outcome == outcome
    item.refresh_from_db()
    assert item.gold_label == gold


@pytest.mark.django_db
def test_with_dawid_skene_chosen_the_job_decides_phrase_pairs(make_user):
    from annotation.kinds.registry import get_kind
    from annotation.metrics.aggregation import aggregate
    from annotation.models import Item, ItemAggregate
    from annotation.services.aggregation import aggregation_compute_for_project
    from tests.services.vote_reference import project_votes

    project, users = build(
        make_user, settings={"aggregation": "dawid_skene", "labels_per_item": 3, "probe_rate": 0.0}, items=8
    )
    # A phrase-pair pool whose rounds Dawid-Skene decides: each waits for the job, which
    # gives it the Dawid-Skene label where the posterior reaches the target (0.9), else none.
    label_everything(project, users[1:])  # the two careful ones and the spammer
    assert set(Item.objects.filter(project=project).values_list("status", flat=True)) == {"deciding"}
    result = aggregation_compute_for_project(project)
    kind = get_kind("phrase_pair")
    votes, _items = project_votes(project, kind, author_votes=False)
    expected = aggregate(votes, "dawid_skene", labels=kind.labels)
    assert result["decided"] == 8 and result["gold_changed"] == 0
    for item in Item.objects.filter(project=project):
        label, confidence = expected.items[item.pk]
        assert item.status == "complete"
        assert item.gold_label == (label if confidence >= 0.9 else "")
    assert ItemAggregate.objects.filter(item__project=project).count() == 8 * len(METHODS)
