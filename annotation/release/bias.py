"""The bias analysis of a released NLI dataset (FarsTail §4.3, Tables 2 and 4, Fig. 4): the
"bias" job, its request and its stored result.

On the gold-labelled items of one split (train by default): Table 2's token counts and
overlaps per class and Table 4's PMI words (annotation.metrics.bias). Two biased models are
fitted on that split and applied to dev and test (each one that is not the fitted split):
hypothesis-only and overlap-based. Every test item then gets FarsTail's easy/hard flags,
stored in `item.computed["computed_hard(hypothesis)"]` and
`item.computed["computed_hard(overlap)"]` (True = hard: the model got it wrong), apart from
the `hard(...)` columns a FarsTail file brings (payload `extra`), which are never touched;
flags left on items that are no longer test items are taken away. Where the item came with
FarsTail's own columns, the agreement of imported and computed flags is reported. The
request's `evaluation` (an evaluation of the project, done) takes the hypothesis-only
flags from that model's predictions instead (hard = it got the item wrong), so that a
model trained elsewhere — the paper's fine-tuned mBERT — gives them. The result is the job's result; the latest
finished job's is the project's current analysis."""

import math

from django.db import transaction
from django.db.models import Q
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from annotation.access import access_project_for_staff, access_project_for_supervisor
from annotation.errors import Conflict, InvalidInput, NotFound
from annotation.kinds.registry import get_kind
from annotation.metrics import bias
from annotation.models import Evaluation, Item, Job, Project
from annotation.release.curation_jobs import pair_kind, release_run_audit
from annotation.release.evaluation_figures import per_item_unpack
from annotation.services.jobs import job_create, job_set_progress
from annotation.stored_text import stored_message, translated_body
from annotation.text_tools import TextTools, text_tools
from annotation.wording import join_list

JOB_TYPE = "bias"
SPLITS = ("train", "dev", "test")
DEFAULTS = {"split": "train", "smoothing": 100.0, "evaluation": None}
# The flag column a given evaluation's predictions replace: FarsTail's hypothesis-only model
# is a fine-tuned mBERT, which Mashov does not train (the overlap model is the paper's own).
EVALUATION_FLAG = "hard(hypothesis)"
MAX_ID = 2**63 - 1
# The stored result cannot hold a smoothing that JSON or PostgreSQL would refuse.
MAX_SMOOTHING = 1e12


def clean_bias_params(data) -> dict:
    """{"split", "smoothing", "evaluation"} with defaults; a 400 naming the field otherwise."""
    if not isinstance(data, dict):
        raise InvalidInput(_("the body must be a JSON object"), field="body")
    unknown = set(data) - set(DEFAULTS)
    if unknown:
        raise InvalidInput(_("unknown field(s): %(unknown)s") % {"unknown": join_list(sorted(unknown))}, field="body")
    split = data.get("split", DEFAULTS["split"])
    if not isinstance(split, str) or split not in SPLITS:
        raise InvalidInput(_("must be one of %(choices)s") % {"choices": join_list(SPLITS)}, field="split")
    smoothing = data.get("smoothing", DEFAULTS["smoothing"])
    if isinstance(smoothing, bool) or not isinstance(smoothing, int | float):
        raise InvalidInput(_("must be a positive number"), field="smoothing")
    try:
        smoothing = float(smoothing)
    except OverflowError:
        raise InvalidInput(
            _("must be a positive number up to %(max)s") % {"max": f"{MAX_SMOOTHING:g}"}, field="smoothing"
        ) from None
    if not math.isfinite(smoothing) or not 0 < smoothing <= MAX_SMOOTHING:
        raise InvalidInput(
            _("must be a positive number up to %(max)s") % {"max": f"{MAX_SMOOTHING:g}"}, field="smoothing"
        )
    evaluation = data.get("evaluation")
    if evaluation is not None and (
        isinstance(evaluation, bool) or not isinstance(evaluation, int) or not 0 < evaluation <= MAX_ID
    ):
        raise InvalidInput(_("must be the id of an evaluation of this project"), field="evaluation")
    return {"split": split, "smoothing": smoothing, "evaluation": evaluation}


