"""Inter-annotator agreement, the core's part: the "agreement" job and what every kind's
agreement computation shares.

`agreement_request` starts a Job (kind "agreement"); the worker runs
`agreement_compute_job`, which hands the project to its kind's `compute_agreement` (the
scopes differ: rounds for nli_relabel and label_test, system × criterion, source …). Every
kind computes alpha through `alpha_with_ci` (`annotation.metrics.agreement`, with one
seeded bootstrap setting) and stores its reports with `agreement_reports_replace`.

Idempotent: a rerun upserts the same rows (unique project × scope_key × level) with a new
`computed_at`, in one transaction.
"""

from __future__ import annotations

import json

from django.db import transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from annotation.access import access_project_for_supervisor
from annotation.errors import InvalidInput
from annotation.kinds.registry import available_kinds, get_kind, kind_title
from annotation.metrics.agreement import alpha, bootstrap_ci
from annotation.models import AgreementReport, Job
from annotation.services.jobs import job_create
from annotation.stored_text import stored_message

JOB_TYPE = "agreement"
N_RESAMPLES = 1000
CONFIDENCE = 0.95
SEED = 20240601


def scope_key(scope: dict) -> str:
    """Canonical JSON of a scope (sorted keys), the report's unique key."""
    return json.dumps(scope, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def alpha_with_ci(matrix, level: str):
    """Alpha of a coders × units matrix, its bootstrap CI where alpha is defined (else
    None), and why a figure is missing ("" when both are there). Every agreement report
    of every kind is computed through here, with the same resampling settings."""
    point = alpha(matrix, level)
    boot = (
        bootstrap_ci(matrix, level, n_resamples=N_RESAMPLES, confidence=CONFIDENCE, seed=SEED)
        if point.reason is None
        else None
    )
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
    return {
        "n_resamples": N_RESAMPLES,
        "n_kept": boot.n_kept if boot is not None else 0,
        "confidence": CONFIDENCE,
        "seed": SEED,
    }


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
            {
                "scope": r.scope,
                "level": r.level,
                "alpha": r.alpha,
                "units": r.units,
                "coders": r.coders,
                "reason": r.reason or None,
            }
            for r in reports
        ]
    }


def agreement_request(*, user, slug: str) -> Job:
    """Queue a recomputation of the project's agreement reports. Supervisors only; kinds
    that compute no agreement are refused (400)."""
    project = access_project_for_supervisor(user, slug)
    if not get_kind(project.kind).computes_agreement:
        raise InvalidInput(
            _("no agreement is computed for projects of the kind “%(kind)s”") % {"kind": kind_title(project.kind)},
            field="kind",
        )
    return job_create(kind=JOB_TYPE, project=project, user=user)


def agreement_compute_job(job: Job) -> dict:
    """The "agreement" job: the project's kind recomputes and upserts its reports.

    Returns the kind's result ({"reports": [...]}) for the job's result."""
    project = job.project
    if project is None or not get_kind(project.kind).computes_agreement:
        computing = [name for name in available_kinds() if get_kind(name).computes_agreement]
        message = stored_message(
            gettext_noop("agreement is computed for %(kinds)s projects"), kinds=[kind_title(name) for name in computing]
        )
        return {"errors": [{"field": "kind", **message}]}
    return get_kind(project.kind).compute_agreement(project, job)
