"""Label a premise/hypothesis pair entailment / neutral / contradiction (FarsTail §3):
NliKind, the page and rules that `nli_relabel` here and `label_test` (its own folder) share,
and NliRelabelKind."""

import hashlib
from collections.abc import Iterator
from typing import Any

from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from annotation.errors import FieldError, InvalidInput
from annotation.kinds.base import Kind, ProjectLink
from annotation.kinds.settings import AGGREGATION_SETTINGS, MODEL_SETTINGS, between, check_aggregation_settings
from annotation.rows import ItemRow, RowProblems, extra_in_order, require_text, store_extra
from annotation.upload_text import FileText
from annotation.wording import join_list

from .formats import (
    FARSTAIL_EXPORT,
    FARSTAIL_EXTRA_COLUMNS,
    farstail_header,
    farstail_row,
    read_farstail,
    with_computed_flags,
)
from .guide import NLI_LABEL_GUIDE
from .labels import LABELS, canonical_label

# Characters of the premise shown before the hypothesis in the console's item list.
PREMISE_SHOWN = 40


class NliKind(Kind):
    template = "nli/annotate.html"
    extra_formats = ("farstail",)
    # The CSV export writes `extra` as JSON; the CSV import reads it back.
    csv_json_fields = ("extra",)
    labels = LABELS
    release_split_shares = {"train": 0.7, "dev": 0.15, "test": 0.15}  # FarsTail §3.2
    # FarsTail §3.2: spelling was cleaned after relabeling, "avoiding probable label change".
    editable_text_fields = ("premise", "hypothesis")

    def guide_sections(self, settings: dict) -> tuple:
        return NLI_LABEL_GUIDE

    def browser_text(self, payload: dict) -> str:
        """The premise, shortened, then the hypothesis: the items of one group share their
        premise, and the hypothesis is what tells them apart in the item list."""
        premise, hypothesis = (
            (payload.get("premise"), payload.get("hypothesis")) if isinstance(payload, dict) else (None, None)
        )
        if not isinstance(premise, str) or not isinstance(hypothesis, str):
            return super().browser_text(payload)
        short = premise if len(premise) <= PREMISE_SHOWN else premise[: PREMISE_SHOWN - 1] + "…"
        return f"{short} · {hypothesis}" if hypothesis else short

    def wants_another_vote(self, item, settings: dict, submitted: int) -> bool:
        from annotation.services.aggregation import categorical_wants_another_vote

        return categorical_wants_another_vote(self, item, settings, submitted)

    def parse_record(self, record: dict, row: int) -> tuple[ItemRow | None, list[FieldError]]:
        problems = RowProblems(row)
        common = self.common_fields(record, problems)
        premise = require_text(record, "premise", problems)
        hypothesis = require_text(record, "hypothesis", problems)
        label = ""
        # The JSONL and CSV exports name the imported label `author_label` (beside the
        # decided `gold_label`): an exported file imports back with its labels.
        field = "label" if record.get("label") not in (None, "") else "author_label"
        if record.get(field) not in (None, ""):
            label = canonical_label(record[field]) or ""
            if not label:
                problems.add(field, gettext("must be one of %(choices)s (or e, n, c)") % {"choices": join_list(LABELS)})
        author = require_text(record, "author", problems, required=False, identifier=True)
        extra = record.get("extra")
        if extra is not None and not isinstance(extra, dict):
            problems.add("extra", gettext("must be an object"))
        if problems.errors:
            return None, problems.errors
        payload = {"premise": premise, "hypothesis": hypothesis}
        if extra:
            store_extra(payload, extra)
        return ItemRow(payload=payload, reference_label=label, author=author, position=row, **common), []

    def derived_group(self, payload: dict) -> str:
        """Pairs without a group in their file are grouped by their premise (exact text as
        stored), so that an annotator does not get the same premise twice in a row while
        another is available (FarsTail §3.2) whatever the import format. A digest, because
        a premise may be longer than a group. FarsTail files group consecutive rows of one
        premise themselves (formats.py); a group from the file always wins.

        >>> NliKind().derived_group({"premise": "a"})[:20]
        'premise:ca978112ca1b'
        """
        premise = payload.get("premise")
        if not isinstance(premise, str) or not premise:
            return ""
        return "premise:" + hashlib.sha256(premise.encode("utf-8")).hexdigest()

    def read_format(self, fmt: str, text: FileText, filename: str) -> Iterator[tuple[int, dict]]:
        if fmt != "farstail":
            yield from super().read_format(fmt, text, filename)
            return
        yield from read_farstail(text, filename)

    def annotator_payload(self, item) -> dict:
        return {"premise": item.payload["premise"], "hypothesis": item.payload["hypothesis"]}

    def clean_value(self, value: Any, item) -> dict:
        if not isinstance(value, dict):
            raise InvalidInput(gettext('must be an object like {"label": "entailment"}'), field="value")
        unknown = set(value) - {"label"}
        if unknown:
            raise InvalidInput(
                gettext("unknown field(s): %(unknown)s") % {"unknown": join_list(sorted(map(str, unknown)))},
                field="value",
            )
        label = value.get("label")
        if label not in LABELS:
            raise InvalidInput(
                gettext("must be one of %(choices)s") % {"choices": join_list(LABELS)}, field="value.label"
            )
        return {"label": label}

    export_extra_formats = {"farstail": FARSTAIL_EXPORT}

    def export_record(self, item, facts) -> dict:
        """premise and hypothesis as stored; `votes` has every label (0 when none) and, like
        the consensus step, counts the author's or original label as one vote where the kind
        aggregates by consensus. While the current round is undecided, `votes` and `n` are
        the votes so far and `agreement` and `label_changed` are null."""
        outcome = facts.outcome
        if outcome is not None:
            counts = dict(outcome.votes)
            n = outcome.n_votes
        else:
            counts = {}
            cast = [value.get("label") for _annotator, value in facts.annotations if isinstance(value, dict)]
            if self.aggregates_by_consensus and item.reference_label:
                cast.append(item.reference_label)
            for label in cast:
                if isinstance(label, str):
                    counts[label] = counts.get(label, 0) + 1
            n = sum(counts.values())
        votes = {label: counts.get(label, 0) for label in LABELS}
        votes.update({label: count for label, count in sorted(counts.items()) if label not in votes})
        # The common record, with premise and hypothesis in place of the payload and the
        # votes counted as above; keys keep the common record's order.
        common = super().export_record(item, facts)
        return {
            "id": common["id"],
            "premise": item.payload.get("premise", ""),
            "hypothesis": item.payload.get("hypothesis", ""),
            **{key: value for key, value in common.items() if key not in ("id", "payload")},
            "votes": votes,
            "n": n,
            "annotator_labels": [
                value.get("label") if isinstance(value, dict) else None for _annotator, value in facts.annotations
            ],
            "extra": with_computed_flags(extra_in_order(item.payload, FARSTAIL_EXTRA_COLUMNS), item.computed),
            "aggregates": facts.aggregates or {},
        }

    def export_csv_columns(self) -> tuple[str, ...]:
        return (
            "id", "premise", "hypothesis", "gold_label", "author_label",
            *(f"votes_{label}" for label in LABELS),
            "n", "round", "group", "split", "status", "label_changed", "agreement",
            "author", "annotators", "annotator_labels", "extra",
        )  # fmt: skip

    def export_table_header(self, fmt: str, items) -> list[str]:
        if fmt != "farstail":
            return super().export_table_header(fmt, items)
        return farstail_header(items)

    def export_table_row(self, fmt: str, item, header: list[str]) -> list[str]:
        if fmt != "farstail":
            return super().export_table_row(fmt, item, header)
        return farstail_row(item, header)

    # Release: bias analysis, near-duplicates and leaks read the pair; model evaluation.

    def pair_texts(self, payload: dict) -> tuple[str, str] | None:
        return payload["premise"], payload["hypothesis"]

    def evaluation_scorer(self):
        from .evaluation import NliScorer

        # A model is scored against the decided gold, or the imported label where that is
        # the gold (label_test's hidden gold; the testers' majority is not gold there).
        return NliScorer(self.labels, "reference_label" if self.reference_label_is_gold else "gold_label")

    # Krippendorff's alpha per round (nominal), against the consensus gold or the hidden one.
    computes_agreement = True

    def compute_agreement(self, project, job) -> dict:
        from .agreement import agreement_compute_per_round

        return agreement_compute_per_round(project, job, consensus=self.aggregates_by_consensus)


