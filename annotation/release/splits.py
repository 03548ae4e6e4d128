"""Leak-free grouped splits and the leak check (FarsTail §3.2; HeQ §3.3 for QA by article).

FarsTail: "The instances were randomly divided into training, validation, and test sets such
that the samples generated from the same question were in the same subset. In addition, to
avoid information leak, the samples generated from different questions which either their
premises or hypotheses had a cosine similarity higher than 0.9 were included in the same
subset" (70/15/15). HeQ: 90/5/5, "questions related to a specific article were assigned to
the same set".

`splits_request` queues job kind "splits": items of one group (the file's group, else the
kind's derived one: the premise for NLI, the title for QA) stay together; for the NLI kinds,
groups joined by a premise or hypothesis similarity above `leak_threshold` are merged
(annotation.metrics.similarity.leak_pairs, grouped_split); components go to splits by
realised share of items with a seeded order. The split is written to `Item.split` (which
every export's `split=` filter reads) and the run is recorded with its seed, threshold and
figures. Same items and parameters → same splits.

`leaks_request` queues job kind "leaks", a check of the splits as they are (imported ones
too): pairs of items in different splits whose premises or hypotheses are more similar than
the threshold, with examples, and groups spread over more than one split."""

from __future__ import annotations

from collections import Counter

from django.db import transaction
from django.utils.translation import gettext as _

from annotation.access import access_project_for_staff
from annotation.errors import InvalidInput
from annotation.kinds.registry import get_kind
from annotation.models import Item, Job
from annotation.release.curation_jobs import (
    curation_job_start,
    curation_run_latest,
    curation_run_record,
    item_brief,
    pair_kind,
    read_body,
    read_seed,
    read_shares,
    read_threshold,
    release_items,
    vectorizer_for,
)
from annotation.services.aggregation import aggregation_request_on_commit
from annotation.services.jobs import job_set_progress

SPLITS_JOB = "splits"
LEAKS_JOB = "leaks"
DEFAULT_LEAK_THRESHOLD = 0.9  # FarsTail §3.2
DEFAULT_SEED = 0
MAX_EXAMPLES = 20
WRITE_BATCH = 5000


def splits_request(*, user, slug: str, body) -> Job:
    """Queue a split assignment (supervisors of kinds that are split); 409 while one runs."""

    def params_of(project, kind):
        data = read_body(body, {"shares", "seed", "leak_threshold"})
        if kind.release_split_shares is None:
            raise InvalidInput(_("projects of this kind are not split by Mashov"), field="kind")
        return {
            "shares": read_shares(data, kind.release_split_shares),
            "seed": read_seed(data, DEFAULT_SEED),
            "leak_threshold": read_threshold(data, "leak_threshold", DEFAULT_LEAK_THRESHOLD)
            if pair_kind(kind)
            else None,
        }

    return curation_job_start(user=user, slug=slug, job_type=SPLITS_JOB, params_of=params_of)


def _vectorizer(project):
    kind = get_kind(project.kind)
    return vectorizer_for("bow", fold_letters=kind.project_settings(project)["fold_letter_variants"])


def splits_compute_job(job: Job) -> dict:
    from annotation.metrics.similarity import grouped_split, leak_pairs  # scipy: on the worker only

    project = job.project
    kind = get_kind(project.kind)
    shares, seed, leak_threshold = job.params["shares"], job.params["seed"], job.params.get("leak_threshold")
    with_pairs = pair_kind(kind) and leak_threshold is not None
    items = release_items(project, with_pairs=with_pairs)
    job_set_progress(job.pk, 0.1)
    edges = leak_pairs(items.premises, items.hypotheses, leak_threshold, _vectorizer(project)) if with_pairs else None
    job_set_progress(job.pk, 0.7)
    plan = grouped_split(items.groups, edges, shares, seed % 2**64)
    changed: dict[str, list[int]] = {}
    for pk, old, new in zip(items.ids, items.splits, plan.split_of_item):
        if old != new:
            changed.setdefault(new, []).append(pk)
    total = len(items.ids)
    result = {
        "shares": {name: (count / total if total else 0.0) for name, count in plan.counts.items()},
        "counts": plan.counts,
        "target_shares": shares,
        "components": plan.components,
        "merged_components": plan.merged_components,
        "largest_component": plan.largest_component,
        "groups": len(set(items.groups)),
        "items": total,
        "leak_pairs": len(edges) if edges is not None else None,
        "seed": seed,
        "leak_threshold": leak_threshold,
        "changed": sum(len(ids) for ids in changed.values()),
    }
    with transaction.atomic():
        for name, ids in sorted(changed.items()):
            for start in range(0, len(ids), WRITE_BATCH):
                Item.objects.filter(pk__in=ids[start : start + WRITE_BATCH]).update(split=name)
        # A large project keeps its filter values, and a kind's report that reads the split,
        # by the changed items: the moved ones are recorded as changed.
        if changed:
            aggregation_request_on_commit(project.pk, [pk for ids in changed.values() for pk in ids])
        curation_run_record(job, SPLITS_JOB, result)
    return result


