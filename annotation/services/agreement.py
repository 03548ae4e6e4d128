"""Krippendorff's alpha per round of a labeling project, stored as AgreementReports.

`agreement_request` starts a Job (kind "agreement"); the worker runs
`agreement_compute_job`, which loads a project's votes in bulk, computes alpha (nominal)
with a seeded bootstrap CI through `annotation.metrics.agreement`, and upserts one report
per round plus one over all rounds.

What is measured (FarsTail §3; Krippendorff 2011 for alpha):

* Scopes. `{"round": r}` for every round that has annotations, and `{"round": "all"}`
  over every round together. In the "all" scope a unit is an (item, round) pair, not an
  item: a revised item is a different text in round 2, so its two rounds are two units.
* Units of a round: the items with at least one annotation in that round. `units` in the
  report counts the *pairable* ones (2+ values), which are the only ones alpha looks at;
  `details["units_total"]` counts them all.
* Coders: the distinct annotators, plus each item's author, whose value is the item's
  `reference_label` (the intended label; it is one of the k-of-n votes). An item with a
  reference label but no author user (an imported dataset's original label) puts that
  label in a synthetic coder "original". For `label_test` the reference label is the
  hidden answer key, not a vote, and is not a coder. `coders` in the report counts the
  distinct coders with a value in the scope.
* Values are labels, compared for equality only (level "nominal"); an annotation without
  a string label is an abstention (missing).
* The matrix handed to alpha has one row per *value slot* (the j-th value of a unit), not
  one per coder: alpha depends on each unit's multiset of values only (Krippendorff 2011
  §A builds the coincidence matrix unit by unit, whoever gave the values), so this matrix
  gives the same alpha and the same bootstrap as the sparse coders × units one while
  holding max-votes × units cells instead of coders × units. The report's `coders` is the
  count of real coders, not of slots.
* Per annotator (`details["per_annotator"]`, keyed by username — reports are for
  supervisors and reviewers): over the scope's accepted units, how many of the annotator's
  labels equal the consensus gold (`agree`), of how many (`total`), and `rate`. Only
  relabeling votes count (an author's intended label is not an annotation). For
  `label_test` the reference is the hidden gold label of every item instead.

Idempotent: a rerun upserts the same rows (unique project × scope_key × level) with a new
`computed_at`, in one transaction.
"""

from __future__ import annotations

import json
import numpy as np
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models.fields.json import KT
from django.utils import timezone

from annotation.kinds.registry import get_kind
from annotation.access import access_project_for_supervisor
from annotation.errors import InvalidInput
from annotation.metrics.agreement import alpha, bootstrap_ci, slot_matrix
from annotation.models import AgreementReport, Annotation, ConsensusOutcome, Item, Job
from annotation.services.jobs import job_create, job_set_progress

JOB_KIND = "agreement"
LEVEL = "nominal"
KINDS = ("nli_relabel", "label_test")
N_RESAMPLES = 1000
CONFIDENCE = 0.95
SEED = 20240601
ORIGINAL_CODER = "original"
# Synthetic coder id for an original label without an author user (user ids are > 0).
_ORIGINAL_ID = -1


