"""Coherence probes of `phrase_pair` through the assignment engine's services
(fine-grained-nli-coherence §3): reversed copies of an annotator's own pairs arrive at
the project's rate, never right after their original, look like ordinary items, are
scored per annotator, and never over-fill or leak into other annotators' queues."""

import random
from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.kinds.phrase.labels import majority_gold
from annotation.kinds.phrase.probes import PROBE_MARK
from annotation.kinds.registry import get_kind
from annotation.metrics.coherence import LABELS
from annotation.models import Annotation, Assignment, Item, Membership
from annotation.services.assignments import annotation_submit, assignment_next_for_annotator
from annotation.services.projects import project_create

pytestmark = pytest.mark.django_db

REVERSE = {"FORWARD": "BACKWARD", "BACKWARD": "FORWARD"}


@pytest.fixture
def make_project(make_user):
    counter = {"n": 0}

    def make(*, items: int, annotators: int = 1, groups: int = 0, **settings):
        counter["n"] += 1
        n = counter["n"]
        admin = make_user(f"admin{n}", staff=True)
        project = project_create(
            actor=admin, slug=f"probes-{n}", name=f"Probes {n}", kind="phrase_pair", language="he", settings=settings
        )
        Item.objects.bulk_create(
            Item(
                project=project,
                external_id=f"p{i}",
                payload={
                    "left": f"ביטוי שמאלי {i} ",
                    "right": f"ביטוי ימני {i}",
                    "source": "images" if i % 2 else "headlines",
                },
                reference_label=LABELS[i % len(LABELS)],
                group=f"g{i % groups}" if groups else f"g{i}",
                position=i + 1,
            )
            for i in range(items)
        )
        users = []
        for i in range(annotators):
            user = make_user(f"p{n}-ann{i}")
            Membership.objects.create(project=project, user=user, role="annotator", status="active")
            users.append(user)
        return project, users

    return make


def label_everything(project, user, choose, limit: int = 5000) -> list[tuple[Item, str]]:
    """Draw and label until nothing is left; returns (item, label) in the order served."""
    sequence = []
    for _ in range(limit):
        assignment = assignment_next_for_annotator(user=user, slug=project.slug)
        if assignment is None:
            return sequence
        item = assignment.item
        label = choose(item, sequence)
        annotation_submit(user=user, assignment_id=assignment.pk, value={"label": label})
        sequence.append((item, label))
    raise AssertionError("the queue never ran dry")


def imported(item, _sequence):
    return item.reference_label


@pytest.mark.parametrize("rate", [0.1, 0.25])
def test_probes_arrive_at_the_set_rate_never_after_their_original(make_project, rate):
    project, (user,) = make_project(items=300, probe_rate=rate, probe_seed=11, labels_per_item=1)
    sequence = label_everything(project, user, imported)
    items = [item for item, _ in sequence]
    probes = [item for item in items if item.probe_of_id]
    ordinary = [item for item in items if not item.probe_of_id]
    assert len(ordinary) == 300
    # The owed-probe rule keeps the count within one probe of the target at every step
    # (a probe is drawn with probability `owed` while less than one is owed), and so at
    # the end.
    expected = rate / (1 - rate) * len(ordinary)
    assert expected - 1 <= len(probes) <= expected + 1, (len(probes), expected)
    assert len(probes) / len(items) == pytest.approx(rate, abs=0.01)
    position = {item.pk: index for index, item in enumerate(items)}
    for index, item in enumerate(items):
        if not item.probe_of_id:
            continue
        before = position[item.probe_of_id]
        assert before < index - 1, "a probe came right after (or before) its original"
        # Never two probes of one original for one annotator.
    assert len({item.probe_of_id for item in probes}) == len(probes)
    # The share holds along the way too, not only at the end.
    running_probes = 0
    for index, item in enumerate(items, start=1):
        running_probes += bool(item.probe_of_id)
        running_ordinary = index - running_probes
        assert running_probes < rate / (1 - rate) * running_ordinary + 1


