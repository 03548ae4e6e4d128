"""The aggregation's full run (hourly on a large project) rewrites only the rows that
changed — its aggregates, and the stored figures it reads over every item — and leaves
exactly the rows, sums and figures that a run building them from nothing stores, whatever
the changes since the last run, recorded or not, and whatever rows an earlier run left
behind."""

import random

import pytest
from django.db import connection
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from tests.services.test_incremental_aggregation import LABELS, build
from tests.services.test_incremental_figures import accepted, apply, changes_strategy, stored, with_values

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def small_thresholds(settings):
    settings.MASHOV_AGGREGATION_INCREMENTAL_ITEMS = 20
    settings.MASHOV_FIGURES_LIVE_ITEMS = 10


def rows_of(project) -> dict:
    """Every stored figure and row of the project, positions included."""
    from annotation.models import AdjudicationReason, ItemFigures

    shares = {
        item_id: (value, position)
        for item_id, value, position in ItemFigures.objects.filter(project=project).values_list(
            "item_id", "value", "disagree_position"
        )
    }
    reasons = {
        item_id: (why, position)
        for item_id, why, position in AdjudicationReason.objects.filter(project=project).values_list(
            "item_id", "reasons", "position"
        )
    }
    return {**stored(project), "shares": shares, "reasons": reasons}


def built_from_nothing(project) -> dict:
    """The rows a run over every item stores with no row of the project's stored before."""
    from annotation.models import AdjudicationReason, ItemFigures, ItemValueCount, ProjectFigures
    from annotation.services.figures import project_figures_store

    for model in (ItemFigures, ItemValueCount, AdjudicationReason, ProjectFigures):
        model.objects.filter(project=project).delete()
    project_figures_store(project)
    return rows_of(project)


def leave_stale_rows(project, rows, seed: int) -> None:
    """What an earlier run may have left: a share and a reason lost, a share and a reason
    of an item that is not the project's (below and above its ids), a count wrong, a count
    of a value no item holds, a reason for an item that has none."""
    from annotation.models import AdjudicationReason, ItemFigures, ItemValueCount

    pick = random.Random(seed)
    ItemFigures.objects.filter(project=project, item_id=pick.choice(rows).pk).delete()
    AdjudicationReason.objects.filter(project=project, item_id__in=[r.pk for r in pick.sample(rows, 3)]).delete()
    low, high = min(r.pk for r in rows), max(r.pk for r in rows)
    for item_id in (low - 1, high + 1000):
        ItemFigures.objects.create(project=project, item_id=item_id, value={"i": ["", "", 1, []]})
        AdjudicationReason.objects.create(project=project, item_id=item_id, reasons=["failed"], position=3)
    AdjudicationReason.objects.update_or_create(
        project=project, item_id=pick.choice(rows).pk, defaults={"reasons": ["failed", "methods_disagree"]}
    )
    ItemValueCount.objects.filter(project=project).update(items=999)
    ItemValueCount.objects.create(project=project, name="split", value="gone", items=4)


@hypothesis_settings(
    max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(changes=changes_strategy, seed=st.integers(0, 3), stale=st.booleans())
def test_a_run_over_every_item_stores_what_a_run_from_nothing_stores(make_user, changes, seed, stale):
    from annotation.services.aggregation import aggregation_compute_for_project
    from annotation.services.figures import project_figures_store

    project, rows, people = build(make_user, 40, seed=seed)
    with_values(rows)
    accepted(rows)
    assert aggregation_compute_for_project(project)["full"] is True
    apply(project, rows, people, changes)  # recorded nowhere: only a run over every item sees them
    if stale:
        leave_stale_rows(project, rows, seed)
    project_figures_store(project)
    kept = rows_of(project)
    assert kept == built_from_nothing(project)
    assert kept["shares"] and kept["value_counts"]


def test_a_second_run_over_every_item_writes_no_row_when_nothing_changed(make_user):
    from annotation.models import AdjudicationReason, ItemFigures, ItemValueCount
    from annotation.services.aggregation import aggregation_compute_for_project
    from annotation.services.figures import project_figures_store

    project, rows, _people = build(make_user, 40, seed=2)
    with_values(rows)
    accepted(rows)
    aggregation_compute_for_project(project)
    ids = {
        model: sorted(model.objects.filter(project=project).values_list("pk", flat=True))
        for model in (ItemFigures, AdjudicationReason, ItemValueCount)
    }
    assert all(ids.values())
    before = rows_of(project)
    tables = [model._meta.db_table for model in ids]
    written = rows_written(tables)
    project_figures_store(project)
    assert rows_written(tables) == written
    assert rows_of(project) == before
    for model, pks in ids.items():
        assert sorted(model.objects.filter(project=project).values_list("pk", flat=True)) == pks


def rows_written(tables: list[str]) -> dict[str, tuple[int, int, int]]:
    """Rows inserted, updated and deleted in each table by this transaction so far (the test's)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_xact_user_tables WHERE relname = ANY(%s)",
            [tables],
        )
        return {name: tuple(counts) for name, *counts in cursor.fetchall()}


def test_a_second_full_aggregation_run_rewrites_no_aggregate_and_changed_ones_are_rewritten(make_user):
    from annotation.models import Annotation, ItemAggregate
    from annotation.services.aggregation import aggregation_compute_for_project
    from tests.services.test_incremental_aggregation import vote

    project, rows, people = build(make_user, 40, seed=1)
    aggregation_compute_for_project(project, full=True)
    fields = ("item_id", "method", "round", "label", "confidence", "contributions", "computed_at")
    before = {(row[0], row[1]): row for row in ItemAggregate.objects.filter(item__project=project).values_list(*fields)}
    assert len(before) > 40
    written = rows_written([ItemAggregate._meta.db_table])
    aggregation_compute_for_project(project, full=True)
    assert rows_written([ItemAggregate._meta.db_table]) == written
    after = {(row[0], row[1]): row for row in ItemAggregate.objects.filter(item__project=project).values_list(*fields)}
    assert after == before
    # A changed vote: its item's aggregates are written anew, as every row would have been.
    item = next(row for row in rows if ItemAggregate.objects.filter(item=row, method="majority").exists())
    old = ItemAggregate.objects.get(item=item, method="majority")
    voter = Annotation.objects.filter(item=item, round=item.round).order_by("pk").first()
    assert voter is not None
    other = next(label for label in LABELS if label != voter.value["label"])
    vote(project, item, voter.annotator, other)
    aggregation_compute_for_project(project, full=True)
    new = ItemAggregate.objects.get(item=item, method="majority")
    assert (new.confidence, new.contributions, new.label) != (old.confidence, old.contributions, old.label)
    assert new.computed_at > old.computed_at


def test_a_run_from_nothing_writes_the_filter_counts_in_chunks_alike(make_user, monkeypatch):
    """The first run over a large project writes its filter counts RECORD_CHUNK rows at a
    time (a row per group); chunks of two rows store what one chunk stores."""
    from annotation.services import figures

    project, rows, _people = build(make_user, 40, seed=1)
    with_values(rows)
    accepted(rows)
    whole = built_from_nothing(project)
    monkeypatch.setattr(figures, "RECORD_CHUNK", 2)
    assert len(whole["value_counts"]) > 2
    assert built_from_nothing(project) == whole