def scope_key(scope: dict) -> str:
    """Canonical JSON of a scope (sorted keys), the report's unique key."""
    return json.dumps(scope, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def alpha_with_ci(matrix, level: str):
    """Alpha of a coders × units matrix, its bootstrap CI where alpha is defined (else
    None), and why a figure is missing ("" when both are there). Every agreement report
    of every kind is computed through here, with the same resampling settings."""
    point = alpha(matrix, level)
    boot = bootstrap_ci(matrix, level, n_resamples=N_RESAMPLES, confidence=CONFIDENCE, seed=SEED) if point.reason is None else None
    reason = point.reason or (boot.reason if boot is not None else None) or ""
    return point, boot, reason


def report_figures(point, boot, reason: str, coders: int) -> dict:
    """The headline fields of an AgreementReport from `alpha_with_ci`'s answer."""
    return {
        "alpha": point.alpha,
        "ci_low": boot.ci_low if boot is not None else None,
        "ci_high": boot.ci_high if boot is not None else None,
        "units": point.units,
        "coders": coders,
        "reason": reason,
    }


def bootstrap_details(boot) -> dict:
    """How a report's CI was resampled, for its `details`."""
    return {"n_resamples": N_RESAMPLES, "n_kept": boot.n_kept if boot is not None else 0, "confidence": CONFIDENCE, "seed": SEED}


def agreement_reports_replace(reports: list[AgreementReport], family) -> dict:
    """Upsert `reports` (unique per project × scope × level) and delete the rows of
    `family` — the queryset of the reports this computation owns — that they no longer
    include (a round, source or system without data, a changed level). One transaction.
    Returns the job's result."""
    keep = {(report.scope_key, report.level) for report in reports}
    fields = ["scope", "alpha", "ci_low", "ci_high", "units", "coders", "reason", "details", "job", "computed_at"]
    with transaction.atomic():
        stale = [pk for pk, key, level in family.values_list("pk", "scope_key", "level") if (key, level) not in keep]
        AgreementReport.objects.filter(pk__in=stale).delete()
        AgreementReport.objects.bulk_create(
            reports, update_conflicts=True, unique_fields=["project", "scope_key", "level"], update_fields=fields
        )
    return {
        "reports": [
            {"scope": r.scope, "level": r.level, "alpha": r.alpha, "units": r.units, "coders": r.coders, "reason": r.reason or None}
            for r in reports
        ]
    }


def agreement_request(*, user, slug: str) -> Job:
    """Queue a recomputation of the project's agreement reports. Supervisors only; kinds
    other than nli_relabel and label_test are refused (400)."""
    project = access_project_for_supervisor(user, slug)
    if project.kind not in KINDS and not get_kind(project.kind).computes_agreement:
        raise InvalidInput(f"no agreement is computed for {project.kind} projects", field="kind")
    return job_create(kind=JOB_KIND, project=project, user=user)


def _per_annotator(
    unit_index: np.ndarray, coder: np.ndarray, codes: np.ndarray, is_vote: np.ndarray, reference: np.ndarray, names: dict
) -> dict[str, dict]:
    """{username: {"agree", "total", "rate"}} over units whose reference (gold code, -1 =
    none) is known, for relabeling votes only.

    The same counts as `metrics.agreement.per_coder_agreement_with_reference` on the
    coders × units matrix (tests/services/test_agreement_job.py checks it), done with two
    bincounts: that function converts its input to Python lists, which costs seconds at
    500K votes."""
    ref = reference[unit_index]
    keep = is_vote & (ref >= 0)
    coder_ids, coder_pos = np.unique(coder[keep], return_inverse=True)
    total = np.bincount(coder_pos, minlength=coder_ids.size)
    agree = np.bincount(coder_pos, weights=(codes[keep] == ref[keep]).astype(np.float64), minlength=coder_ids.size)
    result = {
        names.get(int(c), str(int(c))): {"agree": int(a), "total": int(t), "rate": float(a) / t if t else None}
        for c, a, t in zip(coder_ids, agree, total)
    }
    return dict(sorted(result.items()))


def _figures(unit_keys, coder, codes, is_vote, gold_by_unit_key: dict, names: dict) -> dict:
    """Alpha, bootstrap CI, counts and per-annotator agreement for one scope."""
    uniq, unit_index = np.unique(unit_keys, return_inverse=True)
    n_units = int(uniq.size)
    matrix = slot_matrix(unit_index, codes.astype(np.float64), n_units)
    point, boot, reason = alpha_with_ci(matrix, LEVEL)
    reference = np.array([gold_by_unit_key.get(int(key), -1) for key in uniq], dtype=np.int64)
    # Coders with a value in a pairable unit.
    values_per_unit = np.bincount(unit_index, minlength=n_units)
    pairable = values_per_unit[unit_index] >= 2
    return {
        **report_figures(point, boot, reason, int(np.unique(coder[pairable]).size)),
        "details": {
            "units_total": n_units,
            "coders_total": int(np.unique(coder).size),
            "pairable_values": point.pairable_values,
            "bootstrap": {**bootstrap_details(boot), "point": boot.alpha if boot is not None else None},
            "per_annotator": _per_annotator(unit_index, coder, codes, is_vote, reference, names),
        },
    }


def _load_votes(project, counts_reference: bool):
    """Bulk-load (item, round, coder, label code, is_vote) for every value of the project:
    annotations, plus one reference-label value per (item, round) where it is a vote.
    Returns numpy arrays, the label → code mapping and {item id: (author id, reference)}.
    Two queries, none per item; the arrays are built column-wise."""
    label_codes: dict[str, int] = {}
    items = {
        pk: (author_id, reference)
        for pk, author_id, reference in Item.objects.filter(project=project).values_list("pk", "author_id", "reference_label")
    }
    # KT: the label as text (->>), not jsonb that Django would json.loads row by row.
    rows = list(
        Annotation.objects.filter(item__project=project)
        .annotate(label=KT("value__label"))
        .values_list("item_id", "round", "annotator_id", "label")
    )
    n_rows = len(rows)
    item_ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=n_rows)
    rounds = np.fromiter((r[1] for r in rows), dtype=np.int64, count=n_rows)
    coders = np.fromiter((r[2] for r in rows), dtype=np.int64, count=n_rows)
    # An annotation without a string label is an abstention (code -1, dropped).
    codes = np.fromiter(
        (label_codes.setdefault(r[3], len(label_codes)) if r[3] else -1 for r in rows), dtype=np.int64, count=n_rows
    )
    del rows
    present = codes >= 0
    item_ids, rounds, coders, codes = item_ids[present], rounds[present], coders[present], codes[present]
    n_votes = int(item_ids.size)
    if counts_reference and n_votes:
        unit_keys = np.unique(item_ids * 65536 + rounds)
        ref_items, ref_rounds = unit_keys // 65536, unit_keys % 65536
        refs = [items[int(pk)] for pk in ref_items]
        has_ref = np.fromiter((bool(ref) for _, ref in refs), dtype=bool, count=len(refs))
        ref_coders = np.fromiter(
            (author if author is not None else _ORIGINAL_ID for author, _ in refs), dtype=np.int64, count=len(refs)
        )
        ref_codes = np.fromiter(
            (label_codes.setdefault(ref, len(label_codes)) if ref else -1 for _, ref in refs), dtype=np.int64, count=len(refs)
        )
        # The author also labeled the item in that round: their annotation stands.
        all_coders = np.unique(np.concatenate([coders, ref_coders]))
        width = np.int64(all_coders.size)
        voted = (item_ids * 65536 + rounds) * width + np.searchsorted(all_coders, coders)
        candidate = unit_keys * width + np.searchsorted(all_coders, ref_coders)
        keep = has_ref & ~np.isin(candidate, voted)
        item_ids = np.concatenate([item_ids, ref_items[keep]])
        rounds = np.concatenate([rounds, ref_rounds[keep]])
        coders = np.concatenate([coders, ref_coders[keep]])
        codes = np.concatenate([codes, ref_codes[keep]])
    is_vote = np.zeros(item_ids.size, dtype=bool)
    is_vote[:n_votes] = True
    return (item_ids, rounds, coders, codes, is_vote), label_codes, items


