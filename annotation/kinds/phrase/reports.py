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
HARD_GOLD = "imported label of the original pair, else the majority label of its annotators"
# Between a counter's key parts (a source, a label, an annotator id, a figure).
SEPARATOR = "\t"


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


def _probes_and_originals_rows(project) -> list[tuple]:
    """`_probe_rows` of the probes and their originals only: the pairs of `_probe_pairs`
    need no other label. Three queries, the probes read by the index of the project's probes."""
    from annotation.models import Item

    pairs = Item.objects.filter(project=project, probe_of__isnull=False).values_list("pk", "probe_of_id")
    ids = sorted({pk for pair in pairs for pk in pair})
    return _label_rows(ids) if ids else []


def _label_rows(item_ids: list[int]) -> list[tuple]:
    """`_probe_rows` of the items `item_ids`: their facts and their labels read apart by
    the ids (no join that a planner may answer by reading the project's items). Two
    queries."""
    from django.db.models.fields.json import KT, KeyTextTransform

    from annotation.models import Annotation, Item
    from annotation.sql import column_in

    items = {
        pk: facts
        for pk, *facts in Item.objects.filter(column_in(Item, "id", item_ids))
        .annotate(source=KeyTextTransform("source", "payload"))
        .order_by()
        .values_list("pk", "round", "probe_of_id", "reference_label", "source")
    }
    if not items:
        return []
    labels = (
        Annotation.objects.filter(column_in(Annotation, "item_id", sorted(items)))
        .annotate(label=KT("value__label"))
        .order_by()
        .values_list("item_id", "annotator_id", "round", "label")
    )
    return [
        (item_id, annotator_id, label, *items[item_id][1:])
        for item_id, annotator_id, round_, label in labels
        if round_ == items[item_id][0]
    ]


def _probe_pairs(rows: list[tuple]) -> list[tuple[int, int, str, str, str | None]]:
    """(original item id, annotator id, their label on the original, their label on the
    reversed probe, gold of the original or None) from `_probe_rows`."""
    return [pair[1:] for pair in _probe_pairs_by_probe(rows)]


def _probe_pairs_by_probe(rows: list[tuple]) -> list[tuple[int, int, int, str, str, str | None]]:
    """`_probe_pairs`, each led by the probe's item id."""
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
    for item_id, annotator_id, label, probe_of, _ref, _source in rows:
        if not probe_of or label not in LABELS:
            continue
        original_label = by_item_annotator.get((probe_of, annotator_id))
        if original_label is None:
            continue
        gold = reference.get(probe_of) or majority_gold(cast_by_item[probe_of])[0]
        pairs.append((item_id, probe_of, annotator_id, original_label, label, gold))
    return pairs


def coherence_by_annotator(project) -> dict[int, dict]:
    """{annotator id: {"probes", "soft", "hard"}}: the per-annotator coherence of the
    report, keyed by user id (the quality page's column). Three queries, the probes and their
    originals only."""
    pairs: dict[int, list[tuple[str, str, str | None]]] = defaultdict(list)
    for _original, annotator_id, original_label, label, gold in _probe_pairs(_probes_and_originals_rows(project)):
        pairs[annotator_id].append((original_label, label, gold))
    return {
        row["annotator"]: {"probes": row["probes"], "soft": row["soft"], "hard": row["hard"]}
        for row in coherence_rows(pairs)
    }


