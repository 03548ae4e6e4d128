"""The supervisor's stored figures of a large project follow the items that changed: after
random changes (votes cast and edited, rounds reopened, closed, failed, adjudicated, gold
decided, claims of other durations, splits, groups and flags edited, items created without
a change that names them, items deleted), the aggregation job's incremental run leaves
exactly the figures a run over every item stores — the filter values and the adjudication
reasons included — and the figures a small project computes per request. The run reads
and writes the changed items' shares only."""

import itertools
import random
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from tests.services.test_incremental_aggregation import ANNOTATORS, LABELS, build, vote
from tests.services.test_incremental_aggregation import apply as apply_aggregation_changes

pytestmark = pytest.mark.django_db

STORED = ("annotator_quality", "item_values", "adjudication_agreement", "figure_sums", "report_sections")
SPLITS = ("", "train", "dev", "test")
GROUPS = ("", "g1", "g2", "ג3", "G4")
FLAGS = ("hard", "קשה", "x")
# Names of the items created by `apply`: never one an earlier item held (an item deleted
# shortens the list, so its length would name one twice).
CREATED = itertools.count()


@pytest.fixture(autouse=True)
def small_thresholds(settings, monkeypatch):
    settings.MASHOV_AGGREGATION_INCREMENTAL_ITEMS = 20
    settings.MASHOV_AGGREGATION_FULL_SHARE = 0.5
    settings.MASHOV_FIGURES_LIVE_ITEMS = 10
    # Fewer groups offered than the items hold: which ones are the first counts.
    monkeypatch.setattr("annotation.selectors.items.GROUPS_OFFERED", 3)


def live_sections(project) -> dict:
    """The kind's report sections computed whole, as JSON stores them: what a kept report
    must equal."""
    from annotation.kinds.registry import get_kind
    from annotation.services.figures import _json

    return _json(get_kind(project.kind).report_sections(project))


def stored(project) -> dict:
    from annotation.models import AdjudicationReason, ItemFigures, ItemValueCount, ProjectFigures

    figures = dict(ProjectFigures.objects.filter(project=project, name__in=STORED).values_list("name", "value"))
    shares = dict(ItemFigures.objects.filter(project=project).values_list("item_id", "value"))
    counts = dict(
        ((name, value), n)
        for name, value, n in ItemValueCount.objects.filter(project=project).values_list("name", "value", "items")
    )
    reasons = dict(AdjudicationReason.objects.filter(project=project).values_list("item_id", "reasons"))
    return {**figures, "shares": shares, "value_counts": counts, "reasons": reasons}


def assert_live(project, incremental) -> None:
    """What a small project computes per request from its items and votes."""
    from annotation.kinds.registry import get_kind
    from annotation.selectors.annotator_quality import queue_reasons_compute
    from annotation.selectors.items import item_values_compute
    from annotation.services.figures import _json

    assert incremental["item_values"] == _json(item_values_compute(project))
    assert incremental["reasons"] == queue_reasons_compute(project, get_kind(project.kind))