class NliRelabelKind(NliKind):
    name = "nli_relabel"
    title = _("NLI relabeling")
    short_title = _("NLI relabeling")

    default_settings = {
        "consensus_k": 4,
        "consensus_n": 5,
        "revision_rounds": 1,
        **AGGREGATION_SETTINGS,
        **MODEL_SETTINGS,
    }
    settings_help = {
        "consensus_k": _("Labels that must agree for an item to be accepted (FarsTail: 4)."),
        "consensus_n": _(
            "Labels an item collects in a round, the author's or the original label counting as one (FarsTail: 5)."
        ),
        "revision_rounds": _("Times a failed item goes back to its author before it is removed (FarsTail: 1)."),
    }
    settings_labels = {
        "consensus_k": _("Labels that must agree (k)"),
        "consensus_n": _("Labels per round (n)"),
        "revision_rounds": _("Revisions before removal"),
    }
    settings_units = {"consensus_k": _("labels"), "consensus_n": _("labels"), "revision_rounds": _("times")}
    round_bound_settings = {
        "consensus_k": _("the votes already cast were collected for the old k-of-n rule"),
        "consensus_n": _("the number of votes a running round collects would change under its items"),
    }
    aggregates_by_consensus = True
    default_export_status = "accepted"
    # Failed pairs go back to their author (FarsTail §3.2): the revision page and operations.
    urls = ("annotation.kinds.nli.urls",)

    def check_settings(self, settings: dict) -> None:
        k, n = settings["consensus_k"], settings["consensus_n"]
        if not 2 <= n <= 50:
            raise InvalidInput(between(2, 50), field="settings.consensus_n")
        if not (n / 2 < k <= n):
            raise InvalidInput(
                gettext("must be more than half of the labels per round and at most all of them"),
                field="settings.consensus_k",
            )
        if not 0 <= settings["revision_rounds"] <= 5:
            raise InvalidInput(between(0, 5), field="settings.revision_rounds")
        check_aggregation_settings(settings)

    def k_of_n_rule(self, settings: dict) -> tuple[int, int]:
        return settings["consensus_k"], settings["consensus_n"]

    def blind_to_suggestions(self, settings: dict) -> bool:
        # FarsTail §3.2: under its k-of-n rule every relabel round, the one after a
        # revision included, is blind, the author's label counting as one independent
        # vote. A project deciding by another method is crowd labelling, not that protocol.
        return settings["aggregation"] == "k_of_n"

    def status_after_round(self, *, accepted: bool, author_id: int | None, round_: int, settings: dict) -> str:
        """Accepted stays accepted; a failed round goes back to its author while revisions
        remain (FarsTail §3.2: one), otherwise the item is removed (and waits in the
        adjudication queue)."""
        if accepted:
            return "accepted"
        if author_id is not None and round_ <= settings["revision_rounds"]:
            return "needs_revision"
        return "removed"

    def gold_statuses_from_aggregation(self, method: str) -> tuple[str, ...]:
        # k-of-n and majority decide the round and its gold in the consensus step; the pool
        # methods set the gold of the accepted items (annotation.services.aggregation).
        return ("accepted",) if method in ("dawid_skene", "mace") else ()

    def votes_for(self, settings: dict, *, with_reference: bool) -> int:
        # The author's or original label is one of the n votes (FarsTail §3).
        return settings["consensus_n"] - (1 if with_reference else 0)

    def report_sections(self, project) -> dict:
        """Outcomes per round, label changes, the intended × consensus confusion, the alpha
        reports and agreement per annotator (reports.py)."""
        from .reports import consensus_sections_for_project

        return {**consensus_sections_for_project(project), "aggregation": self._aggregation_report(project)}

    # The consensus sections are sums over items: kept by the changed items on the worker.
    report_counted = True

    def report_counts(self, project, item_ids: list[int]) -> dict[int, dict[str, dict[str, int]]]:
        from .reports import consensus_counts

        return consensus_counts(project, item_ids)

    def report_sections_from_counts(self, project, counts: dict[str, dict[str, int]]) -> dict:
        from .reports import consensus_sections_from_counts

        return {**consensus_sections_from_counts(counts), "aggregation": self._aggregation_report(project)}

    def _aggregation_report(self, project) -> dict:
        from annotation.selectors.aggregation import aggregation_report_for_project

        return aggregation_report_for_project(project, self.project_settings(project)["aggregation"])

    # --- pages and review ------------------------------------------------------------

    def project_links(self, project) -> list[ProjectLink]:
        return [ProjectLink("revisions", _("Revisions")), ProjectLink("bias", _("Dataset bias"))]
