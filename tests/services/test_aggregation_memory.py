"""The aggregation job's memory stays flat with the project: it reads the votes into arrays a
chunk of rows at a time, and writes the aggregates a batch of items at a time, all of them
in one transaction (a failure halfway leaves the aggregates of the run before). What it
reads and writes is what the per-vote reads and the methods on tuples give."""

import pytest

from tests.services.test_incremental_aggregation import build, vote
from tests.services.vote_reference import project_votes

pytestmark = pytest.mark.django_db

METHODS = ("k_of_n", "majority", "dawid_skene", "mace")


def as_tuples(pool):
    from annotation.selectors.aggregation import IMPORTED, IMPORTED_ID

    votes = pool.votes
    rows = zip(votes.item.tolist(), pool.annotator_ids[votes.annotator].tolist(), votes.label.tolist())
    # The imported labels' key is a name among ids: compared as text.
    return sorted(
        [
            (int(pool.voted[number]), IMPORTED if annotator == IMPORTED_ID else annotator, votes.labels[label])
            for number, annotator, label in rows
        ],
        key=repr,
    )


def test_the_vote_reader_gives_arrays_read_a_chunk_of_rows_at_a_time(make_user, monkeypatch):
    import numpy as np

    from annotation.kinds.registry import get_kind
    from annotation.models import Annotation, Item
    from annotation.selectors import aggregation as selectors

    project, rows, _people = build(make_user, 40, seed=3)
    # Votes that do not count: one of a round before the item's current one, an abstention.
    Item.objects.filter(pk=rows[0].pk).update(round=2)
    first = Annotation.objects.filter(item=rows[1]).order_by("pk").first()
    Annotation.objects.filter(pk=first.pk).update(value={"label": None})
    kind = get_kind("nli_relabel")
    chunks = []
    part = selectors._vote_part
    monkeypatch.setattr(selectors, "READ_CHUNK", 7)
    monkeypatch.setattr(selectors, "_vote_part", lambda cast, keep=None: chunks.append(len(cast)) or part(cast, keep))
    for item_ids in (None, sorted(item.pk for item in rows[::3])):
        pool = selectors.project_vote_arrays(project, kind, author_votes=True, item_ids=item_ids)
        votes, items = project_votes(project, kind, author_votes=True, item_ids=item_ids)
        assert as_tuples(pool) == sorted(votes, key=repr)
        assert pool.item_ids.tolist() == sorted(items)
        assert pool.closed.tolist() == [items[pk][1] != Item.Status.OPEN for pk in sorted(items)]
        assert pool.votes.item.dtype == np.int32 and pool.votes.label.dtype == np.int8
    assert chunks and max(chunks) <= 7
    assert rows[0].pk not in {item_id for item_id, annotator, _label in votes if annotator != selectors.IMPORTED}


@pytest.mark.postgres
def test_the_aggregates_are_written_a_batch_at_a_time_in_one_transaction(make_user, monkeypatch):
    from annotation.kinds.registry import get_kind
    from annotation.metrics.aggregation import aggregate
    from annotation.models import Item, ItemAggregate
    from annotation.services import aggregation as service

    project, rows, people = build(make_user, 30, seed=5)
    monkeypatch.setattr(service, "AGGREGATE_BATCH", 4)
    batches = []
    upsert = service._staging_upsert

    def counting(rows, now):
        rows = list(rows)
        batches.append(len(rows))
        upsert(iter(rows), now)

    monkeypatch.setattr(service, "_staging_upsert", counting)
    service.aggregation_compute_for_project(project, full=True)
    assert batches and max(batches) <= 4 * len(METHODS)
    kind = get_kind("nli_relabel")
    votes, items = project_votes(project, kind, author_votes=kind.aggregates_by_consensus)
    closed = {pk for pk, (_round, status) in items.items() if status != Item.Status.OPEN}
    stored = {
        (item_id, method): (label, confidence, contributions)
        for item_id, method, label, confidence, contributions in ItemAggregate.objects.filter(
            item__project=project
        ).values_list("item_id", "method", "label", "confidence", "contributions")
    }
    assert sum(batches) == len(stored) == len(closed) * len(METHODS)
    for method in METHODS:
        expected = aggregate(votes, method, labels=kind.labels, k=2, n=3)
        for item_id in closed:
            label, confidence = expected.items[item_id]
            got_label, got_confidence, contributions = stored[(item_id, method)]
            assert (got_label, got_confidence) == ((label or ""), pytest.approx(confidence))
            agree = sorted(
                [annotator, int(given == label)]
                for voted, annotator, given in votes
                if voted == item_id and isinstance(annotator, int)
            )
            assert contributions == (agree if method in ("k_of_n", "majority") and label else [])

    # A run that fails after its first batch leaves every aggregate as the run before wrote it.
    before = sorted(ItemAggregate.objects.filter(item__project=project).values_list("item_id", "method", "label"))
    for item in rows:
        if item.status != Item.Status.OPEN:
            for person in people:
                vote(project, item, person, "contradiction")
    calls = []

    def failing(rows, now):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("the database went away")
        upsert(rows, now)

    monkeypatch.setattr(service, "_staging_upsert", failing)
    with pytest.raises(RuntimeError):
        service.aggregation_compute_for_project(project, full=True)
    after = sorted(ItemAggregate.objects.filter(item__project=project).values_list("item_id", "method", "label"))
    assert after == before
