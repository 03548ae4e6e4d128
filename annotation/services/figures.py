"""Figures of a large project computed on the worker and stored (ProjectFigures), so that
its supervisor's pages answer in a bounded time with a fixed number of queries.

A project of fewer than MASHOV_FIGURES_LIVE_ITEMS items (5,000 by default) has its figures
computed per request, as they always were: its votes fit in a few milliseconds and the
figures are never stale. A larger one reads what its last aggregation job stored
(`project_figures_store`, called by the job after it has written the aggregates and
competences), so the figures trail the votes by at most one job — a minute, with the
aggregation's debounce and sweep. Before its first job a large project shows none.

How they are kept. The figures that need every vote are sums over the items
(annotation.metrics.figures): each item's share is stored (ItemFigures) and the project's
sums beside the figures (`figure_sums`). A run given the items that changed — the
aggregation job passes the items its run read — takes their old shares out of the sums,
adds their new ones, and computes the figures from the sums, so its cost follows the
changed items, not the project; the sums are integers, so the figures are exactly those a
run over every item gives. A run without item ids (the first, or after a change that
names no item, and the aggregation's full runs) reads every item, in chunks, builds the
sums from the records anew and rewrites only the rows — shares, reasons, filter counts —
that differ from what is stored. The same shares keep, item by item:
- the methods' comparison of the kind's report
  (selectors.aggregation.aggregation_report_for_project): the items' shares hold their
  current-round aggregates, and the report is computed from the kept counts, its listed
  disagreements read by a partial index;
- the item browser's filter values: how many items hold each split, group, round and flag
  (ItemValueCount, updated by the changed items' old and new values); the values offered
  are read from those rows, the first groups by an index in code-point order. Items are
  created without a change that names them (imports, authored pairs, probes), so a run
  also reads the items above the highest id the last run counted;
- the adjudication queue's reasons, a row per waiting item (AdjudicationReason): a run
  rewrites the rows of the items it read. PostgreSQL computes each row's kept state as it
  is inserted (migration 0035), locking its item until the run commits: a vote, an
  adjudication or a status change of that item waits for the run's transaction. An incoherent probe makes its original wait:
  the probes are read whole on every run (a small share of the items), and the originals
  whose incoherence came or went since the last run are read with the changed items;
- the kind's report sections, for a kind that counts them (`Kind.report_counted`:
  `nli_relabel`'s outcomes per round, intended × consensus confusion and agreement per
  annotator; `phrase_pair`'s labels per source and coherence per annotator;
  `summary_rating`'s whole report, its means as exact integer sums and its intervals and
  correlations from kept multisets; `translation_rating`'s back-translation figures, a
  shared instance counted by its first holder; `qa_authoring`'s quality report, its
  article split from kept per-article counts — a kind without labels has its changed
  items recorded as the kinds with labels do, services.aggregation, and so do its
  reviews, validations and corrections): an item's
  share holds its counts (`Kind.report_counts`), the sums the project's, and the sections
  are computed from those (`Kind.report_sections_from_counts`). An item whose share reads
  another's (a reversed probe reads its original's labels) is read with the changed items
  (`Kind.report_related`).
A kind whose counts hold its annotators' coherence and its incoherent probes
(`Kind.coherence_from_counts`: `phrase_pair`) has them from the sums too. Read whole on
every run: the report sections of the other kinds, and the reversed-pair probes with their
originals' labels (coherence and incoherent probes) of a kind whose counts do not hold
them. A claim submitted
in a round still open is counted in `items` and `seconds_median` when its item's round
closes (or at the next run over every item); the figures of a small project, computed per
request, count it at once. An item created in a transaction that commits after a run
counted a higher id of the same project is counted by the next run over every item (the
aggregation's full runs, at least hourly).

Stored, by name:
- `annotator_quality`: {annotator id: the per-annotator figures that need every vote —
  items, seconds_median, agreement with the consensus and the gold, kappa — and coherence}
  (annotation.selectors.annotator_quality);
- `report_sections`: the kind's own report figures (`Kind.report_sections`), the alpha
  reports left out: those are read live from their own table;
- `adjudication_agreement`: agreement with and without the adjudicated items;
- `item_values`: the splits, groups, rounds and flags the item browser's filters offer."""

