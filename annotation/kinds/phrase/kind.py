"""The `phrase_pair` kind's rules (fine-grained-nli-coherence §3, §5, appendix A.1;
docs/kinds.md "The kinds").

Import
- JSONL / CSV rows: `id, left, right, label?, source?, score?, group?, split?, phrasis?,
  extra?`. `label` is one of the seven (EQUIVALENT ...) or PhrasIS's code (EQUI, FORW,
  BACK, SIMI, REL, OPPO, UNR), compared after strip() (upstream label cells carry trailing
  spaces), stored canonical as the item's reference label. Text is stored byte-exact.
- `phrasis`: PhrasIS's own files (formats.py).

Annotating: the annotator sees `{left, right}` only and submits `{"label": one of the
seven}`. Each item needs `labels_per_item` labels (default 3); the imported label is not
a vote. Reversed copies of pairs the annotator labeled with one of `probe_labels` are
mixed in as probes (probes.py), needing one label each.

Gold and the export: labels.majority_gold. Coherence and agreement: reports.py.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from annotation.errors import FieldError, InvalidInput
from annotation.kinds.base import Kind, ProjectLink, ReleaseFile
from annotation.kinds.settings import (
    AGGREGATION_SETTINGS,
    MODEL_SETTINGS,
    SEED_RANGE,
    between,
    check_aggregation_settings,
    check_range,
)
from annotation.metrics.coherence import LABELS, REVERSED_PAIR_LABELS
from annotation.rows import ItemRow, RowProblems, extra_in_order, require_text, store_extra
from annotation.upload_text import FileText
from annotation.wording import join_list

from .formats import finite_score, phrasis_release_files, read_phrasis
from .guide import PHRASE_LABEL_GUIDE
from .labels import CODES, canonical_label, majority_gold
from .probes import PROBE_MARK, probe_next_for_annotator, probes_remaining_for_annotator
from .reports import (
    ALL_SOURCES,
    agreement_compute_per_source,
    coherence_by_annotator,
    coherence_from_counts,
    coherence_report_for_project,
    incoherent_probe_answers,
    phrase_counts,
    phrase_sections_from_counts,
    probes_of,
)

MAX_PHRASE_LENGTH = 5_000


class PhrasePairKind(Kind):
    name = "phrase_pair"
    title = _("Fine-grained phrase pairs (PhrasIS)")
    short_title = _("Phrase pairs")
    recompute_pages = ("phrase-coherence",)

    # What report_sections adds to the project's report, for the API's schema.
    report_keys = {
        "coherence": "soft and hard coherence per annotator",
        "label_distribution": "labels cast per source",
        "imported_label_distribution": "imported labels per source",
    }
    template = "phrase/annotate.html"
    extra_formats = ("phrasis",)
    # The CSV export writes these as JSON; the CSV import reads them back.
    csv_json_fields = ("phrasis", "extra")
    export_pages = ((_("PhrasIS (TSV)"), "api-export-phrasis", ""),)
    labels = LABELS
    # probe_seed: with the project's secret, keys the probe draws (kinds.base.keyed_draw);
    # another seed draws anew. probe_labels: the annotator's labels whose pairs are
    # reversed as probes (§5 reverses these three).
    default_settings = {
        "labels_per_item": 3,
        "probe_rate": 0.1,
        "probe_seed": 0,
        "probe_labels": list(REVERSED_PAIR_LABELS),
        **AGGREGATION_SETTINGS,
        **MODEL_SETTINGS,
    }
    supervisor_only_settings = ("probe_seed",)
    settings_help = {
        "labels_per_item": _("Annotators who label each pair."),
        "probe_rate": _("Share of reversed copies mixed in as coherence probes (0 to 0.5)."),
        "probe_seed": _("Seed of the draw that picks the probes."),
        "probe_labels": _(
            "Labels whose pairs may be reversed into probes (fine-grained-nli-coherence §3: EQUIVALENT, FORWARD, BACKWARD)."
        ),
    }
    settings_labels = {
        "labels_per_item": _("Annotators per pair"),
        "probe_rate": _("Share of reversed probes"),
        "probe_seed": _("Seed of the probe draw"),
        "probe_labels": _("Labels that may be reversed"),
    }
    settings_units = {"labels_per_item": _("annotators")}
    # The paper names these labels by their codes, so the form shows the codes.
    settings_choices = {"probe_labels": {label: label for label in LABELS}}
    rare_settings = ("probe_seed",)
    round_bound_settings = {
        "labels_per_item": _(
            "pairs being labelled would need a different number of labels than the round was collected for"
        ),
        "probe_labels": _("probes already handed out were chosen by the old labels, so coherence would mix two rules"),
        "probe_rate": _("the probes already mixed in were drawn at the old rate"),
    }

    computes_agreement = True
    # An imported PhrasIS label is the experts' (the paper's gold). Model evaluation scores
    # against the stored majority first and this label where none is stored (PhraseScorer).
    reference_label_is_gold = True
    urls = ("annotation.kinds.phrase.urls",)

    def guide_sections(self, settings: dict) -> tuple:
        return PHRASE_LABEL_GUIDE

    # --- settings ---------------------------------------------------------------------------

    def check_settings(self, settings: dict) -> None:
        if not 1 <= settings["labels_per_item"] <= 100:
            raise InvalidInput(between(1, 100), field="settings.labels_per_item")
        if not 0.0 <= settings["probe_rate"] <= 0.5:
            # Above one half, most of an annotator's work would be probes.
            raise InvalidInput(between(0, 0.5), field="settings.probe_rate")
        check_range(settings, "probe_seed", *SEED_RANGE)
        labels = settings["probe_labels"]
        if (
            not labels
            or not all(isinstance(label, str) and label in REVERSED_PAIR_LABELS for label in labels)
            or len(set(labels)) != len(labels)
        ):
            raise InvalidInput(
                gettext(
                    "must list one or more of %(labels)s (the relations whose reversed label the paper defines), "
                    "each once"
                )
                % {"labels": join_list(REVERSED_PAIR_LABELS)},
                field="settings.probe_labels",
            )
        check_aggregation_settings(settings)

    def k_of_n_rule(self, settings: dict) -> tuple[int, int]:
        # More than half of the labels (2 of 3): the kind's gold, labels.majority_gold, but
        # for its tie-break by the imported label.
        n = settings["labels_per_item"]
        return n // 2 + 1, n

    def gold_statuses_from_aggregation(self, method: str) -> tuple[str, ...]:
        # The default keeps the kind's own gold (set on submit); another chosen method sets
        # the gold of the complete items (annotation.services.aggregation).
        return () if method == "k_of_n" else ("complete",)

    def wants_another_vote(self, item, settings: dict, submitted: int) -> bool:
        from annotation.services.aggregation import categorical_wants_another_vote

        return categorical_wants_another_vote(self, item, settings, submitted)

    # --- import -----------------------------------------------------------------------------

    def parse_record(self, record: dict, row: int) -> tuple[ItemRow | None, list[FieldError]]:
        problems = RowProblems(row)
        common = self.common_fields(record, problems)
        left = require_text(record, "left", problems)
        right = require_text(record, "right", problems)
        for name, text in (("left", left), ("right", right)):
            if len(text) > MAX_PHRASE_LENGTH:
                problems.add(name, gettext("is longer than %(n)s characters") % {"n": MAX_PHRASE_LENGTH})
        if PROBE_MARK in common["external_id"]:
            problems.add(
                "id", gettext("must not contain “%(mark)s” (it marks reversed probe copies)") % {"mark": PROBE_MARK}
            )
        label = ""
        if record.get("label") not in (None, ""):
            label = canonical_label(record["label"]) or ""
            if not label:
                problems.add(
                    "label",
                    gettext("must be one of %(choices)s (or %(codes)s)")
                    % {"choices": join_list(LABELS), "codes": join_list(CODES)},
                )
        source = require_text(record, "source", problems, required=False, identifier=True)
        if source == ALL_SOURCES:
            problems.add(
                "source",
                gettext("“%(name)s” names the overall agreement scope; choose another name") % {"name": ALL_SOURCES},
            )
        score = record.get("score")
        if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float, str))):
            problems.add("score", gettext("must be a number or a string"))
        elif score not in (None, "") and not finite_score(score):
            problems.add("score", gettext("must be a finite number"))
        payload: dict[str, Any] = {"left": left, "right": right}
        for name in ("phrasis", "extra"):
            value = record.get(name)
            if value is None:
                continue
            if not isinstance(value, dict):
                problems.add(name, gettext("must be an object"))
            elif name == "phrasis" and not all(isinstance(v, str) for v in value.values()):
                problems.add(name, gettext("must map column names to strings"))
            elif name == "extra" and value:
                store_extra(payload, value)
            elif value:
                payload[name] = value
        if problems.errors:
            return None, problems.errors
        if source:
            payload["source"] = source
        if score not in (None, ""):
            payload["score"] = score
        return ItemRow(payload=payload, reference_label=label, position=row, **common), []

    def read_format(self, fmt: str, text: FileText, filename: str) -> Iterator[tuple[int, dict]]:
        if fmt != "phrasis":
            yield from super().read_format(fmt, text, filename)
            return
        yield from read_phrasis(text, filename)

    # --- annotating -------------------------------------------------------------------------

    def votes_for(self, settings: dict, *, with_reference: bool) -> int:
        return settings["labels_per_item"]

    def votes_needed(self, item, settings: dict) -> int:
        # A probe belongs to the one annotator it was made for.
        return 1 if item.probe_of_id else super().votes_needed(item, settings)

    def annotator_payload(self, item) -> dict:
        return {"left": item.payload["left"], "right": item.payload["right"]}

    def clean_value(self, value: Any, item) -> dict:
        if not isinstance(value, dict):
            raise InvalidInput(gettext("must be an object holding the chosen label"), field="value")
        unknown = set(value) - {"label"}
        if unknown:
            raise InvalidInput(gettext("holds fields other than the label"), field="value")
        label = value.get("label")
        if label not in LABELS:
            raise InvalidInput(
                gettext("must be one of %(choices)s") % {"choices": join_list(LABELS)}, field="value.label"
            )
        return {"label": label}

    def round_rule_decision(self, item, labels: list, settings: dict) -> tuple[str, str | None]:
        """The majority of the round's labels, a tie broken by the imported label
        (labels.majority_gold); the method names how it was reached."""
        gold, how, _tie = majority_gold(labels, item.reference_label)
        return how or "majority", gold

    def probe_for_annotator(self, project, user, settings: dict, *, last_group: str | None, now) -> int | None:
        return probe_next_for_annotator(project, user, settings, last_group=last_group)

    def probes_remaining_for_annotator(self, project, user, settings: dict, *, ordinary_remaining: int) -> int:
        return probes_remaining_for_annotator(project, user, settings, ordinary_remaining=ordinary_remaining)

    # --- release ----------------------------------------------------------------------------

    def model_texts(self, payload: dict) -> tuple[str, ...] | None:
        return payload["left"], payload["right"]

    def evaluation_scorer(self):
        from .evaluation import PhraseScorer

        return PhraseScorer()

    # --- results ----------------------------------------------------------------------------

    def report_sections(self, project) -> dict:
        from annotation.selectors.aggregation import aggregation_report_for_project

        settings = self.settings_for(project.settings)
        return {
            **coherence_report_for_project(
                project, probe_rate=settings["probe_rate"], probe_labels=settings["probe_labels"]
            ),
            "aggregation": aggregation_report_for_project(project, settings["aggregation"]),
        }

    # The labels per source and the coherence per annotator are sums over items: kept by the
    # changed items on the worker (reports.phrase_counts).
    report_counted = True
    report_counts_version = "phrase-1"

    def report_counts(self, project, item_ids: list[int]) -> dict[int, dict[str, dict[str, int]]]:
        return phrase_counts(project, item_ids)

    def report_related(self, project, item_ids: list[int]) -> list[int]:
        return probes_of(project, item_ids)

    def coherence_from_counts(self, counts: dict[str, dict[str, int]]) -> tuple[dict[int, dict], set[int]]:
        return coherence_from_counts(counts)

    def report_sections_from_counts(self, project, counts: dict[str, dict[str, int]]) -> dict:
        from annotation.selectors.aggregation import aggregation_report_for_project

        settings = self.settings_for(project.settings)
        return {
            **phrase_sections_from_counts(
                counts, probe_rate=settings["probe_rate"], probe_labels=settings["probe_labels"]
            ),
            "aggregation": aggregation_report_for_project(project, settings["aggregation"]),
        }

    def compute_agreement(self, project, job) -> dict:
        return agreement_compute_per_source(project, job)

    def annotator_coherence(self, project) -> dict[int, dict]:
        return coherence_by_annotator(project)

    def incoherent_probes(self, project) -> list[tuple[int, int, str, str]]:
        return incoherent_probe_answers(project)

    # --- export -----------------------------------------------------------------------------

    def adjudicated_record(self, record: dict, adjudication) -> dict:
        return {**super().adjudicated_record(record, adjudication), "gold_source": "adjudicated"}

    def export_record(self, item, facts) -> dict:
        """left and right as stored; the imported label; the decided gold (the decision
        ledger's: `Item.gold_label`) with the method that decided it, and whether the
        round's votes tied for the top; votes per label of the current round."""
        cast = [value.get("label") for _annotator, value in facts.annotations if isinstance(value, dict)]
        _majority, _how, tie = majority_gold(cast, item.reference_label)
        gold = item.gold_label or None
        how = facts.decision.method if facts.decision is not None and gold else None
        counts = Counter(label for label in cast if isinstance(label, str))
        payload = item.payload
        return {
            "id": item.external_id,
            "left": payload.get("left", ""),
            "right": payload.get("right", ""),
            "source": payload.get("source", ""),
            "score": payload.get("score"),
            "label": item.reference_label or None,
            "gold_label": gold,
            "gold_source": how,
            "tie": tie,
            "votes": {label: counts.get(label, 0) for label in LABELS},
            "n": len(cast),
            "group": item.group,
            "split": item.split,
            "status": item.status,
            "annotators": [annotator for annotator, _value in facts.annotations],
            "annotator_labels": cast,
            "phrasis": payload.get("phrasis") or {},
            "extra": extra_in_order(payload),
            "aggregates": facts.aggregates or {},
        }

    def release_files(self, project, split: str, items):
        """PhrasIS's own files, one per source and polarity (formats.phrasis_release_files);
        the Hub reads no headerless TSV beside the JSONL, so they are in no config."""
        for name, data in phrasis_release_files(items, split):
            yield ReleaseFile(f"phrasis/{name}", data)

    def release_texts(self, payload: dict) -> dict[str, list[str]]:
        return {side: [payload[side]] for side in ("left", "right") if isinstance(payload.get(side), str)}

    def export_csv_columns(self) -> tuple[str, ...]:
        return (
            "id", "left", "right", "source", "score", "label", "gold_label", "gold_source", "tie",
            *(f"votes_{label}" for label in LABELS),
            "n", "group", "split", "status", "annotators", "annotator_labels", "phrasis", "extra",
        )  # fmt: skip

    # --- pages and review ------------------------------------------------------------

    def project_links(self, project) -> list[ProjectLink]:
        return [ProjectLink("phrase-coherence", _("Coherence dashboard"))]