def agreement_compute_job(job: Job) -> dict:
    """The "agreement" job: recompute and upsert the project's nominal alpha reports.

    Returns {"reports": [{"scope", "level", "alpha", "units", "coders", "reason"}]} for the job's result."""
    project = job.project
    if project is not None and project.kind not in KINDS and get_kind(project.kind).computes_agreement:
        # Kinds with their own scopes (system × criterion, source …) compute them themselves.
        return get_kind(project.kind).compute_agreement(project, job)
    if project is None or project.kind not in KINDS:
        return {"errors": [{"field": "kind", "message": f"agreement is computed for {', '.join(KINDS)} projects"}]}
    consensus_kind = project.kind == "nli_relabel"
    (item_ids, rounds, coders, codes, is_vote), label_codes, items = _load_votes(project, counts_reference=consensus_kind)
    job_set_progress(job.pk, 0.2)

    # Unit key: (item, round) packed in one int64; a round fits in 16 bits.
    unit_keys = item_ids * 65536 + rounds
    if consensus_kind:
        gold = {
            item_id * 65536 + round_: label_codes.setdefault(label, len(label_codes))
            for item_id, round_, label in ConsensusOutcome.objects.filter(
                item__project=project, outcome=ConsensusOutcome.Outcome.ACCEPTED
            ).values_list("item_id", "round", "gold")
        }
    else:
        # label_test: the hidden reference label is the gold of every round.
        gold = {
            int(key): label_codes.setdefault(items[int(key) // 65536][1], len(label_codes))
            for key in np.unique(unit_keys)
            if items[int(key) // 65536][1]
        }
    names = dict(get_user_model().objects.filter(pk__in=set(coders.tolist())).values_list("pk", "username"))
    names[_ORIGINAL_ID] = ORIGINAL_CODER

    scopes: list[tuple[dict, np.ndarray]] = [({"round": int(r)}, rounds == r) for r in np.unique(rounds)]
    scopes.append(({"round": "all"}, np.ones(rounds.size, dtype=bool)))
    now = timezone.now()
    reports = []
    for position, (scope, mask) in enumerate(scopes, start=1):
        figures = _figures(unit_keys[mask], coders[mask], codes[mask], is_vote[mask], gold, names)
        figures["details"]["labels"] = sorted(label_codes, key=label_codes.get)
        reports.append(
            AgreementReport(
                project=project, scope=scope, scope_key=scope_key(scope), level=LEVEL, job=job, computed_at=now, **figures
            )
        )
        job_set_progress(job.pk, 0.2 + 0.7 * position / len(scopes))

    # Rounds that no longer have annotations lose their report; other scopes stay.
    return agreement_reports_replace(
        reports, AgreementReport.objects.filter(project=project, level=LEVEL, scope__has_key="round")
    )

