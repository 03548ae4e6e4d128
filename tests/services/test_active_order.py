"""Active-learning order (docs/kinds.md "Model in the loop"): the `order` setting changes which
item comes next, item by item, within every rule of the engine; the engine reads the stored
priority through its index, and `next` costs no more statements than in sequential order."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.metrics.uncertainty import margin_of
from annotation.models import Item
from annotation.release.prediction_sets import prediction_set_store
from annotation.services.assignments import annotation_submit, assignment_next_for_annotator
from annotation.services.projects import project_update
from tests.services.test_adaptive_overlap import STATEMENTS_NEXT_OFF, statements
from tests.services.test_assignment_rules import add_items, draw, label_everything, make_project  # noqa: F401

pytestmark = pytest.mark.django_db

# Margins of the fixed predictions: i3 least certain, then i0, i4, i1; i2 is not predicted.
SCORES = {
    "i0": {"entailment": 0.5, "neutral": 0.3, "contradiction": 0.2},  # margin 0.2
    "i1": {"entailment": 0.9, "neutral": 0.05, "contradiction": 0.05},  # 0.85
    "i3": {"entailment": 0.4, "neutral": 0.35, "contradiction": 0.25},  # 0.05
    "i4": {"entailment": 0.1, "neutral": 0.2, "contradiction": 0.7},  # 0.5
}
UNCERTAIN_FIRST = ["i3", "i0", "i4", "i1", "i2"]


def predict(project, scores=SCORES, name="fixed"):
    rows = {}
    for key, probabilities in scores.items():
        label = max(probabilities, key=probabilities.get)
        rows[Item.objects.get(project=project, external_id=key).pk] = (
            label,
            probabilities,
            margin_of(probabilities.values()),
        )
    return prediction_set_store(project=project, name=name, rows=rows)


def set_order(project, order, admin):
    return project_update(actor=admin, slug=project.slug, changes={"settings": {"order": order}})


def admin_of(project):
    return project.created_by


def served_keys(user, project):
    return [assignment.item.external_id for assignment in label_everything(user, project)]


def test_uncertainty_order_serves_the_least_margin_first_item_by_item(make_project):
    project, users = make_project(annotators=1)
    add_items(project, 5)
    predict(project)
    set_order(project, "uncertainty", admin_of(project))
    assert served_keys(users[0], project) == UNCERTAIN_FIRST


def test_a_new_prediction_set_reorders_the_items_still_open(make_project):
    project, users = make_project(annotators=1)
    add_items(project, 5)
    set_order(project, "uncertainty", admin_of(project))
    predict(project)
    first = draw(users[0], project)
    assert first.item.external_id == "i3"
    annotation_submit(user=users[0], assignment_id=first.pk, value={"label": "neutral"})
    # The latest set alone counts: now i1 is the least certain.
    predict(project, {"i1": {"entailment": 0.5, "neutral": 0.5}, "i0": {"entailment": 1.0}}, name="second")
    assert served_keys(users[0], project)[:2] == ["i1", "i0"]


def test_sequential_order_is_unchanged_by_predictions(make_project):
    project, users = make_project(annotators=1)
    add_items(project, 5)
    predict(project)
    # Sequential (the default) walks the shuffle keys from a random point: force a walk
    # that is not the uncertainty order.
    for index, key in enumerate(["i1", "i2", "i3", "i4", "i0"]):
        Item.objects.filter(project=project, external_id=key).update(shuffle_key=index / 10)
    served = served_keys(users[0], project)
    assert sorted(served) == sorted(UNCERTAIN_FIRST) and served != UNCERTAIN_FIRST


def test_random_order_serves_the_shuffled_order_from_its_head(make_project):
    project, users = make_project(annotators=1)
    add_items(project, 6)
    set_order(project, "random", admin_of(project))
    expected = list(Item.objects.filter(project=project).order_by("shuffle_key").values_list("external_id", flat=True))
    assert served_keys(users[0], project) == expected


def test_disagreement_order_serves_the_split_votes_first(make_project):
    project, users = make_project(annotators=4)
    add_items(project, 4)
    set_order(project, "disagreement", admin_of(project))
    # Two annotators label i0 and i1 first: they agree on i0, split on i1.
    for item_key, labels in (("i0", ("neutral", "neutral")), ("i1", ("neutral", "entailment"))):
        for user, label in zip(users[:2], labels):
            # Served first, to set the scene (each vote moves the item again).
            Item.objects.filter(project=project, external_id=item_key).update(priority=-1.0)
            assignment = draw(user, project)
            assert assignment.item.external_id == item_key
            annotation_submit(user=user, assignment_id=assignment.pk, value={"label": label})
    assert Item.objects.get(project=project, external_id="i1").priority == 0.5
    assert Item.objects.get(project=project, external_id="i0").priority == 1.0
    assert draw(users[2], project).item.external_id == "i1"


def test_the_engine_keeps_its_rules_in_uncertainty_order(make_project):
    """Own items, the same premise twice in a row, items already labelled, and full items
    are skipped however uncertain."""
    project, users = make_project(annotators=2)
    add_items(project, 5)
    Item.objects.filter(project=project, external_id="i3").update(author=users[0])
    # i0 and i4 share a premise: after i0, i4 waits while another item is open.
    Item.objects.filter(project=project, external_id__in=["i0", "i4"]).update(group="same-premise")
    predict(project, {**SCORES, "i4": {"entailment": 0.41, "neutral": 0.39, "contradiction": 0.2}})
    set_order(project, "uncertainty", admin_of(project))
    # i3 (least certain) is users[0]'s own item; then i4 (0.02), i0 (0.2) share a premise.
    assert served_keys(users[0], project) == ["i4", "i1", "i0", "i2"]


def test_next_costs_no_more_statements_in_uncertainty_order(make_project):
    project, users = make_project(annotators=2)
    add_items(project, 5)
    predict(project)
    set_order(project, "uncertainty", admin_of(project))
    with CaptureQueriesContext(connection) as queries:
        assignment_next_for_annotator(user=users[0], slug=project.slug)
    assert len(statements(queries)) == STATEMENTS_NEXT_OFF


@pytest.mark.postgres
def test_next_reads_the_priority_index(make_project):
    project, _users = make_project(annotators=1)
    Item.objects.bulk_create(
        Item(project=project, external_id=f"x{i}", payload={"premise": f"p{i}", "hypothesis": "h"}, position=i)
        for i in range(3000)
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE annotation_item")
        cursor.execute(
            "EXPLAIN SELECT id FROM annotation_item i WHERE i.project_id = %s AND i.status = 'open'"
            " ORDER BY i.priority ASC, i.shuffle_key ASC LIMIT 1",
            [project.pk],
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "item_priority_idx" in plan, plan


@pytest.mark.postgres
def test_fifty_annotators_in_uncertainty_order(transactional_db, make_user):
    """50 concurrent annotators all asking for the same least-certain items: SKIP LOCKED and
    the slot re-check keep every guarantee — no over-fill, nobody twice on one item, every
    item completed."""
    import random

    from annotation.errors import Conflict
    from tests.services.test_concurrency import (
        ITEMS,
        LABELS,
        THREADS,
        VOTES,
        assert_every_item_completed,
        assert_no_overfill_no_doubles,
        make_crowd,
        run_threads,
    )

    project, users = make_crowd(
        make_user, annotators=THREADS, items=ITEMS, slug="uncertain", settings={"order": "uncertainty"}
    )
    draw_of = random.Random(7)
    rows = {}
    for item in Item.objects.filter(project=project):
        first = draw_of.random()
        probabilities = {"entailment": first, "neutral": 1 - first}
        rows[item.pk] = ("entailment", probabilities, margin_of(probabilities.values()))
    prediction_set_store(project=project, name="m", rows=rows)
    assert Item.objects.filter(project=project, priority__lt=1.0).count() == ITEMS

    def annotate(user, index):
        for step in range(ITEMS + 5):
            assignment = assignment_next_for_annotator(user=user, slug=project.slug)
            if assignment is None:
                return
            try:
                annotation_submit(user=user, assignment_id=assignment.pk, value={"label": LABELS[(index + step) % 3]})
            except Conflict:
                pass
        raise AssertionError(f"{user.username} was served more than {ITEMS} items")

    errors = run_threads(annotate, [(u, i) for i, u in enumerate(users)])
    assert_no_overfill_no_doubles(project, VOTES)
    assert errors == [], errors[0]
    assert_every_item_completed(project, VOTES)


@pytest.mark.parametrize("order", ["random", "uncertainty", "disagreement"])
def test_an_import_places_its_new_items_and_leaves_the_others_where_they_are(make_project, order):
    """An import used to recompute every item's priority (a rewrite of the whole project per
    file): now the new items alone take their place, as a full refresh would give them."""
    import json

    from annotation.services.imports import items_import
    from annotation.services.priorities import item_priorities_refresh

    project, _users = make_project(annotators=1)
    add_items(project, 3)
    set_order(project, order, admin_of(project))
    project.refresh_from_db()
    if order == "uncertainty":
        predict(project, {"i0": SCORES["i0"]})
    # A mark on the items already there: a whole-project refresh would overwrite it.
    Item.objects.filter(project=project).update(priority=-7.0)
    rows = [{"id": f"new{i}", "premise": f"הנחה {i}", "hypothesis": "השערה"} for i in range(4)]
    data = "\n".join(json.dumps(row, ensure_ascii=False) for row in rows).encode()
    assert items_import(project=project, data=data, fmt="jsonl", filename="new.jsonl").created == 4
    assert set(
        Item.objects.filter(project=project, external_id__startswith="i").values_list("priority", flat=True)
    ) == {-7.0}
    placed = dict(Item.objects.filter(project=project, external_id__startswith="new").values_list("pk", "priority"))
    item_priorities_refresh(project)
    refreshed = dict(Item.objects.filter(pk__in=placed).values_list("pk", "priority"))
    assert placed == refreshed
    assert len(set(placed.values())) == (4 if order == "random" else 1)