def test_probe_positions_are_random_not_a_fixed_schedule(make_project):
    """Different seeds put the probes at different places (a fixed every-tenth-item
    schedule would be a tell); the same seed, project and annotator reproduce them."""
    layouts = {}
    for seed in (1, 2):
        project, (user,) = make_project(items=80, probe_rate=0.2, probe_seed=seed, labels_per_item=1)
        for run in range(2):
            # Every pair may be reversed (a listed label), so positions depend on the draws alone.
            sequence = label_everything(project, user, lambda item, seq: "EQUIVALENT")
            layouts[seed, run] = tuple(index for index, (item, _label) in enumerate(sequence) if item.probe_of_id)
            # Start the project over for the second run.
            Item.objects.filter(project=project, probe_of__isnull=False).delete()
            Assignment.objects.filter(project=project).delete()
            Item.objects.filter(project=project).update(status=Item.Status.OPEN, gold_label="")
    assert layouts[1, 0] == layouts[1, 1]
    assert layouts[2, 0] == layouts[2, 1]
    assert layouts[1, 0] != layouts[2, 0]
    gaps = {b - a for a, b in zip(layouts[1, 0], layouts[1, 0][1:])}
    assert len(gaps) > 1


def probe_layout(project, user) -> tuple[int, ...]:
    """Where the probes fall in a run over the whole project, which is then started over."""
    sequence = label_everything(project, user, lambda item, seq: "EQUIVALENT")
    Item.objects.filter(project=project, probe_of__isnull=False).delete()
    Assignment.objects.filter(project=project).delete()
    Item.objects.filter(project=project).update(status=Item.Status.OPEN, gold_label="")
    return tuple(index for index, (item, _label) in enumerate(sequence) if item.probe_of_id)


def test_probe_draws_are_keyed_by_the_projects_secret_not_by_the_settings_alone(make_project):
    """Members may know the seed (it was once in every member's view of the project): the
    draw is an HMAC keyed by the project's secret and the seed, so the same settings with
    another secret place the probes elsewhere, and the server's own secret replays them."""
    project, (user,) = make_project(items=80, probe_rate=0.2, probe_seed=5, labels_per_item=1)
    first = probe_layout(project, user)
    secret = project.draw_secret
    project.draw_secret = "0f" * 32
    project.save(update_fields=["draw_secret"])
    assert probe_layout(project, user) != first
    project.draw_secret = secret
    project.save(update_fields=["draw_secret"])
    assert probe_layout(project, user) == first


def test_probe_is_the_reversed_pair_and_looks_ordinary(make_project):
    project, (user,) = make_project(items=60, probe_rate=0.3, probe_seed=3, labels_per_item=1)
    kind = get_kind("phrase_pair")
    sequence = label_everything(project, user, imported)
    # Nothing left stays nothing left: the probe draw at a given point is always the same.
    assert all(assignment_next_for_annotator(user=user, slug=project.slug) is None for _ in range(5))
    probes = [item for item, _ in sequence if item.probe_of_id]
    assert probes
    for probe in probes:
        original = Item.objects.get(pk=probe.probe_of_id)
        assert probe.payload["left"] == original.payload["right"]
        assert probe.payload["right"] == original.payload["left"]
        assert probe.in_sample is True
        assert probe.external_id == f"{original.external_id}{PROBE_MARK}{user.pk}"
        shown = kind.annotator_payload(probe)
        assert set(shown) == {"left", "right"} == set(kind.annotator_payload(original))
        assert probe.reference_label == REVERSE.get(original.reference_label, original.reference_label)
        assert probe.group == original.group
        # One label completes a probe: it belongs to its annotator only.
        probe.refresh_from_db()
        assert probe.status == Item.Status.COMPLETE


def test_probes_never_reach_other_annotators_nor_overfill(make_project):
    project, users = make_project(items=40, annotators=3, probe_rate=0.25, probe_seed=5, labels_per_item=2)
    served: dict[int, list[Item]] = {user.pk: [] for user in users}
    active = list(users)
    rng = random.Random(9)
    # Interleave the three annotators at random, like a real crowd.
    while active:
        user = rng.choice(active)
        assignment = assignment_next_for_annotator(user=user, slug=project.slug)
        if assignment is None:
            active.remove(user)
            continue
        served[user.pk].append(assignment.item)
        annotation_submit(user=user, assignment_id=assignment.pk, value={"label": "EQUIVALENT"})
    for user in users:
        for item in served[user.pk]:
            if item.probe_of_id:
                assert item.external_id.endswith(f"{PROBE_MARK}{user.pk}")
                assert Annotation.objects.filter(item=item.probe_of_id, annotator=user).exists()
    # Ordinary items: exactly labels_per_item labels each; probes: exactly one.
    per_item = Counter(Annotation.objects.filter(item__project=project).values_list("item_id", flat=True))
    for item in Item.objects.filter(project=project):
        assert per_item[item.pk] == (1 if item.probe_of_id else 2), item.external_id
    assert sum(1 for item in Item.objects.filter(project=project) if item.probe_of_id) > 0


