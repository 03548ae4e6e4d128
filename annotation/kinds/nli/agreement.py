"""Krippendorff's alpha per round of an `nli_relabel` or `label_test` project, stored as
AgreementReports: the kinds' `compute_agreement`, run by the core's "agreement" job
(annotation.services.agreement). It loads a project's votes in bulk, computes alpha
(nominal) with the core's seeded bootstrap CI, and upserts one report per round plus one
over all rounds.

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

import numpy as np
from django.contrib.auth import get_user_model
from django.db.models.fields.json import KT
from django.utils import timezone

from annotation.metrics.agreement import slot_matrix
from annotation.models import AgreementReport, Annotation, ConsensusOutcome, Item, Job
from annotation.services.agreement import (
    agreement_reports_replace,
    alpha_with_ci,
    bootstrap_details,
    report_figures,
    scope_key,
)
from annotation.services.jobs import job_set_progress

LEVEL = "nominal"
ORIGINAL_CODER = "original"
# Synthetic coder id for an original label without an author user (user ids are > 0).
_ORIGINAL_ID = -1


def _per_annotator(
    unit_index: np.ndarray,
    coder: np.ndarray,
    codes: np.ndarray,
    is_vote: np.ndarray,
    reference: np.ndarray,
    names: dict,
) -> dict[str, dict]:
    """{username: {"agree", "total", "rate"}} over units whose reference (gold code, -1 =
    none) is known, for relabeling votes only.

    The same counts as `metrics.agreement.per_coder_agreement_with_reference` on the
    coders × units matrix (tests/kinds/nli/test_agreement.py checks it), done with two
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
        for pk, author_id, reference in Item.objects.filter(project=project).values_list(
            "pk", "author_id", "reference_label"
        )
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
            (label_codes.setdefault(ref, len(label_codes)) if ref else -1 for _, ref in refs),
            dtype=np.int64,
            count=len(refs),
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


def agreement_compute_per_round(project, job: Job, *, consensus: bool) -> dict:
    """Recompute and upsert the project's nominal alpha reports, one per round and one over
    all rounds. `consensus`: the gold is the accepted consensus label and the reference
    label is a vote (`nli_relabel`); otherwise the hidden reference label is the gold and
    not a coder (`label_test`).

    Returns {"reports": [{"scope", "level", "alpha", "units", "coders", "reason"}]} for the job's result."""
    (item_ids, rounds, coders, codes, is_vote), label_codes, items = _load_votes(project, counts_reference=consensus)
    job_set_progress(job.pk, 0.2)

    # Unit key: (item, round) packed in one int64; a round fits in 16 bits.
    unit_keys = item_ids * 65536 + rounds
    if consensus:
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
                project=project,
                scope=scope,
                scope_key=scope_key(scope),
                level=LEVEL,
                job=job,
                computed_at=now,
                **figures,
            )
        )
        job_set_progress(job.pk, 0.2 + 0.7 * position / len(scopes))

    # Rounds that no longer have annotations lose their report; other scopes stay.
    return agreement_reports_replace(
        reports, AgreementReport.objects.filter(project=project, level=LEVEL, scope__has_key="round")
    )