def apply(project, rows, people, changes) -> set[int]:
    """The aggregation test's changes (votes, reopens, closes) and those only the figures
    read: a failed round, an accepted one (its gold, and the consensus changing the
    intended label or not), an adjudication, a decided gold, a slow claim, an item's split,
    group or flags edited, an item deleted, and an item created (an import names it in no
    change: not in the ids returned)."""
    from annotation.models import Adjudication, Annotation, Assignment, ConsensusOutcome, Item

    changed = apply_aggregation_changes(
        project, rows, people, [c for c in changes if c[1] in ("vote", "reopen", "close")]
    )
    now = timezone.now()
    for position, action, label in changes:
        item = rows[position % len(rows)]
        item.refresh_from_db()
        code = LABELS.index(label) + position
        if action == "create":
            rows.append(
                Item.objects.create(
                    project=project, external_id=f"new{next(CREATED)}", payload=item.payload,
                    split=SPLITS[code % len(SPLITS)], group=GROUPS[code % len(GROUPS)],
                    flags=list(FLAGS[: code % 3]), position=len(rows),
                )
            )  # fmt: skip
            continue
        if action == "values":
            Item.objects.filter(pk=item.pk).update(
                split=SPLITS[code % len(SPLITS)], group=GROUPS[(code + 1) % len(GROUPS)], flags=list(FLAGS[code % 3 :])
            )
        elif action == "delete":
            if len(rows) > 20:
                Item.objects.filter(pk=item.pk).delete()
                rows.remove(item)
        elif action == "fail":
            ConsensusOutcome.objects.update_or_create(
                item=item, round=item.round,
                defaults={"outcome": "failed", "gold": "", "votes": {}, "n_votes": 3, "agreement": 0.4},
            )  # fmt: skip
        elif action == "accept":
            ConsensusOutcome.objects.update_or_create(
                item=item, round=item.round,
                defaults={"outcome": "accepted", "gold": label, "votes": {}, "n_votes": 3, "agreement": 0.7,
                          "label_changed": label != item.reference_label},
            )  # fmt: skip
            Item.objects.filter(pk=item.pk).update(status=Item.Status.ACCEPTED, gold_label=label)
        elif action == "adjudicate":
            Adjudication.objects.update_or_create(item=item, round=item.round, defaults={"label": label})
        elif action == "gold":
            Item.objects.filter(pk=item.pk).update(gold_label=label)
        elif action == "slow":
            person = people[(position + 1) % ANNOTATORS]
            if not Annotation.objects.filter(item=item, annotator=person, round=item.round).exists():
                claim = Assignment.objects.create(
                    project=project, item=item, annotator=person, round=item.round, status="submitted",
                    claimed_at=now - timedelta(seconds=position * 1.37), expires_at=now, submitted_at=now,
                )  # fmt: skip
                Annotation.objects.create(
                    assignment=claim, item=item, annotator=person, round=item.round, value={"label": label}
                )
        else:
            continue
        changed.add(item.pk)
    return changed


def with_values(rows) -> None:
    """Splits, groups and flags spread over the items, as a file gives them."""
    from annotation.models import Item

    for index, item in enumerate(rows):
        Item.objects.filter(pk=item.pk).update(
            split=SPLITS[index % len(SPLITS)], group=GROUPS[index % len(GROUPS)], flags=list(FLAGS[: index % 4])
        )


def accepted(rows) -> None:
    """The accepted items' rounds closed by the consensus: an outcome with its gold, the
    intended label changed on every third item; an item without an intended label."""
    from annotation.models import ConsensusOutcome, Item

    for index, item in enumerate(rows):
        if item.status != Item.Status.ACCEPTED:
            continue
        gold = LABELS[(LABELS.index(item.reference_label) + (index % 3 == 0)) % len(LABELS)]
        ConsensusOutcome.objects.create(
            item=item, round=item.round, outcome="accepted", gold=gold, votes={}, n_votes=3, agreement=0.7,
            label_changed=gold != item.reference_label,
        )  # fmt: skip
        Item.objects.filter(pk=item.pk).update(
            gold_label=gold, reference_label="" if index == 1 else F("reference_label")
        )


changes_strategy = st.lists(
    st.tuples(
        st.integers(0, 59),
        st.sampled_from(
            ["vote", "reopen", "close", "fail", "accept", "adjudicate", "gold", "slow", "values", "create", "delete"]
        ),
        st.sampled_from(LABELS),
    ),
    min_size=1,
    max_size=10,
)


