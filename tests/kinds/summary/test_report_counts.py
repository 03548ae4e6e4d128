"""A large summary_rating project's report (per system: summaries, ratings, mean ratings
with their bootstrap intervals, the file's scores and the intrinsic measures averaged;
the error table; the correlations; the items measured) is kept as per-item counts on the
worker: after random ratings cast and edited, scores and measures changed, items created,
moved and deleted, the run given the changed items stores the report a small project
computes per request, and the shares a run over every item stores."""

import itertools
import os
import random

import pytest
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from tests.services.test_incremental_figures import live_sections, stored

pytestmark = pytest.mark.django_db

SYSTEMS = ("mt5", "reference", "gpt\tlike", "")
TAGS = ("repetition", "hallucination", "made up\ttag")
RATERS = 3
PROJECTS = itertools.count()
CREATED = itertools.count()
# Scores of the file: floats of every scale, a tiny one kept at the fine scale, and
# values the report skips (not numbers).
SCORES = (0.1, 0.25, 1 / 3, 0.7, 1e-30, 2.0, 7, None, True, "high")


@pytest.fixture(autouse=True)
def small_thresholds(settings):
    settings.MASHOV_FIGURES_LIVE_ITEMS = 10


def payload(rng: random.Random, index: int) -> dict:
    systems = rng.sample(SYSTEMS, rng.choice((1, 2, 3)))
    summaries = [
        {"system": system, "text": f"summary {index} {system}",
         "scores": {name: rng.choice(SCORES) for name in rng.sample(("rouge1", "rougeL", "ROUGE-1"), 2)}}
        for system in systems
    ]  # fmt: skip
    order = list(range(len(summaries)))
    rng.shuffle(order)
    return {"article": f"article {index}", "summaries": summaries, "order": order}


def intrinsic(rng: random.Random, summaries: int) -> dict | None:
    if rng.random() < 0.2:
        return None
    return {
        "summaries": [
            {"novel_ngrams": {"1": rng.choice((0.0, 0.5, 1 / 7)), "2": rng.random()},
             "redundancy": {"1": rng.random()}, "compression_ratio": rng.choice((3, 12.5, 1e-25)),
             "rouge": {"rouge1": rng.random(), "rouge2": None}, "bertscore": rng.choice((0.8, None))}
            for _ in range(summaries)
        ],
        "bertscore_model": rng.choice(("", "xlm-roberta")),
    }  # fmt: skip


def rating(rng: random.Random) -> dict:
    value = {criterion: rng.choice((1, 2, 3, 4, 5, 5, None, "3")) for criterion in ("coherence", "completeness")}
    value["errors"] = rng.sample(TAGS, rng.choice((0, 0, 1, 2)))
    return value


def rate(project, item, person, rng: random.Random):
    """`person`'s ratings of some of the item's summaries: new, or their earlier ones edited."""
    from django.utils import timezone

    from annotation.models import Annotation, Assignment

    shown = len(item.payload["summaries"])
    value = {"ratings": {str(display): rating(rng) for display in rng.sample(range(shown), rng.randint(1, shown))}}
    if Annotation.objects.filter(item=item, annotator=person).update(value=value):
        return
    now = timezone.now()
    claim = Assignment.objects.create(
        project=project, item=item, annotator=person, round=1, status="submitted",
        claimed_at=now, expires_at=now, submitted_at=now,
    )  # fmt: skip
    Annotation.objects.create(assignment=claim, item=item, annotator=person, round=1, value=value)


def build(make_user, size: int, *, seed: int):
    from annotation.models import Item, Membership
    from annotation.services.projects import project_create

    rng = random.Random(seed)
    slug = f"summary-counts-{next(PROJECTS)}"
    project = project_create(
        actor=make_user(f"{slug}-sup", staff=True), slug=slug, name=slug, kind="summary_rating", language="he",
        settings={"error_tags": ["hallucination", "repetition"]},
    )  # fmt: skip
    people = [make_user(f"{slug}-r{index}") for index in range(RATERS)]
    Membership.objects.bulk_create(
        Membership(project=project, user=user, role="annotator", status="active") for user in people
    )
    rows = []
    for i in range(size):
        content = payload(rng, i)
        rows.append(
            Item(project=project, external_id=f"a{i}", position=rng.randint(0, size), status="open",
                 payload=content, computed={"intrinsic": intrinsic(rng, len(content["summaries"]))})
        )  # fmt: skip
    rows = Item.objects.bulk_create(rows)
    for item in rows:
        for person in rng.sample(people, rng.randint(0, RATERS)):
            rate(project, item, person, rng)
    return project, rows, people