from __future__ import annotations

import json
from collections import Counter

from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, transaction
from django.db.models import Exists, F, OuterRef
from django.db.models.functions import Collate
from django.utils import timezone

from annotation.metrics.figures import (
    adjudication_agreement,
    annotators_figures,
    empty_sums,
    item_values_from_counts,
    sums_add_many,
    sums_apply,
    value_counts_apply,
)
from annotation.models import AdjudicationReason, Item, ItemFigures, ItemValueCount, Project, ProjectFigures
from annotation.selectors.figures import (
    ADJUDICATION_AGREEMENT,
    ANNOTATOR_QUALITY,
    FIGURE_SUMS,
    ITEM_VALUES,
    RECORD_CHUNK,
    REPORT_SECTIONS,
    item_records,
    project_item_ids,
    stored_figures,
)
from annotation.sql import column_in

INCOHERENT = "incoherent_probe"
# Kept in the sums: the highest item id a run counted (items above it are new), and the
# originals of incoherent probes as the last run found them.
VALUES_THROUGH = "values_through"
INCOHERENT_ORIGINALS = "incoherent"
# The version of the kind's report counts the sums hold (`Kind.report_counts_version`).
REPORT_VERSION = "report_version"


def _json(value):
    """`value` as its JSON text reads back: the shape a stored figure has when read."""
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))


def project_figures_store(project: Project, item_ids=None) -> list[str]:
    """Compute and upsert the project's stored figures (module docstring); the names
    written. `item_ids`: the items whose votes, round, status, claims, decisions or filter
    values changed since the last run (None: read every item). Runs on the worker, after
    the aggregation job's own writes and under its lock (runs of one project never overlap)."""
    from annotation.kinds.registry import get_kind

    kind = get_kind(project.kind)
    labels = tuple(kind.labels)
    now = timezone.now()
    with transaction.atomic():
        sums = None if item_ids is None else stored_figures(project, FIGURE_SUMS)
        if sums is not None and not {"comparison", "report", VALUES_THROUGH} <= set(sums):
            sums = None  # stored before the sums held all they hold now: read every item
        if sums is not None and sums.get(REPORT_VERSION, "") != kind.report_counts_version:
            sums = None  # the kind's shares hold other counts now: read every item
        kept = None if sums is None else kind.coherence_from_counts(sums["report"])
        if sums is not None and kept is not None:
            # Kept in the counts: the reasons are written with the incoherent originals as
            # the last run left them, then those whose incoherence came or went read again.
            _sums_update(project, kind, labels, sums, item_ids, set(sums[INCOHERENT_ORIGINALS]))
            after = kind.coherence_from_counts(sums["report"])
            assert after is not None  # a kind that keeps them (`kept`) keeps them after the update
            coherence, incoherent = after
            _incoherence_update(project, kind, labels, sums, incoherent)
        else:
            incoherent = {original for original, *_rest in kind.incoherent_probes(project)} if labels else set()
            if sums is None:
                sums = _sums_of_every_item(project, kind, labels, incoherent)
            else:
                _sums_update(project, kind, labels, sums, item_ids, incoherent)
            coherence = kind.annotator_coherence(project)
        sums[REPORT_VERSION] = kind.report_counts_version
        figures = {
            FIGURE_SUMS: sums,
            ANNOTATOR_QUALITY: annotators_figures(sums, coherence, labels),
            ITEM_VALUES: item_values_stored(project),
        }
        # The methods' comparison, a sum over items, from the sums just brought up to date
        # (selectors.aggregation.aggregation_report_for_project reads it there).
        project._method_comparison = sums["comparison"]  # type: ignore[attr-defined]
        try:
            if kind.report_counted:
                sections = dict(kind.report_sections_from_counts(project, sums["report"]))
            else:
                sections = dict(kind.report_sections(project))
        finally:
            del project._method_comparison  # type: ignore[attr-defined]
        if "agreement" in sections:
            sections["agreement"] = None  # read live (AgreementReport)
        figures[REPORT_SECTIONS] = sections
        if labels:
            figures[ADJUDICATION_AGREEMENT] = adjudication_agreement(sums, labels)
        for name, value in figures.items():
            project_figure_store(project, name, value, now=now)
    return [name for name in figures if name != FIGURE_SUMS]