@hypothesis_settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(batches=st.lists(changes_strategy, min_size=1, max_size=3), seed=st.integers(0, 3))
def test_incremental_figures_equal_a_full_recompute(make_user, batches, seed):
    from annotation.kinds.registry import get_kind
    from annotation.selectors.annotator_quality import adjudication_agreement_compute, annotator_figures_compute
    from annotation.services.aggregation import aggregation_compute_for_project, aggregation_request
    from annotation.services.figures import _json, project_figures_store

    project, rows, people = build(make_user, 60, seed=seed)
    with_values(rows)
    accepted(rows)
    assert aggregation_compute_for_project(project)["full"] is True
    for changes in batches:  # several runs, each after its own changes
        changed = apply(project, rows, people, changes)
        aggregation_request(project.pk, item_ids=sorted(changed))
        assert aggregation_compute_for_project(project)["full"] is False
    incremental = stored(project)
    project_figures_store(project)  # every item read anew
    assert incremental == stored(project)
    # And what a small project computes per request from its votes.
    assert_live(project, incremental)
    kind = get_kind(project.kind)
    live_quality = {str(annotator): row for annotator, row in annotator_figures_compute(project, kind).items()}
    assert incremental["annotator_quality"] == live_quality
    assert incremental["adjudication_agreement"] == adjudication_agreement_compute(project, kind)
    # The kind's report sections, kept as counts: what the report computes per request.
    assert incremental["report_sections"] == _json({**kind.report_sections(project), "agreement": None})
    assert incremental["report_sections"]["per_annotator"] and incremental["report_sections"]["outcomes_per_round"]
    # The methods' comparison kept as sums: what the report reads over every aggregate, for
    # any chosen method, scored against the reference too (as label_test asks).
    assert_comparison_is_the_live_one(project, incremental)


def assert_comparison_is_the_live_one(project, incremental):
    from annotation.metrics.aggregation import METHODS
    from annotation.selectors.aggregation import aggregation_report_for_project
    from annotation.services.figures import _json

    chosen = project.settings["aggregation"]
    assert incremental["report_sections"]["aggregation"] == _json(aggregation_report_for_project(project, chosen))
    assert incremental["report_sections"]["aggregation"]["items"] > 0
    for method in METHODS:
        live = aggregation_report_for_project(project, method, score_against_reference=True)
        project._method_comparison = incremental["figure_sums"]["comparison"]
        try:
            kept = aggregation_report_for_project(project, method, score_against_reference=True)
        finally:
            del project._method_comparison
        assert _json(kept) == _json(live)
    # The listed disagreements are the first by position when there are more than listed.
    from annotation.selectors import aggregation

    listed, aggregation.DISAGREEMENTS_LISTED = aggregation.DISAGREEMENTS_LISTED, 2
    try:
        live = aggregation_report_for_project(project, chosen)
        project._method_comparison = incremental["figure_sums"]["comparison"]
        kept = aggregation_report_for_project(project, chosen)
        del project._method_comparison
    finally:
        aggregation.DISAGREEMENTS_LISTED = listed
    assert _json(kept) == _json(live)


def test_an_incremental_figures_run_costs_the_same_statements_for_3_and_300_changed_items(make_user):
    """The statements of a run are the same for 3 and for 300 changed items (votes, failed
    rounds and edited filter values among them), and only the changed items' shares and
    reasons are written anew."""
    from annotation.models import AdjudicationReason, ItemFigures
    from annotation.services.figures import project_figures_store

    project, rows, people = build(make_user, 320, seed=5)
    with_values(rows)
    project_figures_store(project)
    queries = []
    for offset, size in ((0, 3), (3, 300)):
        untouched = dict(ItemFigures.objects.filter(project=project).values_list("item_id", "id"))
        reasons = dict(AdjudicationReason.objects.filter(project=project).values_list("item_id", "id"))
        actions = ("vote", "fail", "values")
        changed = apply(project, rows, people, [(offset + i, actions[i % 3], LABELS[i % 3]) for i in range(size)])
        assert len(changed) == size
        with CaptureQueriesContext(connection) as captured:
            project_figures_store(project, sorted(changed))
        queries.append(len(captured))
        after = dict(ItemFigures.objects.filter(project=project).values_list("item_id", "id"))
        assert {k: v for k, v in after.items() if k not in changed} == {
            k: v for k, v in untouched.items() if k not in changed
        }
        assert set(after) - set(untouched) <= changed
        reasons_after = dict(AdjudicationReason.objects.filter(project=project).values_list("item_id", "id"))
        assert {k: v for k, v in reasons_after.items() if k not in changed} == {
            k: v for k, v in reasons.items() if k not in changed
        }
        assert_live(project, stored(project))
    assert queries[0] == queries[1], queries


