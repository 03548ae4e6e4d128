"""Model evaluation, the generic part (docs/api.md "Dataset release"; FarsTail Table 5's shape): read a
predictions file, validate it all or nothing against the project's gold, score it on the
worker, store it, compare two evaluations.

What a prediction is and which figures a kind has belong to the kind
(`Kind.evaluation_scorer`, kinds/<kind>/evaluation.py); the bootstrap is
annotation/metrics/evaluation.py. The parts, one concern each:

- `release/evaluation.py` (here): the request and the scoring job.
- `release/predictions.py`: reading and validating a predictions file.
- `release/evaluation_scorers.py`: the kind's scorer and the closed-label-set scorer.
- `release/evaluation_figures.py`: the stored figure tree and per-item arrays.
- `selectors/evaluations.py`: the reads (list, detail, paired comparison).

What they do:

- Files: JSONL `{"id", "prediction"}` (kinds may take more fields: `reversed` for phrase
  pairs), CSV with a header naming `id` and `prediction`, or for QA SQuAD's predictions
  dict `{question id: answer text}` ("" for no answer). Rows are numbered as imports number
  them: JSONL by line, CSV from 1 after the header, a SQuAD dict by entry.
- Validation before anything is stored: unknown, missing and duplicate ids, what the kind
  refuses (unknown labels, non-string answers), NaN and unstorable text; an empty or
  oversize file. One 400 lists every bad row by row and field.
- One evaluation at a time per project (409 while one is queued or running); the job
  scores with a seeded bootstrap (the same file gives the same figures), and stores the
  per-item arrays with the figures, so a paired comparison resamples the same items.
"""

from __future__ import annotations

import hashlib

from django.db import transaction
from django.utils.translation import gettext as _

from annotation.access import access_project_for_supervisor
from annotation.errors import Conflict, InvalidInput
from annotation.kinds.base import EvaluationScorer
from annotation.metrics import evaluation as metrics
from annotation.metrics.text import bidi_control, forbidden_character, may_hold_unstorable_text
from annotation.models import Evaluation, Job, Project
from annotation.release.curation_jobs import release_run_audit
from annotation.release.evaluation_figures import merge, nest, per_item_pack, plain
from annotation.release.evaluation_scorers import scorer_for
from annotation.release.predictions import (
    gold_for,
    read_predictions,
    split_label,
    split_of,
    validate_predictions,
)
from annotation.services.jobs import job_create, job_set_progress
from annotation.wording import fault_text

JOB_TYPE = "evaluation"
MAX_NAME_LENGTH = 200


def evaluation_request(
    *, user, slug: str, data: bytes, filename: str = "", name, split=None, fmt: str = "", options=None
) -> Evaluation:
    """Validate a predictions file against the gold of `split` and queue its scoring.
    Supervisors only. 400 listing every bad row, nothing stored; 409 while another
    evaluation of the project is queued or running. `options`: the kind's choices
    (`EvaluationScorer.options`, e.g. which hard flags the NLI kinds' subsets read)."""
    project = access_project_for_supervisor(user, slug)
    return evaluation_start(
        project=project, user=user, data=data, filename=filename, name=name, split=split, fmt=fmt, options=options
    )


def evaluation_start(
    *, project: Project, user, data: bytes, filename: str = "", name, split=None, fmt: str = "", options=None
) -> Evaluation:
    """`evaluation_request` once the caller may evaluate `project` (the command line's
    operator may: `manage.py evaluate`)."""
    scorer = scorer_for(project)
    chosen = scorer.clean_options(options or {})
    scorer.configure(chosen)
    name = clean_name(name)
    split = split_of(project, split)
    if fmt is not None and not isinstance(fmt, str):
        raise InvalidInput(_("must be a string"), field="format")
    gold = gold_for(project, scorer, split)
    validate_predictions(
        read_predictions(data, filename, fmt or "", scorer),
        gold,
        scorer,
        split_label(split),
        check_strings=may_hold_unstorable_text(data),
    )
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).first()
        running = Job.objects.filter(project=project, kind=JOB_TYPE, status__in=(Job.Status.QUEUED, Job.Status.RUNNING))
        if running.exists():
            raise Conflict(_("another evaluation of this project is running; wait until it is done"), field="file")
        evaluation = Evaluation.objects.create(
            project=project, name=name, split=split or "", created_by=user, digest=hashlib.sha256(data).hexdigest()
        )
        evaluation.job = job_create(
            kind=JOB_TYPE,
            project=project,
            user=user,
            input_data=data,
            params={"evaluation": evaluation.pk, "filename": filename[:200], "format": fmt or "", "options": chosen},
        )
        evaluation.save(update_fields=["job"])
        release_run_audit(user, project, evaluation.job)
    return evaluation


def clean_name(name) -> str:
    if not isinstance(name, str) or not name.strip():
        raise InvalidInput(_("is required: the model's name"), field="name")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidInput(_("is longer than %(n)s characters") % {"n": MAX_NAME_LENGTH}, field="name")
    reason = forbidden_character(name) or bidi_control(name)
    if reason:
        raise InvalidInput(fault_text(reason), field="name")
    return name


def score(
    scorer: EvaluationScorer, project: Project, gold: dict, predictions: dict, progress=None
) -> tuple[dict, dict]:
    """(nested figures with intervals, per-item arrays) of `predictions` on `gold`."""
    arrays = scorer.arrays(project, gold, predictions)
    estimates = metrics.bootstrap(scorer.statistic(arrays), len(gold), progress=progress)
    figures = nest({name: estimate.as_dict() for name, estimate in estimates.items()})
    merge(figures, scorer.extras(arrays))
    figures["items"] = len(gold)
    return figures, arrays


def evaluation_run_job(job: Job) -> dict:
    """The "evaluation" job: score the uploaded file and store the figures. Idempotent: a
    rerun computes the same figures (seeded) and overwrites them."""
    evaluation = Evaluation.objects.select_related("project").get(pk=job.params["evaluation"])
    project = evaluation.project
    scorer = scorer_for(project).configure(job.params.get("options") or {})
    split = evaluation.split or None
    try:
        gold = gold_for(project, scorer, split)
        data = bytes(job.input_data or b"")
        records = read_predictions(data, job.params.get("filename", ""), job.params.get("format", ""), scorer)
        predictions = validate_predictions(
            records, gold, scorer, split_label(split), check_strings=may_hold_unstorable_text(data)
        )
    except InvalidInput as exc:  # the gold changed since the upload was checked
        return {"errors": [error.as_dict() for error in exc.errors]}
    job_set_progress(job.pk, 0.05)
    figures, arrays = score(
        scorer, project, gold, predictions, progress=lambda share: job_set_progress(job.pk, 0.05 + 0.9 * share)
    )
    evaluation.figures = figures
    evaluation.items = len(gold)
    evaluation.bootstrap = {"n_resamples": metrics.N_RESAMPLES, "confidence": metrics.CONFIDENCE, "seed": metrics.SEED}
    evaluation.per_item = per_item_pack(list(gold), arrays)
    evaluation.save(update_fields=["figures", "items", "bootstrap", "per_item"])
    return {"evaluation": evaluation.pk, "items": len(gold), "figures": plain(figures)}
