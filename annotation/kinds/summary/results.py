"""`summary_rating` results: interval agreement (the agreement job) and the report's figures,
from the stored ratings, the automatic scores of the file and the intrinsic measures
(annotation.kinds.summary.measures).

Human scores (report and agreement): the unit is one summary of one item. A rater's
display-index keys are mapped to stored summaries through the item's `order`.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.utils import timezone

from annotation.kinds.summary.measures import (
    NOVEL_N,
    PROFILE_FIGURE,
    REDUNDANCY_N,
    json_column,
    summary_measures_compute,
)
from annotation.kinds.summary.ratings import CRITERIA, ERROR_TAG_NAMES, stored_ratings, tag_name
from annotation.metrics.agreement import slot_matrix
from annotation.metrics.intervals import counted_mean_bounded_interval
from annotation.metrics.summary import correlations
from annotation.models import AgreementReport, Annotation, Item
from annotation.selectors.figures import stored_figures
from annotation.services.jobs import job_set_progress
from annotation.sql import column_in

LEVEL = "interval"
# The ROUGE the measuring job computes against the reference summary, by the names the
# report's figures and correlations give it (the file's own scores keep their names).
COMPUTED_ROUGE = {"rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rougeL": "ROUGE-L"}
# BERTScore F1 against the reference summary (Table 3) and against the article (Table 1's
# article-summary similarity), when the measuring job had a model.
COMPUTED_BERTSCORE = {"bertscore": "BERTScore", "article_bertscore": "BERTScore (article)"}
SCALE = (1, 5)  # the rating scale of both criteria


# --- reading ratings ------------------------------------------------------------------------


def _items(project, ids: list[int] | None = None) -> dict[int, dict]:
    """{item id: {"systems", "order", "scores", "intrinsic", "bertscore_model"}} of every
    item (or of the items `ids`) in one query, without the article (long) and the
    summaries' texts."""
    rows = Item.objects.filter(project=project)
    if ids is not None:
        rows = rows.filter(column_in(Item, "id", ids))
    rows = rows.values_list("pk", "payload__summaries", "payload__order", "computed__intrinsic")
    out = {}
    for pk, summaries, order, intrinsic in rows:
        summaries, order, intrinsic = json_column(summaries), json_column(order), json_column(intrinsic)
        out[pk] = {
            "systems": [s.get("system") for s in summaries or []],
            "scores": [s.get("scores") or {} for s in summaries or []],
            "order": order or [],
            "intrinsic": (intrinsic or {}).get("summaries") if isinstance(intrinsic, dict) else None,
            "bertscore_model": intrinsic.get("bertscore_model") if isinstance(intrinsic, dict) else None,
        }
    return out


def _ratings(project, items: dict[int, dict], ids: list[int] | None = None) -> list[tuple[int, int, int, dict]]:
    """(item id, stored summary index, annotator id, rating) for every rating cast (or cast
    on the items `ids`), in one query."""
    out = []
    rows = (
        Annotation.objects.filter(item__project=project)
        if ids is None
        else Annotation.objects.filter(column_in(Annotation, "item_id", ids))
    )
    for item_id, annotator_id, value in rows.values_list("item_id", "annotator_id", "value"):
        info = items.get(item_id)
        if info is None:
            continue
        for stored, rating in stored_ratings(value, info["order"]):
            out.append((item_id, stored, annotator_id, rating))
    return out


# --- agreement ------------------------------------------------------------------------------


def _slot_matrix(units: dict) -> np.ndarray:
    """The reliability matrix (value slots × units) of {unit: [values]}."""
    values = list(units.values())
    unit_index = np.repeat(np.arange(len(values)), [len(cast) for cast in values])
    return slot_matrix(unit_index, np.array([v for cast in values for v in cast], dtype=np.float64), len(values))