def split_report_for_project(*, user, slug: str) -> dict:
    """The latest split run's figures (supervisors and reviewers); before any run, the
    shares the items' current splits realise (imported splits) with the run's fields null."""
    project = access_project_for_staff(user, slug)
    run = curation_run_latest(project, SPLITS_JOB)
    if run is not None:
        return {**run.result, "computed_at": run.created_at, "job": run.job_id}
    counts = Counter(
        Item.objects.filter(project=project, probe_of__isnull=True)
        .exclude(status=Item.Status.REMOVED)
        .values_list("split", flat=True)
    )
    total = sum(counts.values())
    return {
        "shares": {name: count / total for name, count in sorted(counts.items())},
        "counts": dict(sorted(counts.items())),
        "components": None,
        "largest_component": None,
        "seed": None,
        "leak_threshold": None,
        "items": total,
        "computed_at": None,
        "job": None,
    }


def leaks_request(*, user, slug: str, body) -> Job:
    def params_of(project, kind):
        data = read_body(body, {"threshold"})
        return {"threshold": read_threshold(data, "threshold", DEFAULT_LEAK_THRESHOLD)}

    return curation_job_start(user=user, slug=slug, job_type=LEAKS_JOB, params_of=params_of)


def leaks_compute_job(job: Job) -> dict:
    """Cross-split pairs above the threshold among items that have a split, and groups whose
    items are in more than one split."""
    from annotation.metrics.similarity import leak_pairs  # scipy: on the worker only

    project = job.project
    kind = get_kind(project.kind)
    threshold = job.params["threshold"]
    items = release_items(project, with_pairs=pair_kind(kind))
    with_split = [k for k, split in enumerate(items.splits) if split]
    splits_of_group: dict[int, set[str]] = {}
    for k in with_split:
        splits_of_group.setdefault(items.groups[k], set()).add(items.splits[k])
    count, by_splits, examples = 0, Counter(), []
    if pair_kind(kind) and with_split:
        pairs = leak_pairs(
            [items.premises[k] for k in with_split],
            [items.hypotheses[k] for k in with_split],
            threshold,
            _vectorizer(project),
        )
        job_set_progress(job.pk, 0.8)
        split_of = [items.splits[k] for k in with_split]
        cross = [
            (i, j, s)
            for i, j, s in zip(pairs.i.tolist(), pairs.j.tolist(), pairs.similarity.tolist())
            if split_of[i] != split_of[j]
        ]
        count = len(cross)
        by_splits = Counter("/".join(sorted((split_of[i], split_of[j]))) for i, j, _s in cross)
        cross.sort(key=lambda pair: (-pair[2], pair[0], pair[1]))
        chosen = [(with_split[i], with_split[j], s) for i, j, s in cross[:MAX_EXAMPLES]]
        examples = [{"a": items.ids[a], "b": items.ids[b], "similarity": round(s, 6)} for a, b, s in chosen]
    result = {
        "threshold": threshold,
        "count": count,
        "by_splits": dict(sorted(by_splits.items())),
        "examples": examples,
        "items": len(with_split),
        "groups_across_splits": sum(len(splits) > 1 for splits in splits_of_group.values()),
        "compares_texts": pair_kind(kind),
    }
    with transaction.atomic():
        curation_run_record(job, LEAKS_JOB, result)
    return result


def leak_report_for_project(*, user, slug: str) -> dict:
    """The latest leak check (supervisors and reviewers) with its example items; before any
    check, its fields are null."""
    project = access_project_for_staff(user, slug)
    run = curation_run_latest(project, LEAKS_JOB)
    if run is None:
        return {"threshold": None, "count": None, "by_splits": {}, "examples": [], "items": None,
                "groups_across_splits": None, "computed_at": None, "job": None}  # fmt: skip
    result = dict(run.result)
    ids = {example[side] for example in result.get("examples", []) for side in ("a", "b")}
    items = {item.pk: item for item in Item.objects.filter(project=project, pk__in=ids)}
    result["examples"] = [
        {"a": item_brief(items[e["a"]]), "b": item_brief(items[e["b"]]), "similarity": e["similarity"]}
        for e in result.get("examples", [])
        if e["a"] in items and e["b"] in items
    ]
    return {**result, "computed_at": run.created_at, "job": run.job_id}