def incoherent_probe_answers(project) -> list[tuple[int, int, str, str]]:
    """(original item id, annotator id, label on the original, label on the reversal) for
    every probe answered incoherently: SoftCoh's indicator is 0 (paper §3.1), as with
    FORWARD on (A, B) and FORWARD on (B, A). Three queries, the probes and their originals
    only."""
    return [
        (original, annotator_id, original_label, label)
        for original, annotator_id, original_label, label, _gold in _probe_pairs(_probes_and_originals_rows(project))
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
            "hard_gold": HARD_GOLD,
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


# The report kept up to date item by item on the worker (PhrasePairKind.report_counts,
# services.figures): each item's share of three counters, the report computed from their
# sums over the project's items — the numbers `coherence_report_for_project` gives. A
# reversed probe's share holds its pairs' coherence, read with its original's labels, so
# the worker reads a changed original's probes with it (`probes_of`).
def phrase_counts(project, item_ids: list[int]) -> dict[int, dict[str, dict[str, int]]]:
    """{item id: {"labels": {"<source>\t<label>": n}, "imported": {"<source>\t<label>": 1},
    "coherence": {"<annotator id>\t<figure>": n}, "incoherent": {"<original id>": n}}}: an
    ordinary item's current-round labels and imported label by source; a probe's pairs per
    annotator — "probes", "soft" (soft-coherent), "hard_total" (with a gold) and "hard"
    (hard-coherent) — and its pairs answered incoherently. Five queries at
    most, whatever the number of ids."""
    from django.db.models.fields.json import KT

    from annotation.models import Item
    from annotation.sql import column_in

    shares: dict[int, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(dict))

    def add(item_id: int, counter: str, key: str, n: int = 1) -> None:
        if n:
            keys = shares[item_id][counter]
            keys[key] = keys.get(key, 0) + n

    rows = _label_rows(item_ids)
    for item_id, _annotator_id, label, probe_of, _ref, source in rows:
        if not probe_of and label in LABELS:
            add(item_id, "labels", f"{source or ''}{SEPARATOR}{label}")
    for item_id, source, label in (
        Item.objects.filter(column_in(Item, "id", item_ids), project=project, probe_of__isnull=True)
        .annotate(source=KT("payload__source"))
        .exclude(reference_label="")
        .values_list("pk", "source", "reference_label")
    ):
        add(item_id, "imported", f"{source or ''}{SEPARATOR}{label}")
    probes = {item_id for item_id, _a, label, probe_of, _r, _s in rows if probe_of and label in LABELS}
    originals = sorted({row[3] for row in rows if row[0] in probes})
    if originals:
        # The originals' own labels (ordinary items only: a probe's probe makes no pair),
        # and only the probes' rows of the ids, each original's read once.
        given = [row for row in rows if row[0] in probes or (not row[3] and row[0] in originals)]
        read = {row[0] for row in given}
        given += [row for row in _label_rows([pk for pk in originals if pk not in read]) if not row[3]]
        for probe, original, annotator_id, original_label, label, gold in _probe_pairs_by_probe(given):
            soft = soft_coherence([(original_label, label)]).coherent
            add(probe, "coherence", f"{annotator_id}{SEPARATOR}probes")
            add(probe, "coherence", f"{annotator_id}{SEPARATOR}soft", soft)
            if not soft:  # the original waits for an adjudicator (incoherent_probe_answers)
                add(probe, "incoherent", str(original))
            if gold:
                hard = hard_coherence([(original_label, label, gold)]).coherent
                add(probe, "coherence", f"{annotator_id}{SEPARATOR}hard_total")
                add(probe, "coherence", f"{annotator_id}{SEPARATOR}hard", hard)
    return {item_id: {name: dict(keys) for name, keys in share.items()} for item_id, share in shares.items()}


def probes_of(project, item_ids: list[int]) -> list[int]:
    """The probes of the items `item_ids` (their shares read the originals' labels). One
    query, by the probes' partial index."""
    from annotation.models import Item
    from annotation.sql import column_in

    return list(
        Item.objects.filter(column_in(Item, "probe_of_id", item_ids), project=project)
        .order_by()
        .values_list("pk", flat=True)
    )


def phrase_sections_from_counts(counts: dict[str, dict[str, int]], *, probe_rate: float, probe_labels) -> dict:
    """`coherence_report_for_project` from the items' `phrase_counts` summed. One query,
    the annotators' usernames."""
    from django.contrib.auth import get_user_model

    def table(counter: dict[str, int]) -> list[dict]:
        sources: dict[str, Counter] = defaultdict(Counter)
        for key, n in counter.items():
            source, label = key.rsplit(SEPARATOR, 1)
            sources[source][label] += n
        return [
            {"source": source, "total": sum(c.values()), "labels": {label: c.get(label, 0) for label in LABELS}}
            for source, c in sorted(sources.items())
        ]

    people: dict[int, dict[str, int]] = defaultdict(dict)
    for key, n in counts.get("coherence", {}).items():
        annotator, figure = key.split(SEPARATOR)
        people[int(annotator)][figure] = n
    names = dict(get_user_model().objects.filter(pk__in=sorted(people)).values_list("pk", "username")) if people else {}
    rows = []
    for name, figures in sorted(((names.get(pk, str(pk)), f) for pk, f in people.items()), key=lambda row: row[0]):
        probes, soft = figures.get("probes", 0), figures.get("soft", 0)
        hard, hard_total = figures.get("hard", 0), figures.get("hard_total", 0)
        rows.append(
            {
                "annotator": name,
                "probes": probes,
                "soft": soft / probes if probes else None,
                "soft_coherent": soft,
                "hard": hard / hard_total if hard_total else None,
                "hard_coherent": hard,
                "hard_total": hard_total,
            }
        )
    return {
        "coherence": {
            "per_annotator": rows,
            "hard_gold": HARD_GOLD,
            "probe_rate": probe_rate,
            "probe_labels": list(probe_labels),
        },
        "label_distribution": table(counts.get("labels", {})),
        "imported_label_distribution": table(counts.get("imported", {})),
    }


def coherence_from_counts(counts: dict[str, dict[str, int]]) -> tuple[dict[int, dict], set[int]]:
    """`coherence_by_annotator` and the originals of `incoherent_probe_answers` from the
    items' `phrase_counts` summed. No query."""
    people: dict[int, dict[str, int]] = defaultdict(dict)
    for key, n in counts.get("coherence", {}).items():
        annotator, figure = key.split(SEPARATOR)
        people[int(annotator)][figure] = n
    coherence = {}
    for annotator, figures in people.items():
        probes, hard_total = figures.get("probes", 0), figures.get("hard_total", 0)
        coherence[annotator] = {
            "probes": probes,
            "soft": figures.get("soft", 0) / probes if probes else None,
            "hard": figures.get("hard", 0) / hard_total if hard_total else None,
        }
    return coherence, {int(original) for original, n in counts.get("incoherent", {}).items() if n}