def summary_agreement_compute(project, job) -> dict:
    """Interval alpha (Krippendorff; HeSum §4 reports 0.78) with a percentile bootstrap CI
    over units, for scopes {"criterion": "coherence"}, {"criterion": "completeness"} and
    {"criterion": "all"} (a unit is one criterion of one summary of one item, so "all"
    pools both criteria). Upserts the AgreementReports and drops this project's other
    scopes. Measures items without intrinsic measures first."""
    measured = summary_measures_compute(project)
    if job is not None:
        job_set_progress(job.pk, 0.3)
    items = _items(project)
    units: dict[str, dict[tuple, list[float]]] = {criterion: defaultdict(list) for criterion in CRITERIA}
    coders: dict[str, dict[tuple, set]] = {criterion: defaultdict(set) for criterion in CRITERIA}
    for item_id, stored, annotator_id, rating in _ratings(project, items):
        for criterion in CRITERIA:
            score = rating.get(criterion)
            if isinstance(score, int) and not isinstance(score, bool):
                units[criterion][(item_id, stored)].append(float(score))
                coders[criterion][(item_id, stored)].add(annotator_id)
    # Units and their coders under the same keys ((criterion, item, summary)) in every scope.
    scopes = [
        (
            {"criterion": c},
            {(c, *key): v for key, v in units[c].items()},
            {(c, *key): v for key, v in coders[c].items()},
        )
        for c in CRITERIA
    ]
    scopes.append(
        (
            {"criterion": "all"},
            {(c, *key): v for c in CRITERIA for key, v in units[c].items()},
            {(c, *key): v for c in CRITERIA for key, v in coders[c].items()},
        )
    )
    now = timezone.now()
    from annotation.services.agreement import (
        agreement_reports_replace,
        alpha_with_ci,
        bootstrap_details,
        report_figures,
        scope_key,
    )

    reports = []
    for scope, scope_units, scope_coders in scopes:
        matrix = _slot_matrix(scope_units)
        point, boot, reason = alpha_with_ci(matrix, LEVEL)
        pairable = [key for key, cast in scope_units.items() if len(cast) >= 2]
        n_coders = len(set().union(*(scope_coders[key] for key in pairable))) if pairable else 0
        reports.append(
            AgreementReport(
                project=project,
                scope=scope,
                scope_key=scope_key(scope),
                level=LEVEL,
                **report_figures(point, boot, reason, n_coders),
                details={
                    "units_total": len(scope_units),
                    "pairable_values": point.pairable_values,
                    "bootstrap": bootstrap_details(boot),
                },
                job=job,
                computed_at=now,
            )
        )
    return {
        **agreement_reports_replace(reports, AgreementReport.objects.filter(project=project)),
        "intrinsic": measured,
    }


# --- report ---------------------------------------------------------------------------------


def _finite(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) else None


@dataclass(frozen=True)
class SummaryFacts:
    """What the report reads of one summary: its item and system, the file's finite scores
    (as floats), its finite intrinsic measures, the scores cast per criterion (None:
    nobody rated it), the error tags cast, and the scores its mean ratings are paired with
    in the correlations (the file's and the computed ones, as floats)."""

    item_id: int
    system: Any
    automatic: dict[str, float]
    intrinsic: dict[str, Any]
    cast: dict[str, list[int]] | None
    tags: list[str]
    paired: dict[str, float]


def summary_facts(items: dict[int, dict], ratings: list[tuple[int, int, int, dict]]) -> Iterator[SummaryFacts]:
    """The facts of every summary of `items` (`_items`), in the items' order, from their
    `ratings` (`_ratings`)."""
    cast: dict[tuple[int, int], dict[str, list[int]]] = defaultdict(lambda: {c: [] for c in CRITERIA})
    tags_cast: dict[tuple[int, int], list[str]] = defaultdict(list)
    for item_id, stored, _annotator, rating in ratings:
        for criterion in CRITERIA:
            score = rating.get(criterion)
            if isinstance(score, int) and not isinstance(score, bool):
                cast[(item_id, stored)][criterion].append(score)
        tags_cast[(item_id, stored)].extend(tag for tag in rating.get("errors") or [] if isinstance(tag, str))
    for item_id, info in items.items():
        for stored, system in enumerate(info["systems"]):
            automatic = {
                name: float(value) for name, value in info["scores"][stored].items() if _finite(value) is not None
            }
            intrinsic: dict[str, Any] = {}
            measures = info["intrinsic"][stored] if info["intrinsic"] and stored < len(info["intrinsic"]) else None
            if isinstance(measures, dict):
                for n, value in (measures.get("novel_ngrams") or {}).items():
                    if _finite(value) is not None:
                        intrinsic[f"novel_ngrams_{n}"] = value
                for n, value in (measures.get("redundancy") or {}).items():
                    if _finite(value) is not None:
                        intrinsic[f"redundancy_{n}"] = value
                if _finite(measures.get("compression_ratio")) is not None:
                    intrinsic["compression_ratio"] = measures["compression_ratio"]
            computed = _computed_scores(measures)
            intrinsic.update(computed)
            paired = {
                name: float(value)
                for name, value in {**info["scores"][stored], **computed}.items()
                if _finite(value) is not None
            }
            key = (item_id, stored)
            yield SummaryFacts(item_id, system, automatic, intrinsic, cast.get(key), tags_cast.get(key, []), paired)


