"""The built-in model (docs/kinds.md "Model in the loop"): on the worker, learn from the
project's decided items, store predictions for its undecided ones as the next version of
the prediction set BUILT_IN_NAME, and score the model on the dev split, where it appears
on the evaluations' leaderboard by itself.

- Input: the kind's texts of an item (`Kind.model_texts`); labels: the project's gold as
  model evaluation reads it (`EvaluationScorer.gold`).
- Learns from: gold items whose round is decided (not open, not deciding), outside the dev
  and test splits. Predicts: the items still open or deciding (probes excluded).
- Retraining: after every `retrain_every` new decisions (0: only when a supervisor asks,
  `POST /api/projects/{slug}/predictions/train/`). The decision ledger tells this module
  after a transaction that decided items commits (`decisions_listen`); it never writes
  gold itself."""

from __future__ import annotations

import hashlib

from django.db import transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from annotation.access import access_project_for_supervisor
from annotation.errors import Conflict, InvalidInput
from annotation.kinds.base import Kind
from annotation.kinds.registry import get_kind, kind_title
from annotation.metrics.uncertainty import margin_of
from annotation.models import Decision, Evaluation, Item, Job, PredictionSet, Project
from annotation.release.curation_jobs import release_run_audit
from annotation.release.evaluation import score
from annotation.release.evaluation_figures import per_item_pack
from annotation.release.prediction_sets import label_reader_for, prediction_set_store
from annotation.services.decisions import RANK_ROUND_RULE
from annotation.services.jobs import job_create, job_set_progress
from annotation.stored_text import stored_message

JOB_TYPE = "model_train"
BUILT_IN_NAME = "built-in baseline"
DEV_SPLIT = "dev"
HELD_OUT_SPLITS = ("dev", "test")
UNDECIDED = (Item.Status.OPEN, Item.Status.DECIDING)


def _check_project(project: Project):
    """The project's label reader, or a 400 naming `kind` when its kind has no closed label
    set or no texts for the model (`Kind.model_texts` left as the base's, which reads a pair,
    on a kind without one)."""
    reader = label_reader_for(project)
    kind = type(get_kind(project.kind))
    if kind.model_texts is Kind.model_texts and kind.pair_texts is Kind.pair_texts:
        raise InvalidInput(
            _("the built-in model does not read items of the kind “%(kind)s”") % {"kind": kind_title(project.kind)},
            field="kind",
        )
    return reader


def model_train_request(*, user, slug: str) -> Job:
    """Queue a training run of the built-in model (supervisors); 409 while one is queued or
    running."""
    project = access_project_for_supervisor(user, slug)
    _check_project(project)
    job = model_train_start(project, user=user)
    if job is None:
        raise Conflict(_("the built-in model is training already; wait until it is done"), field="project")
    return job


def model_train_start(project: Project, *, user=None) -> Job | None:
    """A queued training job of `project`, or None while one is queued or running (under
    the project's row lock, so two callers cannot both start one)."""
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).first()
        running = Job.objects.filter(project=project, kind=JOB_TYPE, status__in=(Job.Status.QUEUED, Job.Status.RUNNING))
        if running.exists():
            return None
        job = job_create(
            kind=JOB_TYPE, project=project, user=user, params={"last_decision": latest_decision_id(project)}
        )
        if user is not None:
            release_run_audit(user, project, job)
    return job


def latest_decision_id(project: Project) -> int:
    return Decision.objects.filter(item__project=project).order_by("-pk").values_list("pk", flat=True).first() or 0


def decisions_after(project: Project, last_id: int, at_most: int) -> int:
    """Decisions that closed a round of the project after decision `last_id` (what
    `retrain_every` counts), counted up to `at_most`: a bounded read on every decision's commit."""
    new = (
        Decision.objects.filter(item__project=project, pk__gt=last_id, rank__gte=RANK_ROUND_RULE)
        .exclude(status=Item.Status.OPEN)
        .values_list("pk", flat=True)
    )
    return len(new[:at_most])