def rows_read() -> dict[str, int]:
    """Rows this transaction read so far, per table: PostgreSQL's own counters of the rows
    its sequential scans returned and of the entries its index scans returned."""
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT c.relname, pg_stat_get_xact_tuples_returned(c.oid) + COALESCE((
                   SELECT sum(pg_stat_get_xact_tuples_returned(i.indexrelid)) FROM pg_index i
                   WHERE i.indrelid = c.oid), 0)
               FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE c.relkind = 'r' AND n.nspname = current_schema()"""
        )
        return {table: int(n) for table, n in cursor.fetchall()}


def project_rows_read_by(action) -> dict[str, int]:
    """Rows of the project's tables that `action` read, per table, the tables analysed and
    the planner kept off sequential scans (the annotators' usernames are read by their ids,
    from the site's user table: whatever plan reads those here follows the site's users,
    not the project)."""
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
        cursor.execute("SET LOCAL enable_seqscan = off")
    before = rows_read()
    action()
    after = rows_read()
    return {
        table: after.get(table, 0) - n
        for table, n in before.items()
        if after.get(table, 0) > n and table.startswith("annotation_")
    }


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's statistics counters")
def test_an_incremental_figures_run_reads_the_changed_items_not_the_project(make_user, monkeypatch):
    """A run after 3 items changed reads a few rows per changed item: no statement reads the
    project's items, votes, outcomes or shares whole (the report sections included). The
    tables are analysed and the planner kept off sequential scans, as on a large project's
    tables, so that a read bounded by an index shows as such on these small ones."""
    from annotation.models import Annotation, Item
    from annotation.services.aggregation import aggregation_compute_for_project
    from annotation.services.figures import project_figures_store

    # The report lists the first disagreeing items by position: here 2 of the project's.
    monkeypatch.setattr("annotation.selectors.aggregation.DISAGREEMENTS_LISTED", 2)
    project, rows, people = build(make_user, 200, seed=7)
    with_values(rows)
    accepted(rows)
    aggregation_compute_for_project(project)  # the aggregates, and the figures over every item
    assert Annotation.objects.filter(item__project=project).count() > 500
    changed = apply(
        project, rows, people, [(0, "vote", "neutral"), (1, "accept", "entailment"), (2, "fail", "contradiction")]
    )
    read = project_rows_read_by(lambda: project_figures_store(project, sorted(changed)))
    # 200 items, over 500 votes and claims, 160 accepted outcomes, 200 shares: a table read
    # whole gives hundreds; the 3 items' rows, the filter values and the annotators a few.
    assert read and max(read.values()) <= 40, str(sorted(read.items()))
    assert Item.objects.filter(project=project).count() == 200


def test_a_curation_removal_reaches_the_kept_report_sections(make_user, monkeypatch):
    """Removing accepted items for curation asks for the aggregation of those items, whose
    run then takes them out of the kept report sections (the confusion counts accepted
    items), leaving what the report computes per request."""
    from annotation.kinds.registry import get_kind
    from annotation.models import Item
    from annotation.services import decisions
    from annotation.services.aggregation import aggregation_compute_for_project, aggregation_request
    from annotation.services.figures import _json

    project, rows, _people = build(make_user, 30, seed=4)
    accepted(rows)
    assert aggregation_compute_for_project(project)["full"] is True
    asked = []
    monkeypatch.setattr(decisions, "enqueue_on_commit", lambda task, *args: asked.append((task, *args)))
    gone = list(Item.objects.filter(project=project, status=Item.Status.ACCEPTED).order_by("pk")[:3])
    decisions.curation_removals_record(gone, method="near_duplicate", reasons={item.pk: "copy" for item in gone})
    assert asked == [("annotation.tasks.request_aggregation", project.pk, [item.pk for item in gone])]
    aggregation_request(project.pk, item_ids=asked[0][2])
    assert aggregation_compute_for_project(project)["full"] is False
    kept = stored(project)["report_sections"]
    assert kept == _json({**get_kind(project.kind).report_sections(project), "agreement": None})
    assert kept["confusion"]["total"] == Item.objects.filter(project=project, status=Item.Status.ACCEPTED).count()


def test_a_deleted_item_leaves_the_figures(make_user):
    from annotation.models import Item
    from annotation.services.figures import project_figures_store

    project, rows, _people = build(make_user, 30, seed=1)
    project_figures_store(project)
    gone = rows[random.Random(3).randrange(30)].pk
    Item.objects.filter(pk=gone).delete()
    project_figures_store(project, [gone])
    incremental = stored(project)
    project_figures_store(project)
    assert incremental == stored(project)
    assert str(gone) not in incremental["shares"]


def test_the_figures_job_runs_with_the_aggregation_and_pages_read_them(make_user):
    """Through the job: the stored figures are the ones the pages read."""
    from annotation.models import Assignment, Job
    from annotation.selectors.annotator_quality import annotator_quality_for_project
    from annotation.services.aggregation import aggregation_compute_job, aggregation_request

    project, rows, people = build(make_user, 40, seed=2)
    aggregation_compute_job(Job.objects.create(kind="aggregation", project=project, status="running"))
    item = rows[0]
    vote(project, item, people[5], "neutral")
    aggregation_request(project.pk, item_ids=[item.pk])
    result = aggregation_compute_job(Job.objects.create(kind="aggregation", project=project, status="running"))
    assert result["full"] is False and "item_ids" not in result
    shown = annotator_quality_for_project(project)
    assert sum(row["items"] for row in shown) == Assignment.objects.filter(project=project, status="submitted").count()
    assert {row["annotator"] for row in shown if row["items"]} == {person.username for person in people}


def test_incoherent_probes_make_their_originals_wait_when_only_the_probe_changed(make_user):
    """A vote on a reversed-pair probe makes its original incoherent, or coherent again: the
    run given only the probe's id rewrites the original's reasons too, and leaves what a run
    over every item and the per-request queue give. Random votes, several runs."""
    from annotation.kinds.registry import get_kind
    from annotation.models import Item, Membership
    from annotation.selectors.annotator_quality import queue_reasons_compute
    from annotation.services.figures import project_figures_store
    from annotation.services.projects import project_create

    rng = random.Random(11)
    labels = ("FORWARD", "BACKWARD", "EQUIVALENT")
    sup = make_user("probe-sup", staff=True)
    project = project_create(
        actor=sup, slug="probe-figures", name="probes", kind="phrase_pair", language="en",
        settings={"probe_rate": 0.0},
    )  # fmt: skip
    people = [make_user(f"probe-a{index}") for index in range(3)]
    Membership.objects.bulk_create(
        Membership(project=project, user=user, role="annotator", status="active") for user in people
    )
    originals = [
        Item.objects.create(project=project, external_id=f"p{i}", payload={"left": f"a{i}", "right": f"b{i}"},
                            position=i, status="complete")
        for i in range(24)
    ]  # fmt: skip
    probes = [
        Item.objects.create(project=project, external_id=f"p{i}~rev", payload={"left": f"b{i}", "right": f"a{i}"},
                            probe_of=originals[i], position=100 + i, status="complete")
        for i in range(8)
    ]  # fmt: skip
    for item in originals:
        for person in people:
            vote(project, item, person, rng.choice(labels))
    for probe in probes:  # one annotator's reversal each: its coherence flips with that one vote
        vote(project, probe, people[0], rng.choice(labels))
    kind = get_kind(project.kind)
    project_figures_store(project)
    assert stored(project)["reasons"] == queue_reasons_compute(project, kind)
    flips = 0
    for _run in range(4):
        before = {item_id for item_id, why in stored(project)["reasons"].items() if "incoherent_probe" in why}
        changed = set()
        for _vote in range(3):
            probe = rng.choice(probes)
            vote(project, probe, people[0], rng.choice(labels))
            changed.add(probe.pk)
        project_figures_store(project, sorted(changed))
        incremental = stored(project)
        assert incremental["reasons"] == queue_reasons_compute(project, kind)
        project_figures_store(project)
        assert stored(project) == incremental
        after = {item_id for item_id, why in incremental["reasons"].items() if "incoherent_probe" in why}
        flips += len(before ^ after)
    assert flips  # some original's incoherence came or went with its probe's vote alone