def _check_evaluation(project: Project, evaluation_id: int | None) -> None:
    if evaluation_id is None:
        return
    evaluation = Evaluation.objects.filter(project=project, pk=evaluation_id).defer("per_item").first()
    if evaluation is None:
        raise InvalidInput(_("must be the id of an evaluation of this project"), field="evaluation")
    if evaluation.status != "done":
        raise InvalidInput(
            _("evaluation %(id)s is %(status)s: its predictions are not scored yet")
            % {"id": evaluation.pk, "status": evaluation.status},
            field="evaluation",
        )


def _given_flags(evaluation_id: int | None, test_items: list[Item]) -> tuple[dict, dict | None]:
    """The test items' hard flags from an evaluation's predictions (wrong = hard), None for
    an item it did not score; and what the result says of where they came from."""
    if evaluation_id is None:
        return {}, None
    evaluation = Evaluation.objects.filter(pk=evaluation_id).first()
    if evaluation is None or evaluation.per_item is None:
        return {}, None
    keys, arrays = per_item_unpack(evaluation.per_item)
    wrong = dict(zip(keys, (bool(g != p) for g, p in zip(arrays["gold"], arrays["predicted"], strict=True))))
    flags = [wrong.get(item.external_id) for item in test_items]
    return {EVALUATION_FLAG: flags}, {"id": evaluation.pk, "name": evaluation.name}


def _gold_items(project: Project):
    """Gold-labelled items that count for a release: not removed, not a coherence probe."""
    return project.items.exclude(gold_label="").exclude(status=Item.Status.REMOVED).filter(probe_of__isnull=True)


def _check_split(project: Project, split: str) -> None:
    # order_by(): the model's ordering would join the distinct columns and repeat a label.
    labels = set(
        _gold_items(project).filter(split=split).order_by().values_list("gold_label", flat=True).distinct()[:2]
    )
    if not labels:
        raise InvalidInput(_("the split “%(split)s” has no gold-labelled items") % {"split": split}, field="split")
    if len(labels) < 2:
        raise InvalidInput(
            _("the split “%(split)s” has gold labels of one class only; the biased models need two or more")
            % {"split": split},
            field="split",
        )


def analysable(kind) -> bool:
    """Whether the bias analysis applies to a kind: its gold is one of a closed label set
    and its items are premise/hypothesis pairs (the NLI kinds; phrase pairs have labels but
    no sentence pair to read)."""
    return bool(kind.labels) and pair_kind(kind)


def bias_request(*, user, slug: str, data) -> Job:
    """Queue a bias analysis. Supervisors of NLI projects; a 409 while one is queued or running."""
    project = access_project_for_supervisor(user, slug)
    params = clean_bias_params(data)
    if not analysable(get_kind(project.kind)):
        raise InvalidInput(_("the bias analysis is for NLI projects"), field="kind")
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).first()  # one request at a time
        if Job.objects.filter(
            project=project, kind=JOB_TYPE, status__in=(Job.Status.QUEUED, Job.Status.RUNNING)
        ).exists():
            raise Conflict(_("a bias analysis of this project is already running"), field="job")
        _check_split(project, params["split"])
        _check_evaluation(project, params["evaluation"])
        job = job_create(kind=JOB_TYPE, project=project, user=user, params=params)
        release_run_audit(user, project, job)
        return job


def bias_latest_job(project: Project) -> Job | None:
    """The project's latest finished analysis."""
    return (
        Job.objects.filter(project=project, kind=JOB_TYPE, status=Job.Status.DONE, result__isnull=False)
        .order_by("-finished_at", "-id")
        .first()
    )


def bias_latest(*, user, slug: str) -> dict:
    """The latest finished analysis of a project its staff may see; 404 when none ran."""
    job = bias_latest_job(access_project_for_staff(user, slug))
    if job is None:
        raise NotFound(_("no bias analysis has been run for this project"))
    return translated_body(job.result)