def summary_report_sections(project, settings: dict) -> dict:
    """The figures of a summary_rating project (two queries besides the report's own):

    - `systems`: per system (order of first appearance in the file), per criterion the mean
      of its summaries' mean ratings with a 95% bootstrap percentile interval
      (metrics.intervals.counted_mean_bounded_interval over how many summaries have each
      mean rating; n = summaries of that system with at least one rating), which stays
      within 1-5 where a t interval over few, spread summaries would reach past it. The
      unit is the summary, not the single rating: a summary's raters are not independent
      samples of the system.
      Also the number of summaries and of ratings, automatic score means, and the means of
      the intrinsic measures over all its summaries (rated or not).
    - `error_table`: HeSum Table 4's layout, one row per error tag (the project's tags in
      their order, then any other tag found in stored ratings), one column per system:
      `summaries` = summaries of that system that at least one rater tagged, `tags` = tags
      cast (summed over raters), `rated` = summaries of the system with a rating.
    - `systems[].intrinsic.rouge`: the mean ROUGE-1/2/L F-measure of the system's summaries
      against the reference summary (the `reference_system` setting; HeSum Table 3), None
      for the reference itself and where items have no reference.
    - `systems[].intrinsic.bertscore`: the mean BERTScore F1 against the reference
      (`bertscore`, Table 3) and against the article (`article_bertscore`, Table 1, over the
      articles within the model's limit); None without a BERTScore model.
      `bertscore_models` names the models the stored scores came from.
    - `correlations`: per criterion and automatic score (the file's scores, and the computed
      ROUGE as "ROUGE-1", "ROUGE-2", "ROUGE-L", and BERTScore as "BERTScore", "BERTScore
      (article)"), Pearson r and Kendall tau-b with
      two-sided p-values (annotation.metrics.summary.correlations) over the summaries that
      have both a mean human rating and that score.
    - `intrinsic_status`: items measured / missing (the report computes nothing).
    - `profile`: HeSum Table 1's linguistic profile per split, as the measuring job last
      stored it (annotation.kinds.summary.measures.summary_profile_compute), or None before
      the first job. Its morphology figures (`lemmas`, `anaphors_mean`,
      `anaphors_possible_mean`, `construct_mean`, `construct_possible_mean`, `known_words`;
      annotation.metrics.hebrew_morphology) are hspell's, named by `analyser`, and None
      where it was not installed or the project is not Hebrew."""
    items = _items(project)
    ratings = _ratings(project, items)
    systems: list[str] = []
    for info in items.values():
        for system in info["systems"]:
            if system not in systems:
                systems.append(system)

    per_system = {
        system: {
            "means": {c: Counter() for c in CRITERIA},
            "ratings": 0,
            "summaries": 0,
            "rated": 0,
            "automatic": defaultdict(list),
            "intrinsic": defaultdict(list),
            "tags": defaultdict(int),
            "tagged": defaultdict(int),
        }
        for system in systems
    }
    pairs: dict[tuple[str, str], tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    measured_items = sum(1 for info in items.values() if info["intrinsic"] is not None)
    for facts in summary_facts(items, ratings):
        row = per_system[facts.system]
        row["summaries"] += 1
        for name, value in facts.automatic.items():
            row["automatic"][name].append(value)
        for name, value in facts.intrinsic.items():
            row["intrinsic"][name].append(value)
        if facts.cast is not None:
            row["ratings"] += max(len(facts.cast[c]) for c in CRITERIA)
            if any(facts.cast[c] for c in CRITERIA):
                row["rated"] += 1
            for criterion in CRITERIA:
                if facts.cast[criterion]:
                    mean = sum(facts.cast[criterion]) / len(facts.cast[criterion])
                    row["means"][criterion][mean] += 1
                    for name, value in facts.paired.items():
                        human, automatic = pairs[(criterion, name)]
                        human.append(mean)
                        automatic.append(value)
        for tag in facts.tags:
            row["tags"][tag] += 1
        for tag in set(facts.tags):
            row["tagged"][tag] += 1

    for row in per_system.values():
        row["automatic"] = {name: _avg(values) for name, values in row["automatic"].items()}
        row["intrinsic"] = {name: (len(values), _avg(values)) for name, values in row["intrinsic"].items()}
    return summary_sections(
        project,
        settings,
        per_system,
        {scope: sorted_pairs(np.array(human), np.array(automatic)) for scope, (human, automatic) in pairs.items()},
        items=len(items),
        measured=measured_items,
        bertscore_models={info["bertscore_model"] for info in items.values() if info["bertscore_model"]},
    )


def sorted_pairs(human: np.ndarray, automatic: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(human, automatic) pairs ordered by the human rating, then by the automatic score, as
    sorted tuples would be: the correlations' float sums then add in one order, whichever
    order the pairs were read in. Two arrays, not a list of tuples: at 100,000 items a
    report holds millions of pairs."""
    order = np.lexsort((automatic, human))
    return human[order], automatic[order]


def summary_sections(
    project, settings: dict, per_system: dict, pairs: dict, *, items: int, measured: int, bertscore_models
) -> dict:
    """The report's sections from each system's figures (`per_system`, in the systems'
    order: "summaries", "rated", "ratings", "means" {criterion: {a summary's mean rating:
    how many summaries have it}}, "automatic" {score: mean}, "intrinsic" {measure:
    (summaries, mean)}, "tags" and "tagged" {tag: n}) and the (human, automatic) pairs of
    each (criterion, score) as two arrays, sorted (`sorted_pairs`): computed from every item (`summary_report_sections`) or from the kept
    counts (counts.summary_sections_from_counts) alike, so the two give the same numbers.
    The bootstrap intervals read the mean ratings as a multiset and the correlations read
    sorted pairs: their result then depends on the values, not on the order the items were
    read in."""
    systems = list(per_system)
    tag_order = list(settings["error_tags"])
    for row in per_system.values():
        for tag in sorted(row["tags"]):
            if tag not in tag_order:
                tag_order.append(tag)

    def intrinsic_means(values: dict[str, tuple[int, float | None]]) -> dict:
        def mean(name: str) -> float | None:
            return values.get(name, (0, None))[1]

        return {
            "n": max((n for n, _mean in values.values()), default=0),
            "novel_ngrams": {str(n): mean(f"novel_ngrams_{n}") for n in NOVEL_N},
            "compression_ratio": mean("compression_ratio"),
            "redundancy": {str(n): mean(f"redundancy_{n}") for n in REDUNDANCY_N},
            "rouge": {name: mean(label) for name, label in COMPUTED_ROUGE.items()},
            "bertscore": {name: mean(label) for name, label in COMPUTED_BERTSCORE.items()},
        }

    return {
        "criteria": list(CRITERIA),
        "scale": {"min": SCALE[0], "max": SCALE[1]},
        "error_tags": [
            {"id": tag, "name": tag_name(tag), "known": tag in ERROR_TAG_NAMES} for tag in settings["error_tags"]
        ],
        "systems": [
            {
                "system": system,
                "summaries": row["summaries"],
                "rated": row["rated"],
                "ratings": row["ratings"],
                **{criterion: counted_mean_bounded_interval(row["means"][criterion], *SCALE) for criterion in CRITERIA},
                "automatic": dict(sorted(row["automatic"].items())),
                "intrinsic": intrinsic_means(row["intrinsic"]),
            }
            for system, row in per_system.items()
        ],
        "error_table": {
            "systems": systems,
            "rated": {system: per_system[system]["rated"] for system in systems},
            "rows": [
                {
                    "tag": tag,
                    "name": tag_name(tag),
                    "summaries": {system: per_system[system]["tagged"].get(tag, 0) for system in systems},
                    "tags": {system: per_system[system]["tags"].get(tag, 0) for system in systems},
                }
                for tag in tag_order
            ],
        },
        "correlations": [
            {
                "criterion": criterion,
                "score": name,
                **correlations(human, automatic),
            }
            for (criterion, name), (human, automatic) in sorted(pairs.items())
        ],
        "intrinsic_status": {"items": items, "measured": measured, "missing": items - measured},
        "bertscore_models": sorted(bertscore_models),
        "profile": stored_figures(project, PROFILE_FIGURE),
    }


def _computed_scores(measures) -> dict[str, float]:
    """A summary's ROUGE and BERTScore (the measuring job's), under the names the report
    gives them beside the file's own scores; {} for an unmeasured summary, and no ROUGE or
    reference BERTScore for the reference itself."""
    if not isinstance(measures, dict):
        return {}
    rouge = measures.get("rouge") if isinstance(measures.get("rouge"), dict) else {}
    scores = {label: rouge[name] for name, label in COMPUTED_ROUGE.items() if _finite(rouge.get(name)) is not None}
    scores.update(
        {label: measures[name] for name, label in COMPUTED_BERTSCORE.items() if _finite(measures.get(name)) is not None}
    )
    return scores


def _avg(values) -> float | None:
    return math.fsum(values) / len(values) if values else None