def _sums_of_every_item(project: Project, kind, labels, incoherent: set[int]) -> dict:
    """The sums over every item, read anew; each item's share and reasons, and the filter
    values, rewritten only where they changed (a run over every item, hourly on a large
    project, finds most of them as the last run left them). The sums are built from the
    records alone, never from the stored rows, so that this run repairs whatever an earlier
    one left behind."""
    sums = empty_sums()
    counts: Counter = Counter()
    through = 0
    for ids in project_item_ids(project, RECORD_CHUNK):
        records = item_records(project, kind, ids)
        sums_add_many(sums, records.values(), labels)
        for record in records.values():
            value_counts_apply(counts, record, 1)
        _shares_rewrite(project, records, incoherent, after=through, through=ids[-1])
        through = ids[-1]
    # The shares of items gone since the last run (their rows have no foreign key), and the
    # reasons of items gone (deleted where no trigger took their rows).
    ItemFigures.objects.filter(project=project, item_id__gt=through).delete()
    AdjudicationReason.objects.filter(project=project).exclude(
        Exists(Item.objects.filter(project=project, pk=OuterRef("item_id")))
    ).delete()
    _value_counts_replace(project, counts)
    sums[VALUES_THROUGH] = through
    sums[INCOHERENT_ORIGINALS] = sorted(incoherent)
    return sums


def _shares_rewrite(project: Project, records: dict, incoherent: set[int], *, after: int, through: int) -> None:
    """Bring the stored shares and reasons of the ids after … through up to `records` (the
    items of that range, in a run over every item): a row equal to the item's new one is
    left as it is, any other row of the range (a changed or a deleted item's) is replaced or
    deleted."""
    in_range = {"project": project, "item_id__gt": after, "item_id__lte": through}
    stored = {
        item_id: (value, position)
        for item_id, value, position in ItemFigures.objects.filter(**in_range).values_list(
            "item_id", "value", "disagree_position"
        )
    }
    shares, reasons = [], []
    for item_id, record in records.items():
        if record is None:
            continue  # deleted: its rows, if any, are left in `stored` and deleted below
        position = record.pop("p", None)
        if stored.get(item_id) == (record, position):
            del stored[item_id]
        else:
            shares.append(ItemFigures(project=project, item_id=item_id, value=record, disagree_position=position))
        why = list(record.get("r", ())) + ([INCOHERENT] if item_id in incoherent else [])
        if why:
            reasons.append(AdjudicationReason(project=project, item_id=item_id, reasons=why))
    stale = sorted(stored) + [share.item_id for share in shares]
    if stale:
        ItemFigures.objects.filter(column_in(ItemFigures, "item_id", stale), project=project).delete()
    ItemFigures.objects.bulk_create(shares, batch_size=RECORD_CHUNK)
    _reasons_position(reasons)
    _reasons_store(project, list(records), reasons)


def _reasons_position(reasons: list) -> None:
    """Set each reason row's position, its item's."""
    if reasons:
        positions = dict(
            Item.objects.filter(column_in(Item, "id", [r.item_id for r in reasons])).values_list("pk", "position")
        )
        for reason in reasons:
            reason.position = positions.get(reason.item_id, 0)


