"""A large qa_authoring project's report (HeQ's quality signals) is kept as per-item counts
on the worker: after random questions authored, graded, validated, answers corrected,
audits drawn and marked, paragraphs removed, deleted and imported, the run given the
items the services recorded as changed stores the report a small project computes per
request, and the shares a run over every item stores. A service that changes what the
report shows without recording its item leaves the kept report behind, and the test fails."""

import itertools
import os
import random

import pytest
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from tests.kinds.qa.test_api import JERUSALEM, PARAGRAPH, START
from tests.services.test_incremental_figures import live_sections, stored

pytestmark = pytest.mark.django_db

PROJECTS = itertools.count()
CREATED = itertools.count()
ARTICLES = ("ערים", "חברות", "", "")  # "": the paragraph is its own article
GRADES = ("rejected", "verified", "good", "gold")
# Spans of the paragraph a question may have as its answer.
SPANS = (
    {"start": START, "text": JERUSALEM},
    {"start": PARAGRAPH.index("1948"), "text": "1948"},
    {"start": PARAGRAPH.index("אמנון"), "text": "אמנון שעשוע"},
)
QUESTIONS = ("באיזו עיר נוסדה Mobileye?", "מתי קמה המדינה?", "מי ייסד את החברה?", "ספר על העיר", "איפה?")


@pytest.fixture(autouse=True)
def counted_runs(settings, monkeypatch):
    """Figures stored from 10 items; requests run here and only record their changes (no
    job: the test runs the aggregation itself), every run after the first incremental."""
    settings.MASHOV_FIGURES_LIVE_ITEMS = 10
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.MASHOV_AGGREGATION_INCREMENTAL_ITEMS = 1
    settings.MASHOV_AGGREGATION_FULL_SHARE = 1000
    settings.MASHOV_AGGREGATION_FULL_SECONDS = 10**9
    monkeypatch.setattr("annotation.services.jobs.job_create", lambda **kwargs: None)


def paragraph(rng: random.Random, index: int) -> dict:
    """An item's fields: our paragraph, some of the file's questions, an article, and a split
    the file fixes now and then."""
    questions = []
    for number in range(rng.randint(0, 3)):
        span = rng.choice(SPANS)
        impossible = rng.random() < 0.2
        questions.append(
            {"id": f"q{index}-{number}", "question": rng.choice(QUESTIONS), "is_impossible": impossible,
             "answers": [] if impossible else [{"text": span["text"], "answer_start": span["start"]}],
             **({"question quality": "rejected"} if rng.random() < 0.15 else {})}
        )  # fmt: skip
    return {
        "external_id": f"p{index}",
        "group": rng.choice(ARTICLES),
        "split": rng.choice(("", "", "", "dev", "train")),
        "payload": {"context": PARAGRAPH, "title": "כותרת", "questions": questions},
    }


def value(rng: random.Random) -> dict:
    questions = []
    for _ in range(rng.randint(1, 3)):
        answerable = rng.random() < 0.8
        questions.append(
            {"question": rng.choice(QUESTIONS), "answerable": answerable,
             "answer": rng.choice(SPANS) if answerable else None}
        )  # fmt: skip
    return {"questions": questions}