def model_retrain_if_due(project_id: int) -> None:
    """After decisions of the project commit: queue a training run once `retrain_every` new
    decisions have been made since the latest built-in set (or since none)."""
    # Called after every commit that decided items: read only what says whether training is on.
    project = Project.objects.filter(pk=project_id).only("pk", "kind", "settings", "language").first()
    if project is None:
        return
    every = get_kind(project.kind).project_settings(project).get("retrain_every") or 0
    if every <= 0:
        return
    latest = PredictionSet.objects.filter(project=project, source=PredictionSet.Source.BUILT_IN).first()
    if decisions_after(project, latest.last_decision if latest is not None else 0, every) >= every:
        model_train_start(Project.objects.get(pk=project_id))


def model_train_job(job: Job) -> dict:
    """The "model_train" job. Idempotent: a run whose set is stored already answers with it."""
    from annotation.metrics import baseline  # scikit-learn: on the worker only

    done = PredictionSet.objects.filter(job=job).first()
    if done is not None:
        return {"prediction_set": done.pk, "version": done.version, "items": done.items, "figures": done.figures}
    project = job.project
    kind = get_kind(project.kind)
    try:
        reader = _check_project(project)
    except InvalidInput as exc:
        return {"errors": [error.as_dict() for error in exc.errors]}
    scorer = reader.scorer
    gold = scorer.gold(project, None)
    rows = Item.objects.filter(project=project, probe_of__isnull=True).exclude(status=Item.Status.REMOVED)
    learn, learn_labels, predict = [], [], []
    dev_keys = []
    for pk, key, payload, split, status in rows.values_list("pk", "external_id", "payload", "split", "status"):
        texts = kind.model_texts(payload)
        if key in gold and split == DEV_SPLIT:
            dev_keys.append((key, texts))
        if status in UNDECIDED:
            predict.append((pk, texts))
        elif key in gold and split not in HELD_OUT_SPLITS:
            learn.append(texts)
            learn_labels.append(gold[key][0])
    if len(set(learn_labels)) < 2:
        reason = gettext_noop(
            "the built-in model needs decided items of at least two labels outside the dev and test splits"
        )
        return {"errors": [{"field": "project", **stored_message(reason)}]}
    job_set_progress(job.pk, 0.1)
    model = baseline.fit(learn, learn_labels, n_labels=len(scorer.labels))
    job_set_progress(job.pk, 0.5)
    stored = {}
    if predict:
        probabilities = baseline.predict_proba(model, [texts for _pk, texts in predict])
        for (pk, _texts), row in zip(predict, probabilities):
            scores = {label: round(float(p), 6) for label, p in zip(scorer.labels, row)}
            stored[pk] = (scorer.labels[int(row.argmax())], scores, margin_of(row))
    figures, evaluation_arrays = None, None
    if dev_keys:
        dev_gold = {key: gold[key] for key, _texts in dev_keys}
        predicted = baseline.predict_proba(model, [texts for _key, texts in dev_keys]).argmax(axis=1)
        predictions = {
            key: scorer.clean({"id": key, "prediction": scorer.labels[int(index)]}, 0)[0]
            for (key, _texts), index in zip(dev_keys, predicted)
        }
        full, evaluation_arrays = score(scorer, project, dev_gold, predictions)
        figures = {
            "split": DEV_SPLIT,
            "items": len(dev_gold),
            "accuracy": full["accuracy"]["value"],
            "macro_f1": full["macro_f1"]["value"],
        }
    job_set_progress(job.pk, 0.9)
    with transaction.atomic():
        prediction_set = prediction_set_store(
            project=project, name=BUILT_IN_NAME, rows=stored, source=PredictionSet.Source.BUILT_IN, job=job,
            trained_on=len(learn), last_decision=job.params.get("last_decision", 0), figures=figures,
        )  # fmt: skip
        if figures is not None:
            # The model version on the leaderboard, beside the uploaded evaluations.
            Evaluation.objects.create(
                project=project, name=f"{BUILT_IN_NAME} v{prediction_set.version}", split=DEV_SPLIT, job=job,
                digest=hashlib.sha256(f"prediction-set:{prediction_set.pk}".encode()).hexdigest(),
                items=len(dev_keys), figures=full, per_item=per_item_pack([key for key, _t in dev_keys], evaluation_arrays),
            )  # fmt: skip
    return {
        "prediction_set": prediction_set.pk,
        "version": prediction_set.version,
        "items": len(stored),
        "trained_on": len(learn),
        "figures": figures,
    }
