"""What a phrase_pair project reports: soft and hard coherence per annotator over the
reversed probes (fine-grained-nli-coherence §3), labels per source, and nominal alpha per
source. The math is the core's annotation/metrics/coherence.py and the agreement service;
this module gathers the labels.

Hard coherence needs a gold for the original pair: the imported (expert) label when the
item has one, else the majority gold of the original (labels.majority_gold). Soft
coherence needs none."""

from __future__ import annotations

from collections import Counter, defaultdict

from annotation.metrics.coherence import LABELS, hard_coherence, soft_coherence

from .labels import majority_gold

# The scope of the overall agreement report; no source may be called this.
ALL_SOURCES = "all"


def coherence_rows(pairs_by_annotator: dict[str, list[tuple[str, str, str | None]]]) -> list[dict]:
    """Per annotator soft and hard coherence from (label on original, label on reversed,
    gold of the original or None). Hard coherence counts only pairs with a gold."""
    rows = []
    for annotator in sorted(pairs_by_annotator):
        pairs = pairs_by_annotator[annotator]
        soft = soft_coherence([(a, b) for a, b, _gold in pairs])
        hard = hard_coherence([(a, b, gold) for a, b, gold in pairs if gold])
        rows.append(
            {
                "annotator": annotator,
                "probes": len(pairs),
                "soft": soft.score,
                "soft_coherent": soft.coherent,
                "hard": hard.score,
                "hard_coherent": hard.coherent,
                "hard_total": hard.total,
            }
        )
    return rows


def _probe_rows(project) -> list[tuple]:
    """(item id, annotator id, label, probe_of id, reference label, source) of every label
    of the current rounds in the project, probes included. One query."""
    from django.db.models import F
    from django.db.models.fields.json import KT, KeyTextTransform

    from annotation.models import Annotation

    return list(
        Annotation.objects.filter(item__project=project, round=F("item__round"))
        .annotate(label=KT("value__label"), source=KeyTextTransform("source", "item__payload"))
        .values_list("item_id", "annotator_id", "label", "item__probe_of_id", "item__reference_label", "source")
    )


def _probe_pairs(rows: list[tuple]) -> list[tuple[int, int, str, str, str | None]]:
    """(original item id, annotator id, their label on the original, their label on the
    reversed probe, gold of the original or None) from `_probe_rows`."""
    by_item_annotator: dict[tuple[int, int], str] = {}
    cast_by_item: dict[int, list[str]] = defaultdict(list)
    reference: dict[int, str] = {}
    for item_id, annotator_id, label, probe_of, ref, _source in rows:
        if probe_of or label not in LABELS:
            continue
        by_item_annotator[(item_id, annotator_id)] = label
        cast_by_item[item_id].append(label)
        reference[item_id] = ref
    pairs = []
    for _item_id, annotator_id, label, probe_of, _ref, _source in rows:
        if not probe_of or label not in LABELS:
            continue
        original_label = by_item_annotator.get((probe_of, annotator_id))
        if original_label is None:
            continue
        gold = reference.get(probe_of) or majority_gold(cast_by_item[probe_of])[0]
        pairs.append((probe_of, annotator_id, original_label, label, gold))
    return pairs


def coherence_by_annotator(project) -> dict[int, dict]:
    """{annotator id: {"probes", "soft", "hard"}}: the per-annotator coherence of the
    report, keyed by user id (the quality page's column). One query."""
    pairs: dict[int, list[tuple[str, str, str | None]]] = defaultdict(list)
    for _original, annotator_id, original_label, label, gold in _probe_pairs(_probe_rows(project)):
        pairs[annotator_id].append((original_label, label, gold))
    return {
        row["annotator"]: {"probes": row["probes"], "soft": row["soft"], "hard": row["hard"]}
        for row in coherence_rows(pairs)
    }


def incoherent_probe_answers(project) -> list[tuple[int, int, str, str]]:
    """(original item id, annotator id, label on the original, label on the reversal) for
    every probe answered incoherently: SoftCoh's indicator is 0 (paper §3.1), as with
    FORWARD on (A, B) and FORWARD on (B, A). One query."""
    return [
        (original, annotator_id, original_label, label)
        for original, annotator_id, original_label, label, _gold in _probe_pairs(_probe_rows(project))
        if soft_coherence([(original_label, label)]).coherent == 0
    ]