def build(make_user, size: int, *, seed: int):
    from annotation.models import Item, Membership
    from annotation.services.projects import project_create

    rng = random.Random(seed)
    slug = f"qa-counts-{next(PROJECTS)}"
    supervisor = make_user(f"{slug}-sup", staff=True)
    project = project_create(
        actor=supervisor, slug=slug, name=slug, kind="qa_authoring", language="he",
        settings={"min_questions": 1, "dev_share": 0.2, "test_share": 0.2, "review_rate": 0.5},
    )  # fmt: skip
    people = {"sup": supervisor}
    for name, role, status, trusted in (
        ("sup", "supervisor", "active", False),
        ("rev", "reviewer", "active", False),
        ("t1", "annotator", "trial", False),
        ("a1", "annotator", "active", False),
        ("v1", "annotator", "active", True),
    ):
        if name != "sup":
            people[name] = make_user(f"{slug}-{name}")
        Membership.objects.update_or_create(  # the creator is a member already
            project=project, user=people[name], defaults={"role": role, "status": status, "trusted": trusted}
        )
    Item.objects.bulk_create(
        Item(project=project, position=index, status="open", **paragraph(rng, index)) for index in range(size)
    )
    for _ in range(size // 2):
        author(project, people, rng)
    return project, people


def author(project, people, rng: random.Random) -> None:
    """One of the annotators claims a paragraph and submits its questions."""
    from annotation.models import Assignment
    from annotation.services.assignments import annotation_submit, assignment_next_for_annotator

    person = people[rng.choice(("t1", "a1", "v1"))]
    claim = assignment_next_for_annotator(user=person, slug=project.slug)
    if isinstance(claim, Assignment):
        annotation_submit(user=person, assignment_id=claim.pk, value=value(rng))


def act(project, people, action: str, rng: random.Random) -> None:
    """One change, made through the service a person would call (refusals are part of the
    game); an item removed or deleted is recorded here, as no service of the kind does it."""
    from annotation.errors import Conflict, InvalidInput, NotFound, PermissionDenied
    from annotation.kinds.qa.audit import audit_mark, audit_sample_draw
    from annotation.kinds.qa.corrections import answer_correct
    from annotation.kinds.qa.validation import validation_submit
    from annotation.models import Annotation, Item, QuestionAudit
    from annotation.services.aggregation import aggregation_request_on_commit
    from annotation.services.reviews import review_create

    annotations = list(Annotation.objects.filter(item__project=project).order_by("pk"))
    items = list(Item.objects.filter(project=project).order_by("pk"))
    try:
        if action == "author":
            author(project, people, rng)
        elif action == "review" and annotations:
            annotation = rng.choice(annotations)
            review_create(user=people[rng.choice(("rev", "sup"))], annotation_id=annotation.pk,
                          grade=rng.choice(GRADES), question=rng.randrange(len(annotation.value["questions"])))  # fmt: skip
        elif action == "validate":
            person = people[rng.choice(("rev", "a1", "v1", "sup"))]
            span = rng.choice((*SPANS, None))
            imported = [(item, q["id"]) for item in items for q in item.payload["questions"]]
            if imported and (rng.random() < 0.5 or not annotations):
                item, key = rng.choice(imported)
                validation_submit(user=person, item_id=item.pk, question_key=key, answerable=span is not None,
                                  answer=span)  # fmt: skip
            elif annotations:
                annotation = rng.choice(annotations)
                validation_submit(user=person, annotation_id=annotation.pk, answerable=span is not None, answer=span,
                                  question=rng.randrange(len(annotation.value["questions"])))  # fmt: skip
        elif action == "correct" and annotations:
            annotation = rng.choice(annotations)
            answer_correct(user=people["sup"], item_id=annotation.item_id,
                           body={"annotation": annotation.pk, "question": 0, "answer": rng.choice(SPANS)})  # fmt: skip
        elif action == "audit":
            entries = list(QuestionAudit.objects.filter(project=project).values_list("pk", flat=True))
            if entries and rng.random() < 0.7:
                audit_mark(user=people["sup"], slug=project.slug, audit_id=rng.choice(entries),
                           question_correct=rng.random() < 0.7, span_correct=rng.choice((True, False, None)))  # fmt: skip
            else:
                audit_sample_draw(user=people["sup"], slug=project.slug, per_source=rng.randint(1, 4),
                                  seed=rng.randint(0, 3))  # fmt: skip
        elif action == "remove" and items:
            item = rng.choice(items)
            Item.objects.filter(pk=item.pk).update(status=Item.Status.REMOVED)
            aggregation_request_on_commit(project.pk, [item.pk])
        elif action == "delete" and len(items) > 5:
            item = rng.choice(items)
            Item.objects.filter(pk=item.pk).delete()
            aggregation_request_on_commit(project.pk, [item.pk])
        elif action == "import":
            index = 1000 + next(CREATED)
            Item.objects.create(project=project, position=index, status="open", **paragraph(rng, index))
    except (Conflict, InvalidInput, NotFound, PermissionDenied):
        pass


ACTIONS = ("author", "author", "review", "review", "validate", "validate", "correct", "audit", "remove", "delete",
           "import")  # fmt: skip


@hypothesis_settings(
    max_examples=int(os.environ.get("EXAMPLES", 6)),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    # A failing example is reported as found: shrinking one rebuilds the project per try.
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
@given(
    batches=st.lists(st.lists(st.sampled_from(ACTIONS), min_size=1, max_size=8), min_size=1, max_size=3),
    seed=st.integers(0, 3),
)
def test_the_kept_report_equals_the_report_computed_whole(make_user, django_capture_on_commit_callbacks, batches, seed):
    from annotation.models import AggregationChange
    from annotation.services.aggregation import aggregation_compute_for_project

    rng = random.Random(seed)
    project, people = build(make_user, 16, seed=seed)
    aggregation_compute_for_project(project, full=True)
    assert stored(project)["report_sections"] == live_sections(project)
    for changes in batches:  # several runs, each reading only the items recorded as changed
        for action in changes:
            with django_capture_on_commit_callbacks(execute=True):
                act(project, people, action, rng)
        assert not AggregationChange.objects.filter(project=project, item_id__isnull=True).exists()
        assert aggregation_compute_for_project(project)["full"] is False
        incremental = stored(project)
        assert incremental["report_sections"] == live_sections(project)
    aggregation_compute_for_project(project, full=True)  # every item read anew
    whole = stored(project)
    sums, kept = (figures.pop("figure_sums") for figures in (whole, incremental))
    assert {
        name: (kept.get(name), n) for name, n in sums.items() if name != "values_through" and n != kept.get(name)
    } == {}
    assert whole == incremental
    assert sums["report"]["questions"]  # kept, not read whole


def test_audits_and_settings_ask_for_a_run(make_user, django_capture_on_commit_callbacks):
    """The audit is read from its sample and the settings apply to the summed counts: a draw,
    a mark and a settings change ask for a run that reads no item, which stores the report
    anew; a change of the letter folding, which every item's share follows, one over every
    item."""
    from annotation.kinds.qa.audit import audit_mark, audit_sample_draw
    from annotation.models import AggregationChange, Project, QuestionAudit
    from annotation.services.aggregation import aggregation_compute_for_project
    from annotation.services.projects import project_update

    project, people = build(make_user, 12, seed=1)
    aggregation_compute_for_project(project, full=True)

    def requested() -> int:
        return Project.objects.get(pk=project.pk).aggregation_requested

    before = requested()
    with django_capture_on_commit_callbacks(execute=True):
        audit_sample_draw(user=people["sup"], slug=project.slug, per_source=3, seed=2)
    assert requested() == before + 1 and not AggregationChange.objects.filter(project=project).exists()
    assert stored(project)["report_sections"]["final_audit"] is None
    assert aggregation_compute_for_project(project)["full"] is False
    assert stored(project)["report_sections"] == live_sections(project)
    entry = QuestionAudit.objects.filter(project=project).first()
    with django_capture_on_commit_callbacks(execute=True):
        audit_mark(user=people["sup"], slug=project.slug, audit_id=entry.pk, question_correct=False, span_correct=True)
    assert requested() == before + 2
    aggregation_compute_for_project(project)
    assert stored(project)["report_sections"]["final_audit"]["all"]["marked"] == 1
    with django_capture_on_commit_callbacks(execute=True):
        project_update(actor=people["sup"], slug=project.slug, changes={"settings": {"validators_per_question": 1}})
    project.refresh_from_db()  # as the worker reads it
    assert requested() == before + 3 and not AggregationChange.objects.filter(project=project).exists()
    assert aggregation_compute_for_project(project)["full"] is False
    assert stored(project)["report_sections"] == live_sections(project)
    assert stored(project)["report_sections"]["validation"]["validators_per_question"] == 1
    with django_capture_on_commit_callbacks(execute=True):
        project_update(actor=people["sup"], slug=project.slug, changes={"settings": {"fold_letter_variants": True}})
    assert list(AggregationChange.objects.filter(project=project).values_list("item_id", flat=True)) == [None]
    assert aggregation_compute_for_project(project)["full"] is True


def test_the_oldest_waiting_annotation_is_the_first_with_a_question_not_graded(make_user, monkeypatch):
    """The backlog's oldest annotation is looked for in its day's annotations by time, a
    chunk at a time: one whose every question is graded no longer waits."""
    from annotation.kinds.registry import get_kind
    from annotation.models import Annotation, Review

    monkeypatch.setattr("annotation.kinds.qa.quality.OLDEST_CHUNK", 1)
    project, people = build(make_user, 8, seed=2)
    annotations = list(Annotation.objects.filter(item__project=project).order_by("created_at", "pk"))
    assert len(annotations) >= 3
    Annotation.objects.filter(pk__in=[a.pk for a in annotations]).update(review_required=True)
    for annotation in annotations[:2]:
        for index in range(len(annotation.value["questions"])):
            Review.objects.create(annotation=annotation, question=index, grade="good", reviewer=people["rev"])
    backlog = get_kind(project.kind).report_sections(project)["review_backlog"]
    assert backlog["oldest"] == annotations[2].created_at
    assert backlog["annotations"] == len(annotations) - 2


def test_a_split_run_records_the_items_it_moves(make_user, django_capture_on_commit_callbacks):
    """The split job writes `Item.split`, which places a paragraph's questions in the
    article split and the validation queue's progress, and which the item browser's
    filters offer: the run after it, reading the items recorded as changed, stores the
    report a small project computes per request and the filter values a run over every
    item stores."""
    from annotation.models import Item, Job
    from annotation.release.splits import splits_compute_job
    from annotation.services.aggregation import aggregation_compute_for_project

    project, people = build(make_user, 16, seed=3)
    project.settings = {**project.settings, "validate_splits": ["train"]}
    project.save(update_fields=["settings"])
    aggregation_compute_for_project(project, full=True)
    job = Job.objects.create(
        kind="splits", project=project, created_by=people["sup"],
        params={"shares": {"train": 0.5, "dev": 0.25, "test": 0.25}, "seed": 7, "leak_threshold": None},
    )  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        assert splits_compute_job(job)["changed"]
    assert not Item.objects.filter(project=project, split="").exists()
    assert aggregation_compute_for_project(project)["full"] is False
    incremental = stored(project)
    assert incremental["report_sections"] == live_sections(project)
    aggregation_compute_for_project(project, full=True)  # the filter values too
    assert stored(project)["item_values"] == incremental["item_values"]


def test_a_user_deleted_since_the_counts_were_kept_is_shown_by_id_until_the_full_run(
    make_user, django_capture_on_commit_callbacks
):
    """Deleting a user (an administrator's act; the product deactivates) takes their work
    with it but records no changed item: the next run's report names their kept grades by
    id instead of failing, and the full run takes them out."""
    from annotation.models import Annotation, Review
    from annotation.services.aggregation import aggregation_compute_for_project

    project, people = build(make_user, 12, seed=1)
    annotation = Annotation.objects.filter(item__project=project).order_by("pk").first()
    assert annotation is not None
    with django_capture_on_commit_callbacks(execute=True):
        act(project, people, "review", random.Random(0))
    aggregation_compute_for_project(project, full=True)
    graded = {review.annotation.annotator for review in Review.objects.filter(annotation__item__project=project)}
    assert graded
    gone = sorted(graded, key=lambda user: user.pk)[0]
    gone_id = gone.pk
    gone.delete()
    aggregation_compute_for_project(project)
    names = [row["annotator"] for row in stored(project)["report_sections"]["grades_per_annotator"]]
    assert f"#{gone_id}" in names
    aggregation_compute_for_project(project, full=True)
    assert stored(project)["report_sections"] == live_sections(project)
    assert f"#{gone_id}" not in [row["annotator"] for row in stored(project)["report_sections"]["grades_per_annotator"]]