def _value_counts_replace(project: Project, counts: Counter) -> None:
    """Make the project's ItemValueCount rows `counts` (over every item): changed counts
    written, values no item holds any more deleted, the others left as they are."""
    rows = {
        (name, value): (pk, items)
        for pk, name, value, items in ItemValueCount.objects.filter(project=project).values_list(
            "pk", "name", "value", "items"
        )
    }
    gone = [pk for key, (pk, _items) in rows.items() if counts.get(key, 0) <= 0]
    # Written RECORD_CHUNK rows at a time: the first run over a large project has a row to
    # insert for every group (a third of its items), too many model instances to hold at once.
    kept: list[ItemValueCount] = []
    for (name, value), n in counts.items():
        if n > 0 and rows.get((name, value), (None, 0))[1] != n:
            kept.append(ItemValueCount(project=project, name=name, value=value, items=n))
        if len(kept) == RECORD_CHUNK:
            _value_counts_write(kept, [])
            kept = []
    _value_counts_write(kept, gone)


def _value_counts_write(kept: list[ItemValueCount], gone: list[int]) -> None:
    """Store the ItemValueCount rows `kept` (inserted, or their counts updated) and delete
    the rows `gone` (pks)."""
    ItemValueCount.objects.bulk_create(
        kept, batch_size=RECORD_CHUNK, update_conflicts=True, unique_fields=["project", "name", "value"],
        update_fields=["items"],
    )  # fmt: skip
    if gone:
        ItemValueCount.objects.filter(pk__in=gone).delete()


def _sums_update(project: Project, kind, labels, sums: dict, item_ids, incoherent: set[int]) -> None:
    """Bring `sums` (in place), the shares, filter values and reasons up to date for the
    changed items, the originals whose incoherence came or went, and the items created
    since the last run."""
    came_or_went = incoherent ^ set(sums[INCOHERENT_ORIGINALS])
    related = kind.report_related(project, sorted(set(item_ids))) if kind.report_counted and item_ids else []
    ids = sorted(set(item_ids) | came_or_went | set(related))
    for start in range(0, len(ids), RECORD_CHUNK):
        _replace_shares(project, kind, labels, sums, ids[start : start + RECORD_CHUNK], incoherent)
    read = set(ids)
    through = int(sums[VALUES_THROUGH])
    for new in project_item_ids(project, RECORD_CHUNK, after=through):
        _replace_shares(project, kind, labels, sums, [pk for pk in new if pk not in read], incoherent)
        through = new[-1]
    sums[VALUES_THROUGH] = max([through, *ids[-1:]])
    sums[INCOHERENT_ORIGINALS] = sorted(incoherent)


def _incoherence_update(project: Project, kind, labels, sums: dict, incoherent: set[int]) -> None:
    """Read again the originals whose incoherence came or went since the last run (their
    reasons), `incoherent` being the originals of the probes now answered incoherently."""
    came_or_went = sorted(incoherent ^ set(sums[INCOHERENT_ORIGINALS]))
    for start in range(0, len(came_or_went), RECORD_CHUNK):
        _replace_shares(project, kind, labels, sums, came_or_went[start : start + RECORD_CHUNK], incoherent)
    sums[INCOHERENT_ORIGINALS] = sorted(incoherent)


def _replace_shares(project: Project, kind, labels, sums: dict, ids: list[int], incoherent, *, old=True) -> None:
    """Take the items' stored shares out of `sums` and the filter values (`old`: a run over
    every item has none to take out), and put their new ones in, with their reasons."""
    if not ids:
        return
    counts: Counter = Counter()
    if old:
        stored = ItemFigures.objects.filter(column_in(ItemFigures, "item_id", ids), project=project)
        for record in stored.values_list("value", flat=True):
            sums_apply(sums, record, -1, labels)
            value_counts_apply(counts, record, -1)
        stored.delete()
    shares, reasons = [], []
    for item_id, record in item_records(project, kind, ids).items():
        if record is None:
            continue  # deleted
        sums_apply(sums, record, 1, labels)
        value_counts_apply(counts, record, 1)
        position = record.pop("p", None)
        shares.append(ItemFigures(project=project, item_id=item_id, value=record, disagree_position=position))
        why = list(record.get("r", ())) + ([INCOHERENT] if item_id in incoherent else [])
        if why:
            reasons.append(AdjudicationReason(project=project, item_id=item_id, reasons=why))
    _reasons_position(reasons)
    ItemFigures.objects.bulk_create(shares, batch_size=RECORD_CHUNK)
    _reasons_store(project, ids, reasons)
    _value_counts_add(project, counts)