def apply(project, rows, people, changes, rng: random.Random) -> set[int]:
    """Ratings cast or edited, scores and measures changed, an item moved to another
    position, deleted or created (an import names the created ones in no change)."""
    from annotation.models import Item

    changed: set[int] = set()
    for position, action in changes:
        item = rows[position % len(rows)]
        item.refresh_from_db()
        if action == "rate":
            rate(project, item, people[position % RATERS], rng)
        elif action == "scores":
            Item.objects.filter(pk=item.pk).update(payload=payload(rng, position))
        elif action == "measure":
            Item.objects.filter(pk=item.pk).update(
                computed={"intrinsic": intrinsic(rng, len(item.payload["summaries"]))}
            )
        elif action == "move":
            Item.objects.filter(pk=item.pk).update(position=rng.randint(0, 50))
        elif action == "delete":
            if len(rows) > 5:
                Item.objects.filter(pk=item.pk).delete()
                rows.remove(item)
        elif action == "create":
            content = payload(rng, 1000 + next(CREATED))
            new = Item.objects.create(
                project=project, external_id=f"new{next(CREATED)}", position=rng.randint(0, 50), status="open",
                payload=content, computed={"intrinsic": intrinsic(rng, len(content["summaries"]))},
            )  # fmt: skip
            rate(project, new, people[position % RATERS], rng)
            rows.append(new)
            continue
        changed.add(item.pk)
    return changed


changes_strategy = st.lists(
    st.tuples(st.integers(0, 29), st.sampled_from(["rate", "rate", "scores", "measure", "move", "delete", "create"])),
    min_size=1,
    max_size=8,
)


@hypothesis_settings(
    max_examples=int(os.environ.get("EXAMPLES", 8)),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    # A failing example is reported as found: shrinking one rebuilds the project per try.
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
@given(batches=st.lists(changes_strategy, min_size=1, max_size=3), seed=st.integers(0, 3))
def test_the_kept_report_equals_the_report_computed_whole(make_user, batches, seed):
    from annotation.services.figures import project_figures_store

    rng = random.Random(seed)
    project, rows, people = build(make_user, 30, seed=seed)
    project_figures_store(project)
    assert stored(project)["report_sections"] == live_sections(project)
    for changes in batches:  # several runs, each given its changed items only
        changed = apply(project, rows, people, changes, rng)
        project_figures_store(project, sorted(changed))
        incremental = stored(project)
        assert incremental["report_sections"] == live_sections(project)
    project_figures_store(project)  # every item read anew
    whole = stored(project)
    sums, kept = (figures.pop("figure_sums") for figures in (whole, incremental))
    assert {
        name: (kept.get(name), n) for name, n in sums.items() if name != "values_through" and n != kept.get(name)
    } == {}
    assert whole == incremental
    assert sums["report"]["summaries"] and sums["report"]["means"]  # kept, not read whole
    assert "_pairs" not in sums["report"]  # the items' own, in their shares
    report = incremental["report_sections"]
    assert report["systems"] and report["correlations"] and report["error_table"]["rows"]


def test_a_rating_submitted_and_edited_asks_for_a_run_naming_its_item(
    make_user, settings, django_capture_on_commit_callbacks
):
    """No round closes for a summary's report: a rating submitted, then edited, records its
    item for the worker's next run, which keeps the report by it alone."""
    from annotation.models import AggregationChange, Assignment, Job, Membership
    from annotation.services.aggregation import aggregation_compute_for_project
    from annotation.services.annotator_work import annotation_edit
    from annotation.services.assignments import annotation_submit, assignment_next_for_annotator

    settings.CELERY_TASK_ALWAYS_EAGER = True  # the requests and the job run here, in this transaction
    settings.MASHOV_AGGREGATION_INCREMENTAL_ITEMS = 5
    settings.MASHOV_AGGREGATION_FULL_SHARE = 0.5
    project, rows, people = build(make_user, 12, seed=5)
    aggregation_compute_for_project(project, full=True)
    person = make_user("late-rater")
    Membership.objects.create(project=project, user=person, role="annotator", status="active")
    claim = assignment_next_for_annotator(user=person, slug=project.slug)
    assert isinstance(claim, Assignment)
    shown = len(claim.item.payload["summaries"])
    value = {"ratings": {str(d): {"coherence": 5, "completeness": 1, "errors": ["repetition"]} for d in range(shown)}}
    with django_capture_on_commit_callbacks(execute=True):
        annotation = annotation_submit(user=person, assignment_id=claim.pk, value=value)
    job = Job.objects.filter(project=project, kind="aggregation").latest("pk")
    assert job.status == "done" and job.result["full"] is False, job.result
    assert stored(project)["report_sections"] == live_sections(project)
    value["ratings"]["0"]["coherence"] = 2
    with django_capture_on_commit_callbacks(execute=True):
        annotation_edit(user=person, annotation_id=annotation.pk, value=value)
    # Within the debounce: no job, the change waits for the next run.
    assert list(AggregationChange.objects.filter(project=project).values_list("item_id", flat=True)) == [claim.item_id]
    assert stored(project)["report_sections"] != live_sections(project)
    assert aggregation_compute_for_project(project)["full"] is False
    assert stored(project)["report_sections"] == live_sections(project)
    assert not AggregationChange.objects.filter(project=project).exists()
