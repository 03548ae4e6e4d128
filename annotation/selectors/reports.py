"""Reads behind `GET /api/projects/{slug}/report/`, `GET .../agreement/` and the
supervisor's dashboard: the same figures for all three, in a bounded number of queries
(no query per item, round or annotator)."""

from __future__ import annotations

from django.db import connection
from django.db.models import Count, F, Q, Sum
from django.db.models.fields.json import KT

from annotation.kinds.registry import get_kind
from annotation.models import AgreementReport, Annotation, ConsensusOutcome, Item, ItemStatusCount
from annotation.replica import read_from_replica
from annotation.stored_text import translated_text


def agreement_reports_for_project(project) -> list[dict]:
    """The stored reports, rounds in order then "all" (one query). `reason` is present
    when alpha is undefined."""
    rows = []
    for report in AgreementReport.objects.filter(project=project).order_by("level", "scope_key"):
        row = {
            "scope": report.scope,
            "level": report.level,
            "alpha": report.alpha,
            "ci_low": report.ci_low,
            "ci_high": report.ci_high,
            "units": report.units,
            "coders": report.coders,
            "computed_at": report.computed_at,
        }
        if report.alpha is None:
            row["reason"] = translated_text(report.reason)  # stored in English by the worker
        rows.append(row)

    def order(row):
        value = row["scope"].get("round") if isinstance(row["scope"], dict) else None
        return (
            row["level"],
            isinstance(value, str) or value is None,
            value if isinstance(value, int) else 0,
            str(row["scope"]),
        )

    return sorted(rows, key=order)


def status_counts_for_project(project) -> dict[str, int]:
    """Items per status (coherence probes are not items of the dataset and are left out),
    and their "total": the kept counts, one query whatever the project's size."""
    kept = item_counts_for_project(project)
    counts = {status: kept.get((status, False), 0) for status in Item.Status.values}
    counts["total"] = sum(counts.values())
    return counts


def item_counts_for_project(project) -> dict[tuple[str, bool], int]:
    """{(status, probe): items} of the project. On PostgreSQL the counts it keeps itself
    (ItemStatusCount: a sum over a few rows of an index, where counting the items read a
    million index entries per request on a million items, 0.3–1.5 s by the load); on
    SQLite, counted from the items."""
    if connection.vendor == "postgresql":
        rows = (
            ItemStatusCount.objects.filter(project_id=project.pk)
            .order_by()
            .values_list("status", "probe")
            .annotate(n=Sum("items"))
        )
        return {(status, probe): n for status, probe, n in rows if n}
    every = _count_by_status(Item.objects.filter(project=project))
    probes = _count_by_status(Item.objects.filter(project=project, probe_of__isnull=False))
    counts = {(status, True): n for status, n in probes.items()}
    counts.update({(status, False): n - probes.get(status, 0) for status, n in every.items()})
    return {key: n for key, n in counts.items() if n}


def _count_by_status(items) -> dict[str, int]:
    return dict(items.order_by().values_list("status").annotate(n=Count("*")))


def outcomes_per_round(project) -> list[dict]:
    """[{"round", "accepted", "failed", "label_changed"}] from ConsensusOutcome, by round
    (the consensus step's figures, for a kind that aggregates by consensus)."""
    rows = (
        ConsensusOutcome.objects.filter(item__project=project)
        .order_by()
        .values("round")
        .annotate(
            accepted=Count("pk", filter=Q(outcome=ConsensusOutcome.Outcome.ACCEPTED)),
            failed=Count("pk", filter=Q(outcome=ConsensusOutcome.Outcome.FAILED)),
            label_changed=Count("pk", filter=Q(outcome=ConsensusOutcome.Outcome.ACCEPTED, label_changed=True)),
        )
        .order_by("round")
    )
    return [dict(row) for row in rows]


def per_annotator_for_project(project) -> list[dict]:
    """Live, from the votes and the golds (one query): for each annotator, over the
    (item, round)s that were accepted, how many of their labels equal the gold.
    Sorted by username."""
    # One join to the (item, round)'s accepted outcome; the label is compared as text.
    rows = (
        Annotation.objects.filter(
            item__project=project,
            item__outcomes__outcome=ConsensusOutcome.Outcome.ACCEPTED,
            item__outcomes__round=F("round"),
        )
        .annotate(label=KT("value__label"))
        .order_by()
        .values("annotator__username")
        .annotate(total=Count("pk"), agree=Count("pk", filter=Q(label=F("item__outcomes__gold"))))
        .order_by("annotator__username")
    )
    return [
        {
            "annotator": row["annotator__username"],
            "agree": row["agree"],
            "total": row["total"],
            "rate": row["agree"] / row["total"] if row["total"] else None,
        }
        for row in rows
    ]


def _report_sections(project) -> dict:
    """The kind's own report figures: computed on a small project, as the worker stored
    them on a large one with the alpha reports read live (services.figures)."""
    from annotation.selectors.figures import REPORT_SECTIONS, figures_are_live, stored_figures

    kind = get_kind(project.kind)
    if figures_are_live(project):
        return kind.report_sections(project)
    sections = stored_figures(project, REPORT_SECTIONS) or {}
    if "agreement" in sections:
        sections["agreement"] = agreement_reports_for_project(project)
    return sections


@read_from_replica
def report_for_project(project) -> dict:
    """The kind's summary: status counts and the stored alpha reports for every kind, then
    the kind's own figures (`report_sections`: for nli_relabel the consensus figures,
    span agreement, per-system means, coherence …). At most 5 queries for nli_relabel."""
    sections = _report_sections(project)
    report: dict = {"project": project.slug, "kind": project.kind, "status_counts": status_counts_for_project(project)}
    # A kind that shows the alpha reports among its own figures has placed them there.
    if "agreement" not in sections:
        report["agreement"] = agreement_reports_for_project(project)
    report.update(sections)
    return report


def report_for_viewer(project, user) -> dict:
    """`report_for_project` as `user` may read it: people named by username for the
    project's supervisors and admins, by their export pseudonym for everyone else
    (selectors.names)."""
    from annotation.selectors.names import names_for_viewer

    return names_for_viewer(report_for_project(project), project, user)