def _reasons_store(project: Project, ids: list[int], reasons: list[AdjudicationReason]) -> None:
    """Make the stored reasons of items `ids` those just found (`reasons`): the rows of
    items that no longer wait deleted, changed ones updated, new ones inserted. A row that
    stays is not written again: PostgreSQL computes a row's kept state as it is inserted,
    locking its item until the run commits (migration 0035), and a full run rewriting every
    row would hold every waiting item — and keep their adjudications waiting — for its
    whole length."""
    stored = {
        item_id: (pk, why, position)
        for pk, item_id, why, position in AdjudicationReason.objects.filter(
            column_in(AdjudicationReason, "item_id", ids), project=project
        ).values_list("pk", "item_id", "reasons", "position")
    }
    found = {reason.item_id for reason in reasons}
    gone = [pk for item_id, (pk, _why, _position) in stored.items() if item_id not in found]
    changed, new = [], []
    for reason in reasons:
        if reason.item_id not in stored:
            new.append(reason)
            continue
        pk, why, position = stored[reason.item_id]
        if (why, position) != (reason.reasons, reason.position):
            reason.pk = pk
            changed.append(reason)
    if gone:
        AdjudicationReason.objects.filter(pk__in=gone).delete()
    AdjudicationReason.objects.bulk_update(changed, ["reasons", "position"], batch_size=RECORD_CHUNK)
    AdjudicationReason.objects.bulk_create(new, batch_size=RECORD_CHUNK)


def _value_counts_add(project: Project, counts: Counter) -> None:
    """Add {(name, value): items} to the project's ItemValueCount rows; a value left held by
    no item loses its row. Two statements, three when a value went."""
    counts = Counter({key: n for key, n in counts.items() if n})
    if not counts:
        return
    rows = {
        (name, value): (pk, items)
        for pk, name, value, items in ItemValueCount.objects.filter(
            column_in(ItemValueCount, "value", sorted({value for _name, value in counts})), project=project
        ).values_list("pk", "name", "value", "items")
    }
    kept, gone = [], []
    for (name, value), n in counts.items():
        pk, items = rows.get((name, value), (None, 0))
        if items + n > 0:
            kept.append(ItemValueCount(project=project, name=name, value=value, items=items + n))
        elif pk is not None:
            gone.append(pk)
    _value_counts_write(kept, gone)


def item_values_stored(project: Project) -> dict:
    """The filter values (selectors.items.item_values_compute) from the kept counts: two
    index reads, the splits, rounds and flags held and the first groups."""
    from annotation.selectors.items import GROUPS_OFFERED

    # Python's order of strings is by code point: PostgreSQL's "C" collation (its index,
    # migration 0028) on PostgreSQL, SQLite's default elsewhere.
    order = Collate(F("value"), "C") if connection.vendor == "postgresql" else F("value")
    held = ItemValueCount.objects.filter(project=project, name__in=("split", "round", "flag"))
    groups = (
        ItemValueCount.objects.filter(project=project, name="group")
        .order_by(order)
        .values_list("value", flat=True)[:GROUPS_OFFERED]
    )
    return item_values_from_counts(held.values_list("name", "value"), groups)


def project_figure_store(project: Project, name: str, value, *, now=None) -> None:
    """Upsert one stored figure of the project (for a job that computes a figure of its own,
    such as a kind's corpus profile)."""
    ProjectFigures.objects.update_or_create(
        project=project, name=name, defaults={"value": _json(value), "computed_at": now or timezone.now()}
    )
