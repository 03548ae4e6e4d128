"""Near-duplicate removal (FarsTail §3.2): "instances generated from different questions
which both their premises and hypotheses had a cosine similarity higher than 0.8" were
removed.

`duplicates_request` queues the search (job kind "duplicates"); the worker runs
`duplicates_compute_job`, which finds the pairs (annotation.metrics.similarity.near_duplicates)
among the project's items that are not removed and stores them as DuplicatePairs: pairs found
again keep their decision, undecided pairs no longer found are dropped, decided ones are kept
(their decision still stands). The supervisor keeps or removes each pair (`duplicate_decide`)
or removes the later item of every undecided pair (`duplicates_remove_all`).

Removing an item is a decision of the ledger (method `near_duplicate`, docs/decisions.md
"Curation"): the item becomes "removed" (it leaves the assignment queue and the default
exports) with its gold kept, and why is in its history and under
`Item.computed["duplicate"]["removed"]`. An item an adjudicator decided is not removed.
`duplicates_restore` (or deciding "keep" on the pair that removed it) cancels the removal:
the decision that stood before it stands again."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from annotation.access import access_project_for_staff, access_project_for_supervisor
from annotation.errors import Conflict, FieldError, InvalidInput, NotFound
from annotation.kinds.registry import get_kind
from annotation.models import DuplicatePair, Item, Job
from annotation.release.curation_jobs import (
    check_representation,
    curation_job_start,
    curation_run_record,
    duplicate_kind,
    read_body,
    read_threshold,
    release_items,
    vectorizer_for,
)
from annotation.rows import check_item_ids
from annotation.services.audit import audit_record
from annotation.services.decisions import NEAR_DUPLICATE, curation_removals_record, curation_restores_record
from annotation.services.jobs import job_set_progress

JOB_TYPE = "duplicates"
DEFAULT_THRESHOLD = 0.8  # FarsTail §3.2


NEAR_DUPLICATE_REASON = gettext_noop(
    "near-duplicate of %(item)s (premise similarity %(premise)s, hypothesis similarity %(hypothesis)s; "
    "threshold %(threshold)s, %(representation)s)"
)


def duplicates_request(*, user, slug: str, body) -> Job:
    """Queue the near-duplicate search (supervisors of NLI projects); 409 while one runs."""

    def params_of(project, kind):
        data = read_body(body, {"threshold", "representation"})
        if not duplicate_kind(kind):
            raise InvalidInput(
                _(
                    "near-duplicates are searched in projects of premise/hypothesis pairs "
                    "(the NLI kinds and translation rating)"
                ),
                field="kind",
            )
        return {
            "threshold": read_threshold(data, "threshold", DEFAULT_THRESHOLD),
            "representation": check_representation(data),
        }

    return curation_job_start(user=user, slug=slug, job_type=JOB_TYPE, params_of=params_of)


def duplicates_compute_job(job: Job) -> dict:
    """The worker's search; returns the job's result. Same items and parameters, same pairs."""
    from annotation.metrics.similarity import (
        near_duplicates,  # scipy: on the worker only (tests/test_startup_memory.py)
    )

    project = job.project
    kind = get_kind(project.kind)
    threshold, representation = job.params["threshold"], job.params["representation"]
    settings = kind.project_settings(project)
    vectorizer = vectorizer_for(representation, fold_letters=settings["fold_letter_variants"])
    items = release_items(project, with_pairs=True, with_duplicate_removals=True, texts_of=kind.duplicate_texts)
    found = near_duplicates(
        items.premises, items.hypotheses, items.groups, threshold, vectorizer,
        progress=lambda share: job_set_progress(job.pk, 0.9 * share),
    )  # fmt: skip
    now = timezone.now()
    pairs = [
        DuplicatePair(
            project=project,
            item_a_id=items.ids[a],
            item_b_id=items.ids[b],
            premise_similarity=round(float(ps), 6),
            hypothesis_similarity=round(float(hs), 6),
            representation=representation,
            threshold=threshold,
            found_at=now,
        )
        for a, b, ps, hs in zip(
            found.a.tolist(), found.b.tolist(), found.premise_similarity, found.hypothesis_similarity
        )
    ]
    found_keys = {(pair.item_a_id, pair.item_b_id) for pair in pairs}
    with transaction.atomic():
        stale = [
            pk
            for pk, a, b in DuplicatePair.objects.filter(project=project, decision="").values_list(
                "pk", "item_a_id", "item_b_id"
            )
            if (a, b) not in found_keys
        ]
        DuplicatePair.objects.filter(pk__in=stale).delete()
        DuplicatePair.objects.bulk_create(
            pairs,
            batch_size=2000,
            update_conflicts=True,
            unique_fields=["project", "item_a", "item_b"],
            update_fields=["premise_similarity", "hypothesis_similarity", "representation", "threshold", "found_at"],
        )
        result = {
            "items": len(items.ids),
            "pairs": len(pairs),
            "threshold": threshold,
            "representation": representation,
            "decided": DuplicatePair.objects.filter(project=project).exclude(decision="").count(),
        }
        curation_run_record(job, JOB_TYPE, result)
    return result


def items_left_out_of_search(project) -> int:
    """How many items the search does not compare: those removed for another reason than a
    near-duplicate (withdrawn, filtered, or removed before), probes aside. A copy of one of
    them is not found, and the release page says so."""
    return (
        # isnull on the key, not exclude(has_key): an item without `computed` must count.
        Item.objects.filter(
            project=project,
            probe_of__isnull=True,
            status=Item.Status.REMOVED,
            computed__duplicate__removed__isnull=True,
        ).count()
    )


def duplicate_pairs_for_project(*, user, slug: str, decision: str | None = None):
    """The project's pairs (supervisors and reviewers), in the order of their first item;
    `decision` filters: "keep", "remove" or "none" (undecided)."""
    project = access_project_for_staff(user, slug)
    pairs = DuplicatePair.objects.filter(project=project)
    if decision is not None:
        if decision not in ("keep", "remove", "none"):
            raise InvalidInput(_("must be one of %(choices)s") % {"choices": "keep, remove, none"}, field="decision")
        pairs = pairs.filter(decision="" if decision == "none" else decision)
    return pairs.select_related("item_a", "item_b").order_by(
        "item_a__position", "item_a_id", "item_b__position", "item_b_id"
    )


def _remove(pairs: list[DuplicatePair], user, now: str) -> list[Item]:
    """Remove the later item (`item_b`) of each pair as its near-duplicate, through the
    decision ledger (method `near_duplicate`, the reason in the item's history), in a few
    statements; the items' row locks are the caller's. An item already removed, or whose
    gold an adjudication decided, stays. Returns the items removed."""
    removals: dict[int, dict] = {}
    items: dict[int, Item] = {}
    for pair in pairs:
        item = pair.item_b
        if item.pk in removals:
            continue  # the item's first pair removes it
        other = pair.item_a
        removals[item.pk] = {
            # In English whoever removes it: put into the reader's language where the
            # item's history is shown (annotation.stored_text).
            "reason": NEAR_DUPLICATE_REASON
            % {
                "item": other.external_id,
                "premise": f"{pair.premise_similarity:.3f}",
                "hypothesis": f"{pair.hypothesis_similarity:.3f}",
                "threshold": pair.threshold,
                "representation": pair.representation,
            },
            "pair": pair.pk,
            "of": other.external_id,
            "previous_status": item.status,
            "by": user.username,
            "at": now,
        }
        items[item.pk] = item
    removed = curation_removals_record(
        list(items.values()), method=NEAR_DUPLICATE, reasons={pk: r["reason"] for pk, r in removals.items()}, user=user
    )
    for item in removed:
        item.computed = {**(item.computed or {}), "duplicate": {"removed": removals[item.pk]}}
    Item.objects.bulk_update(removed, ["computed"], batch_size=1000)
    return removed


def _restore(items: list[Item], user, now: str) -> list[Item]:
    """Cancel the near-duplicate removals of `items` in the ledger (row locks the
    caller's): each item's decision before its removal stands again. Returns the items
    restored."""
    removal_of = {item.pk: ((item.computed or {}).get("duplicate") or {}).get("removed") for item in items}
    restored = curation_restores_record(
        [item for item in items if isinstance(removal_of[item.pk], dict)],
        method=NEAR_DUPLICATE,
        user=user,
        undecided_status={pk: removal.get("previous_status") for pk, removal in removal_of.items() if removal},
        comment="restored after a near-duplicate removal",
    )
    for item in restored:
        removal = removal_of[item.pk]
        kept = {k: v for k, v in removal.items() if k != "previous_status"}
        item.computed = {**item.computed, "duplicate": {"restored": {"by": user.username, "at": now, "removal": kept}}}
    Item.objects.bulk_update(restored, ["computed"], batch_size=1000)
    return restored


def _removed_by(item: Item, pair: DuplicatePair) -> bool:
    removal = ((item.computed or {}).get("duplicate") or {}).get("removed")
    return item.status == Item.Status.REMOVED and isinstance(removal, dict) and removal.get("pair") == pair.pk


def duplicate_decide(*, user, slug: str, pair_id: int, decision) -> DuplicatePair:
    """Keep or remove one pair (supervisors). "remove" removes the pair's later item
    (`item_b`); "keep" leaves both, and restores `item_b` if this pair had removed it."""
    project = access_project_for_supervisor(user, slug)
    if decision not in (DuplicatePair.Decision.KEEP, DuplicatePair.Decision.REMOVE):
        raise InvalidInput(_("must be keep or remove"), field="decision")
    with transaction.atomic():
        pair = DuplicatePair.objects.select_for_update().filter(project=project, pk=pair_id).first()
        if pair is None:
            raise NotFound()
        locked = {
            item.pk: item for item in Item.objects.select_for_update().filter(pk__in=[pair.item_a_id, pair.item_b_id])
        }
        pair.item_a, pair.item_b = locked[pair.item_a_id], locked[pair.item_b_id]
        now = timezone.now().isoformat()
        if decision == DuplicatePair.Decision.REMOVE:
            if pair.item_b.status != Item.Status.REMOVED and not _remove([pair], user, now):
                raise Conflict(
                    _("An adjudicator decided this item's label: reopen the item before removing it."),
                    field="decision",
                )
        elif _removed_by(pair.item_b, pair):
            _restore([pair.item_b], user, now)
        before = pair.decision or None
        pair.decision, pair.decided_by, pair.decided_at = decision, user, timezone.now()
        pair.save(update_fields=["decision", "decided_by", "decided_at"])
        action = "duplicate_remove" if decision == DuplicatePair.Decision.REMOVE else "duplicate_restore"
        audit_record(actor=user, action=action, project=project, target=f"pair:{pair.pk}",
                     before={"decision": before}, after={"decision": decision, "item": pair.item_b_id})  # fmt: skip
    return pair


def duplicates_remove_all(*, user, slug: str) -> dict:
    """Remove the later item of every undecided pair (supervisors); one transaction. An
    item's earliest copy is never the later item of a pair, so one copy always stays."""
    project = access_project_for_supervisor(user, slug)
    with transaction.atomic():
        pairs = list(DuplicatePair.objects.select_for_update().filter(project=project, decision="").order_by("pk"))
        ids = {pair.item_a_id for pair in pairs} | {pair.item_b_id for pair in pairs}
        items = {item.pk: item for item in Item.objects.select_for_update().filter(pk__in=ids).order_by("pk")}
        now = timezone.now().isoformat()
        for pair in pairs:
            pair.item_a, pair.item_b = items[pair.item_a_id], items[pair.item_b_id]
            pair.decision, pair.decided_by, pair.decided_at = DuplicatePair.Decision.REMOVE, user, timezone.now()
        # An item an adjudicator decided stays (docs/decisions.md "Curation").
        removed = len(_remove(pairs, user, now))
        DuplicatePair.objects.bulk_update(pairs, ["decision", "decided_by", "decided_at"], batch_size=1000)
        audit_record(actor=user, action="duplicate_remove", project=project, target=f"project:{project.slug}",
                     after={"pairs": len(pairs), "removed": removed})  # fmt: skip
    return {"pairs": len(pairs), "removed": removed}


def duplicates_restore(*, user, slug: str, item_ids) -> dict:
    """Put items removed as near-duplicates back to the status they had (supervisors); the
    pairs that removed them are marked "keep". All or nothing: an id that is not an item of
    the project removed as a near-duplicate is a 400 naming `items[i]`."""
    project = access_project_for_supervisor(user, slug)
    check_item_ids(item_ids, field="items")
    errors = []
    with transaction.atomic():
        items = {
            item.pk: item
            for item in Item.objects.select_for_update().filter(project=project, pk__in=item_ids).order_by("pk")
        }
        for i, pk in enumerate(item_ids):
            item = items.get(pk)
            removal = ((item.computed or {}).get("duplicate") or {}).get("removed") if item else None
            if item is None or item.status != Item.Status.REMOVED or not isinstance(removal, dict):
                errors.append(FieldError(f"items[{i}]", _("no item of this project removed as a near-duplicate")))
        if errors:
            raise InvalidInput(_("nothing was restored"), errors=errors)
        now = timezone.now().isoformat()
        pair_ids = [item.computed["duplicate"]["removed"].get("pair") for item in items.values()]
        restored = _restore(list(items.values()), user, now)
        DuplicatePair.objects.filter(project=project, pk__in=[p for p in pair_ids if isinstance(p, int)]).update(
            decision=DuplicatePair.Decision.KEEP, decided_by=user, decided_at=timezone.now()
        )
        audit_record(actor=user, action="duplicate_restore", project=project, target=f"project:{project.slug}",
                     after={"items": sorted(item.pk for item in restored)})  # fmt: skip
    return {"restored": len(restored)}