def _splits_of(
    project: Project, kind, fold_letters: bool, tools: TextTools
) -> dict[str, tuple[list[Item], bias.Split]]:
    """The gold items of each split, in file order, with their tokens."""
    found: dict[str, tuple[list, list, list, list, list, list]] = {}
    # Another tokenizer than Mashov's own: the overlap model keeps the words of the text.
    own_words = tools.tokenizer is not bias.reader_tokens
    fields = (
        "id",
        "project",
        "external_id",
        "split",
        "gold_label",
        "payload",
        "computed",
    )  # project: the related manager sets it
    for item in (
        _gold_items(project).filter(split__in=SPLITS).only(*fields).order_by("position", "id").iterator(chunk_size=2000)
    ):
        pair = kind.pair_texts(item.payload)
        if pair is None:
            continue
        items, premises, hypotheses, labels, premise_words, hypothesis_words = found.setdefault(
            item.split, ([], [], [], [], [], [])
        )
        items.append(item)
        premises.append(bias.tokens(pair[0], fold_letters=fold_letters, tokenizer=tools.tokenizer))
        hypotheses.append(bias.tokens(pair[1], fold_letters=fold_letters, tokenizer=tools.tokenizer))
        labels.append(item.gold_label)
        if own_words:
            premise_words.append(bias.bag_of_words(bias.tokens(pair[0], fold_letters=fold_letters)))
            hypothesis_words.append(bias.bag_of_words(bias.tokens(pair[1], fold_letters=fold_letters)))
    return {
        split: (items, bias.Split(p, h, labels, pw if own_words else None, hw if own_words else None))
        for split, (items, p, h, labels, pw, hw) in found.items()
    }


def _imported_flag(item: Item, column: str) -> bool | None:
    extra = item.payload.get("extra") if isinstance(item.payload, dict) else None
    return bias.parse_flag(extra.get(column)) if isinstance(extra, dict) else None


def _store_flags(project: Project, test_items: list[Item], flags: dict[str, list[bool]]) -> None:
    """Write the test items' flags and take them off every other item, in one transaction."""
    test_ids = {item.pk for item in test_items}
    with transaction.atomic():
        # What other jobs wrote into `computed` meanwhile is kept: read it under the lock.
        fresh = dict(Item.objects.select_for_update().filter(pk__in=test_ids).values_list("pk", "computed"))
        stored = [bias.computed_column(column) for column in bias.FLAG_MODELS]
        flagged = Q()
        for key in stored:
            flagged |= Q(computed__has_key=key)
        stale = list(project.items.filter(flagged).exclude(pk__in=test_ids).only("id", "project", "computed"))
        for item in stale:
            item.computed = {key: value for key, value in item.computed.items() if key not in stored}
        for index, item in enumerate(test_items):
            computed = {
                **(fresh.get(item.pk) or {}),
                **{bias.computed_column(column): values[index] for column, values in flags.items()},
            }
            # A model that did not score the item leaves it without a flag of that model.
            item.computed = {key: value for key, value in computed.items() if value is not None}
        Item.objects.bulk_update([*stale, *test_items], ["computed"], batch_size=1000)


def bias_analysis_job(job: Job) -> dict:
    """The "bias" job: compute, store the flags, return the result (see the module)."""
    project = job.project
    kind = get_kind(project.kind)
    params = {**DEFAULTS, **(job.params or {})}
    split, smoothing = params["split"], float(params["smoothing"])
    fold_letters = kind.project_settings(project)["fold_letter_variants"]
    tools = text_tools(project.language)
    splits = _splits_of(project, kind, fold_letters, tools)
    if split not in splits or len(set(splits[split][1].labels)) < 2:
        message = stored_message(
            gettext_noop("the split %(split)s needs gold items of two or more classes"), split=split
        )
        return {"errors": [{"field": "split", **message}]}
    job_set_progress(job.pk, 0.2)
    test_items = splits["test"][0] if "test" in splits and split != "test" else []
    given, given_from = _given_flags(params.get("evaluation"), test_items)
    result, flags = bias.analyse(
        {name: tokenised for name, (_items, tokenised) in splits.items()},
        split=split,
        smoothing=smoothing,
        stoplist=tools.stoplist,
        label_order=kind.labels,
        imported_flags={column: [_imported_flag(item, column) for item in test_items] for column in bias.FLAG_MODELS},
        given_flags=given,
        progress=lambda fraction: job_set_progress(job.pk, 0.2 + 0.7 * fraction),
    )
    result["tokenizer"] = tools.name
    _store_flags(project, test_items, flags)
    if given_from is not None:
        result["flags"][EVALUATION_FLAG]["evaluation"] = given_from
    return result