def coherence_report_for_project(project, *, probe_rate: float, probe_labels: list[str]) -> dict:
    """Per annotator soft/hard coherence, probe counts and the label distribution per
    source (cast labels of ordinary items, and imported labels). Two queries."""
    from django.contrib.auth import get_user_model
    from django.db.models import Count
    from django.db.models.fields.json import KT

    from annotation.models import Item

    rows = _probe_rows(project)
    imported = (
        Item.objects.filter(project=project, probe_of__isnull=True)
        .annotate(source=KT("payload__source"))
        .exclude(reference_label="")
        .order_by()
        .values_list("source", "reference_label")
        .annotate(n=Count("pk"))
    )
    distribution: dict[str, Counter] = defaultdict(Counter)
    for _item_id, _annotator_id, label, probe_of, _ref, source in rows:
        if not probe_of and label in LABELS:
            distribution[source or ""][label] += 1
    pairs: dict[int, list[tuple[str, str, str | None]]] = defaultdict(list)
    for _original, annotator_id, original_label, label, gold in _probe_pairs(rows):
        pairs[annotator_id].append((original_label, label, gold))
    names = dict(get_user_model().objects.filter(pk__in=list(pairs)).values_list("pk", "username")) if pairs else {}
    imported_distribution: dict[str, Counter] = defaultdict(Counter)
    for source, label, n in imported:
        imported_distribution[source or ""][label] += n

    def table(counters: dict[str, Counter]) -> list[dict]:
        return [
            {"source": source, "total": sum(c.values()), "labels": {label: c.get(label, 0) for label in LABELS}}
            for source, c in sorted(counters.items())
        ]

    return {
        "coherence": {
            "per_annotator": coherence_rows({names.get(uid, str(uid)): p for uid, p in pairs.items()}),
            "hard_gold": "imported label of the original pair, else the majority label of its annotators",
            "probe_rate": probe_rate,
            # Probes reverse the pairs an annotator gave one of these labels (paper §5).
            "probe_labels": list(probe_labels),
        },
        "label_distribution": table(distribution),
        "imported_label_distribution": table(imported_distribution),
    }


def agreement_compute_per_source(project, job) -> dict:
    """Nominal alpha with a bootstrap CI over ordinary items (probes left out), overall
    (scope {"source": "all"}) and per source ({"source": <name>}; items without a
    source count only overall). Upserted on (project, scope, level); sources that no
    longer have labels lose their report."""
    import numpy as np
    from django.db.models import F
    from django.db.models.fields.json import KT, KeyTextTransform
    from django.utils import timezone

    from annotation.models import AgreementReport, Annotation
    from annotation.services.agreement import agreement_reports_replace, alpha_with_ci, bootstrap_details, scope_key
    from annotation.services.jobs import job_set_progress

    rows = list(
        Annotation.objects.filter(item__project=project, item__probe_of__isnull=True, round=F("item__round"))
        .annotate(label=KT("value__label"), source=KeyTextTransform("source", "item__payload"))
        .values_list("item_id", "annotator_id", "label", "source")
    )
    rows = [row for row in rows if row[2] in LABELS]
    job_set_progress(job.pk, 0.2)
    sources = sorted({row[3] for row in rows if row[3]})
    scopes = [(ALL_SOURCES, rows)] + [(source, [row for row in rows if row[3] == source]) for source in sources]
    now = timezone.now()
    reports = []
    for position, (name, scoped) in enumerate(scopes, start=1):
        units = sorted({row[0] for row in scoped})
        coders = sorted({row[1] for row in scoped})
        unit_index = {pk: i for i, pk in enumerate(units)}
        coder_index = {pk: i for i, pk in enumerate(coders)}
        matrix = np.full((len(coders), len(units)), np.nan)
        for item_id, annotator_id, label, _source in scoped:
            matrix[coder_index[annotator_id], unit_index[item_id]] = LABELS.index(label)
        point, boot, reason = alpha_with_ci(matrix, "nominal") if coders else (None, None, "no labels")
        scope = {"source": name}
        reports.append(
            AgreementReport(
                project=project,
                scope=scope,
                scope_key=scope_key(scope),
                level="nominal",
                job=job,
                computed_at=now,
                alpha=point.alpha if point else None,
                ci_low=boot.ci_low if boot else None,
                ci_high=boot.ci_high if boot else None,
                units=point.units if point else 0,
                coders=point.coders if point else 0,
                reason=reason,
                details={"units_total": len(units), "labels": list(LABELS), "bootstrap": bootstrap_details(boot)},
            )
        )
        job_set_progress(job.pk, 0.2 + 0.7 * position / len(scopes))
    return agreement_reports_replace(
        reports, AgreementReport.objects.filter(project=project, level="nominal", scope__has_key="source")
    )