def test_expired_probe_claim_is_handed_out_again_not_duplicated(make_project):
    project, (user,) = make_project(items=30, probe_rate=0.5, probe_seed=4, labels_per_item=1)
    # Label until the first probe is served, then let its claim expire.
    for _ in range(30):
        assignment = assignment_next_for_annotator(user=user, slug=project.slug)
        if assignment.item.probe_of_id:
            break
        annotation_submit(user=user, assignment_id=assignment.pk, value={"label": "EQUIVALENT"})
    else:
        raise AssertionError("no probe served")
    probe = assignment.item
    Assignment.objects.filter(pk=assignment.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    again = []
    for _ in range(40):
        nxt = assignment_next_for_annotator(user=user, slug=project.slug)
        if nxt is None:
            break
        again.append(nxt.item.pk)
        annotation_submit(user=user, assignment_id=nxt.pk, value={"label": "EQUIVALENT"})
    assert probe.pk in again
    assert Item.objects.filter(project=project, probe_of=probe.probe_of_id).count() == 1
    assert Assignment.objects.filter(item=probe, status=Assignment.Status.SUBMITTED).count() == 1


def test_no_probes_at_rate_zero(make_project):
    project, (user,) = make_project(items=50, probe_rate=0.0, labels_per_item=1)
    sequence = label_everything(project, user, imported)
    assert len(sequence) == 50
    assert not Item.objects.filter(project=project, probe_of__isnull=False).exists()


def test_coherence_is_scored_per_annotator(make_project):
    """Three annotators with known habits; the report's soft and hard coherence equal a
    count made here from the labels they cast."""
    project, users = make_project(items=70, annotators=3, probe_rate=0.25, probe_seed=8, labels_per_item=3)
    careful, lazy, noisy = users
    rng = random.Random(1)

    def careful_choice(item, _seq):
        # Labels the imported label, and its reversal on a probe: coherent and correct.
        return item.reference_label

    def lazy_choice(item, _seq):
        # Always FORWARD: coherent only where Rev(FORWARD) = FORWARD, i.e. never.
        return "FORWARD"

    def noisy_choice(item, _seq):
        return rng.choice(LABELS)

    cast = {}
    for user, choose in ((careful, careful_choice), (lazy, lazy_choice), (noisy, noisy_choice)):
        cast[user.username] = label_everything(project, user, choose)

    report = get_kind("phrase_pair").report_sections(project)
    rows = {row["annotator"]: row for row in report["coherence"]["per_annotator"]}
    assert set(rows) == {careful.username, lazy.username, noisy.username}
    for username, sequence in cast.items():
        mine = {item.pk: label for item, label in sequence}
        probes = [(item, label) for item, label in sequence if item.probe_of_id]
        assert probes
        soft = sum(1 for item, label in probes if mine[item.probe_of_id] == REVERSE.get(label, label))
        originals = {item.pk: item for item in Item.objects.filter(pk__in=[item.probe_of_id for item, _ in probes])}
        hard = sum(
            1
            for item, label in probes
            if mine[item.probe_of_id] == REVERSE.get(label, label)
            and mine[item.probe_of_id] == originals[item.probe_of_id].reference_label
        )
        row = rows[username]
        assert row["probes"] == len(probes)
        assert row["soft_coherent"] == soft and row["soft"] == pytest.approx(soft / len(probes))
        assert row["hard_coherent"] == hard and row["hard_total"] == len(probes)
    assert rows[careful.username]["soft"] == 1.0 and rows[careful.username]["hard"] == 1.0
    assert rows[lazy.username]["soft"] == 0.0 and rows[lazy.username]["hard"] == 0.0
    # Probes are left out of the label distribution: only ordinary labels are counted.
    counted = sum(row["total"] for row in report["label_distribution"])
    ordinary = sum(1 for seq in cast.values() for item, _ in seq if not item.probe_of_id)
    assert counted == ordinary == 70 * 3


def test_hard_coherence_falls_back_to_the_majority_without_an_imported_label(make_project):
    project, users = make_project(items=30, annotators=3, probe_rate=0.3, probe_seed=2, labels_per_item=3)
    Item.objects.filter(project=project).update(reference_label="")
    a, b, c = users
    label_everything(project, a, lambda item, seq: "EQUIVALENT")
    label_everything(project, b, lambda item, seq: "EQUIVALENT")
    # c: FORWARD on the pairs, BACKWARD on their reversals.
    label_everything(project, c, lambda item, seq: "BACKWARD" if item.probe_of_id else "FORWARD")
    rows = {
        row["annotator"]: row for row in get_kind("phrase_pair").report_sections(project)["coherence"]["per_annotator"]
    }
    # All three are soft-coherent; only the majority's are correct.
    assert rows[a.username]["soft"] == rows[c.username]["soft"] == 1.0
    assert rows[a.username]["hard"] == 1.0
    assert rows[c.username]["hard"] == 0.0
    # And the stored gold of every ordinary item is that majority.
    golds = set(Item.objects.filter(project=project, probe_of__isnull=True).values_list("gold_label", flat=True))
    assert golds == {"EQUIVALENT"}


@pytest.mark.parametrize(
    "labels, imported, expected",
    [
        (["FORWARD", "FORWARD", "SIMILAR"], "", ("FORWARD", "majority", False)),
        (["FORWARD", "SIMILAR", "RELATED"], "RELATED", ("RELATED", "majority_tiebreak_imported", True)),
        (["FORWARD", "SIMILAR"], "UNRELATED", (None, None, True)),
        ([], "OPPOSITION", ("OPPOSITION", "imported", False)),
        ([], "", (None, None, False)),
        (["SIMILAR", "SIMILAR", "EQUIVALENT"], "EQUIVALENT", ("SIMILAR", "majority", False)),
    ],
)
def test_majority_gold_table(labels, imported, expected):
    assert majority_gold(labels, imported) == expected


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_crowd_with_probes_on_postgresql(make_user):
    """Twelve annotators at once (two threads each, so one person's `next` calls race
    too): every ordinary item gets exactly labels_per_item labels, every probe exactly
    one, from the annotator it was made for, and nobody gets one probe twice."""
    import threading

    from django.db import connection

    from annotation.services.projects import project_create

    admin = make_user("crowd-admin", staff=True)
    project = project_create(
        actor=admin, slug="crowd-probes", name="Crowd", kind="phrase_pair", language="he",
        settings={"labels_per_item": 3, "probe_rate": 0.3},
    )  # fmt: skip
    Item.objects.bulk_create(
        Item(
            project=project,
            external_id=f"c{i}",
            payload={"left": f"א{i}", "right": f"ב{i}"},
            group=f"g{i // 2}",
            position=i,
        )
        for i in range(40)
    )
    users = [make_user(f"crowd-{i:02d}") for i in range(12)]
    Membership.objects.bulk_create(
        Membership(project=project, user=u, role="annotator", status="active") for u in users
    )
    errors = []
    barrier = threading.Barrier(24)

    def work(user):
        try:
            barrier.wait(timeout=30)
            for _ in range(200):
                assignment = assignment_next_for_annotator(user=user, slug=project.slug)
                if assignment is None:
                    return
                try:
                    annotation_submit(user=user, assignment_id=assignment.pk, value={"label": "EQUIVALENT"})
                except Exception as exc:  # the twin thread submitted the same claim first
                    if exc.__class__.__name__ != "Conflict":
                        raise
        except Exception as exc:  # reported below
            errors.append(repr(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(user,)) for user in users for _twin in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert errors == []
    per_item = Counter(Annotation.objects.filter(item__project=project).values_list("item_id", flat=True))
    items = list(Item.objects.filter(project=project))
    probes = [item for item in items if item.probe_of_id]
    assert probes
    for item in items:
        assert per_item[item.pk] == (1 if item.probe_of_id else 3), item.external_id
    for probe in probes:
        (annotator,) = Annotation.objects.filter(item=probe).values_list("annotator_id", flat=True)
        assert probe.external_id.endswith(f"{PROBE_MARK}{annotator}")
        assert Annotation.objects.filter(item=probe.probe_of_id, annotator=annotator).exists()
    pairs = [(probe.probe_of_id, probe.external_id.rsplit(PROBE_MARK, 1)[1]) for probe in probes]
    assert len(pairs) == len(set(pairs))
