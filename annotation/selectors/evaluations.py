"""Reads of model evaluations: the leaderboard's rows, one evaluation's figures, and the paired
comparison of two (docs/api.md "Dataset release")."""

from __future__ import annotations

import numpy as np
from django.utils.translation import gettext

from annotation.access import access_evaluation_for_staff, access_project_for_staff
from annotation.errors import Conflict, InvalidInput
from annotation.metrics import evaluation as metrics
from annotation.metrics.slices import slice_figures
from annotation.models import Evaluation, Job
from annotation.release.evaluation_figures import nest, per_item_unpack, plain
from annotation.release.evaluation_scorers import scorer_for
from annotation.release.predictions import ALL_SPLITS
from annotation.stored_text import translated_body
from annotation.wording import join_list


def evaluation_summary(evaluation: Evaluation) -> dict:
    return {
        "id": evaluation.pk,
        "name": evaluation.name,
        "split": evaluation.split or ALL_SPLITS,
        "created_at": evaluation.created_at,
        "status": evaluation.status,
        "job": evaluation.job_id,
        "items": evaluation.items,
        "figures": plain(evaluation.figures) if evaluation.figures is not None else None,
    }


def evaluations_for_project(*, user, slug: str) -> list[dict]:
    project = access_project_for_staff(user, slug)
    rows = Evaluation.objects.filter(project=project).select_related("job").defer("per_item").order_by("-id")
    return [evaluation_summary(evaluation) for evaluation in rows]


def evaluation_detail(*, user, slug: str, evaluation_id: int, slice_by=None) -> dict:
    """An evaluation's figures; with `slice_by`, also its figures on each slice of the items
    (see `evaluation_slices`)."""
    evaluation = access_evaluation_for_staff(user, slug, evaluation_id)
    detail = evaluation_describe(evaluation)
    if slice_by is not None:
        detail["slice"] = slice_by
        detail["slices"] = evaluation_slices(evaluation, slice_by)
    return detail


# Longest attribute name a slice request may give (extra columns are short names).
MAX_SLICE_LENGTH = 200


def evaluation_slices(evaluation: Evaluation, attribute) -> dict:
    """{value: {"items", <the kind's top-level figures>, "ci": {figure: [low, high]}}} for
    each value of `attribute` (`split`, `source`, or a field of the items' `extra`) over the
    items the evaluation was scored on, with seeded bootstrap intervals per slice
    (annotation/metrics/slices.py). Items without the attribute form the slice "". 400
    naming `slice` for an attribute no scored item has; 409 before the figures exist."""
    if not isinstance(attribute, str) or not attribute.strip() or len(attribute) > MAX_SLICE_LENGTH:
        raise InvalidInput(
            gettext("must name an item attribute: split, source or a field of the items' extra"), field="slice"
        )
    if evaluation.per_item is None:
        raise Conflict(gettext("evaluation %(id)s has no figures to slice yet") % {"id": evaluation.pk}, field="slice")
    scorer = scorer_for(evaluation.project).configure(evaluation_options(evaluation))
    keys, arrays = per_item_unpack(evaluation.per_item)
    attributes = scorer.slice_attributes(evaluation.project, keys)
    known = {"split", "source"}.union(*attributes)
    if attribute not in known:
        raise InvalidInput(gettext("must be one of %(choices)s") % {"choices": join_list(sorted(known))}, field="slice")
    statistic = scorer.statistic(arrays)
    names = [name for name in statistic(np.arange(len(keys))[None, :]) if "." not in name]
    return slice_figures(statistic, [row.get(attribute, "") for row in attributes], names)


def evaluation_describe(evaluation: Evaluation) -> dict:
    """Everything stored of an evaluation: its figures with intervals, how they were
    resampled, its job's error when it failed."""
    job = evaluation.job
    error = translated_body(job.error) if job is not None and job.status == Job.Status.FAILED else None
    return {
        **evaluation_summary(evaluation),
        "figures": evaluation.figures,
        "bootstrap": evaluation.bootstrap,
        "primary": scorer_for(evaluation.project).primary,
        "options": evaluation_options(evaluation),
        "error": error,
    }


def evaluation_options(evaluation: Evaluation) -> dict:
    """The kind's choices the evaluation was scored with (defaults for one made before
    they existed)."""
    job = evaluation.job
    chosen = (job.params or {}).get("options") if job is not None else None
    return scorer_for(evaluation.project).clean_options(chosen or {})


def _evaluation_id(value, field: str) -> int:
    if isinstance(value, str) and value.isdigit() and len(value) <= 18:
        return int(value)
    raise InvalidInput(gettext("must be the id of an evaluation of this project"), field=field)


def evaluation_compare(*, user, slug: str, a, b) -> dict:
    """Paired bootstrap of A − B over the items both were scored on: for every figure the
    difference, its 95 % interval and the share of resamples in which A scored higher; the
    verdict reads the kind's primary figure (A better when the whole interval is above 0)."""
    project = access_project_for_staff(user, slug)
    ids = {"a": _evaluation_id(a, "a"), "b": _evaluation_id(b, "b")}
    found = {}
    for field, pk in ids.items():
        evaluation = Evaluation.objects.select_related("job").filter(project=project, pk=pk).first()
        if evaluation is None:
            raise InvalidInput(gettext("must be the id of an evaluation of this project"), field=field)
        found[field] = evaluation
    for field, evaluation in found.items():
        if evaluation.per_item is None:
            raise Conflict(
                gettext("evaluation %(id)s has no figures to compare yet") % {"id": evaluation.pk}, field=field
            )
    if found["a"].split != found["b"].split:
        raise InvalidInput(gettext("a and b were scored on different splits"), field="b")
    scorer = scorer_for(project)
    keys_a, arrays_a = per_item_unpack(found["a"].per_item)
    keys_b, arrays_b = per_item_unpack(found["b"].per_item)
    position_b = {key: i for i, key in enumerate(keys_b)}
    common = [(i, position_b[key]) for i, key in enumerate(keys_a) if key in position_b]
    if not common:
        raise InvalidInput(gettext("a and b share no items"), field="b")
    take_a = np.array([i for i, _ in common], dtype=np.int64)
    take_b = np.array([j for _, j in common], dtype=np.int64)
    statistic_a = scorer.statistic({name: array[take_a] for name, array in arrays_a.items()})
    statistic_b = scorer.statistic({name: array[take_b] for name, array in arrays_b.items()})
    differences = metrics.paired_bootstrap(statistic_a, statistic_b, len(common))
    primary = differences.get(scorer.primary)
    verdict = "undecided"
    if primary is not None and primary.ci_low is not None and primary.ci_high is not None:
        verdict = "a_better" if primary.ci_low > 0 else "b_better" if primary.ci_high < 0 else "no_clear_difference"
    return {
        "a": evaluation_summary(found["a"]),
        "b": evaluation_summary(found["b"]),
        "split": found["a"].split or ALL_SPLITS,
        "items": len(common),
        "primary": scorer.primary,
        "verdict": verdict,
        "figures": nest({name: difference.as_dict() for name, difference in differences.items()}),
        "bootstrap": {
            "n_resamples": metrics.N_RESAMPLES,
            "confidence": metrics.CONFIDENCE,
            "seed": metrics.SEED,
            "paired": True,
        },
    }
