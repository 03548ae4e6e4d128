"""`summary_rating`'s intrinsic measures (HeSum §3.3, Table 2; `annotation.metrics.summary`,
whitespace tokens): novel n-grams for n = 1..4, compression ratio, redundancy for n = 1, 2, of
each summary against its article. They are computed on the worker and stored per item in
`Item.computed["intrinsic"] = {"tokens": "whitespace", "summaries": [{...}, ...]}`, one
entry per summary in the file's (stored) order; the report only reads them back.

When they are computed - the design chosen, and why:
- `POST /api/projects/{slug}/intrinsic/` (supervisors) queues the "summary_intrinsic" job
  (202 + job id); it measures every item that has no measures yet (`?all=1` on the page /
  `{"all": true}` in the body re-measures everything). The results page has a button for it.
- The agreement job of a summary_rating project (`POST .../agreement/`, the dashboard's
  "recompute") first measures the items that have none, so one "recompute" refreshes every
  figure of the report (annotation.kinds.summary.results).
- `SummaryRatingKind.after_import` enqueues the job on commit of an import (the import
  service calls it inside its storing transaction).
- The report never computes or writes anything (a GET stays a read): it shows how many
  items are measured and how many are missing.
Measuring is idempotent: the same texts give the same numbers, written with the item row
locked, merged into `computed` without touching its other keys.
"""

import json
from collections import defaultdict
from itertools import islice

from django.db import transaction
from django.utils.translation import gettext, gettext_noop

from annotation.access import access_project_for_supervisor
from annotation.errors import InvalidInput
from annotation.kinds.registry import kind_title
from annotation.metrics.hebrew_morphology import FIGURES as MORPHOLOGY_FIGURES
from annotation.metrics.hebrew_morphology import MorphologyProfile, words_of
from annotation.metrics.summary import BertScorer, RougeScorer, TextProfile, compression_ratio, novel_ngrams, redundancy
from annotation.models import Item, Job
from annotation.selectors.figures import stored_figures
from annotation.services.audit import audit_record
from annotation.services.jobs import job_create, job_set_progress
from annotation.stored_text import stored_message

JOB_KIND = "summary_intrinsic"
# The stored figure (ProjectFigures) holding the corpus profile of HeSum Table 1.
PROFILE_FIGURE = "summary_profile"
# hspell analyses Hebrew only; other projects' profiles have no morphology columns.
HSPELL_LANGUAGE = "he"
KIND = "summary_rating"
NOVEL_N = (1, 2, 3, 4)
REDUNDANCY_N = (1, 2)
BATCH = 500


def summary_measures(summary: str, article: str) -> dict:
    """HeSum §3.3's measures of one summary against its article, as fractions in [0, 1]
    (None where undefined: a summary shorter than n words, an empty article)."""
    return {
        "novel_ngrams": {str(n): novel_ngrams(summary, article, n) for n in NOVEL_N},
        "compression_ratio": compression_ratio(summary, article),
        "redundancy": {str(n): redundancy(summary, n) for n in REDUNDANCY_N},
        "words": len(summary.split()),
    }


def item_measures(
    payload: dict, reference_system: str = "", rouge: RougeScorer | None = None, bertscore: BertScorer | None = None
) -> dict:
    """The intrinsic measures of every summary of an item; with `rouge` and an item that has
    a summary of `reference_system`, also each other summary's ROUGE against that one
    (HeSum Table 3), stored as `rouge` beside its measures and the system as `reference`.
    With `bertscore`: each other summary's BERTScore F1 against the reference (`bertscore`,
    Table 3) and every summary's against its article (`article_bertscore`, Table 1's
    semantic similarity), the latter None where the article is past the model's limit, as
    the paper left those pairs out; the model's name is stored as `bertscore_model`."""
    article = payload["article"]
    summaries = payload["summaries"]
    measures = [summary_measures(summary["text"], article) for summary in summaries]
    reference = next((s["text"] for s in summaries if reference_system and s["system"] == reference_system), None)
    if rouge is not None and reference is not None:
        for summary, figures in zip(summaries, measures):
            if summary["system"] != reference_system:
                figures["rouge"] = rouge.score(summary["text"], reference)
    result = {
        "tokens": "whitespace",
        "article_words": len(article.split()),
        "reference": reference_system if reference is not None else None,
        "summaries": measures,
    }
    if bertscore is not None:
        _bertscore_measures(bertscore, article, summaries, measures, reference_system, reference)
        result["bertscore_model"] = bertscore.name
    return result


def _bertscore_measures(bertscore: BertScorer, article, summaries, measures, reference_system, reference) -> None:
    """Add `bertscore` and `article_bertscore` to each summary's `measures`, scoring the
    item's pairs in one call to the model."""
    texts = [summary["text"] for summary in summaries]
    against_reference = [
        i for i, summary in enumerate(summaries) if reference is not None and summary["system"] != reference_system
    ]
    article_fits = bertscore.fits(article)
    candidates = [texts[i] for i in against_reference] + (texts if article_fits else [])
    references = [reference or "" for _ in against_reference] + ([article] * len(texts) if article_fits else [])
    scores = bertscore.f1(candidates, references) if candidates else []
    for position, i in enumerate(against_reference):
        measures[i]["bertscore"] = scores[position]
    for i, figures in enumerate(measures):
        figures["article_bertscore"] = scores[len(against_reference) + i] if article_fits else None


def summary_measures_request(*, user, slug: str, remeasure: bool = False) -> Job:
    """Queue the intrinsic measures of a summary_rating project (supervisors only)."""
    project = access_project_for_supervisor(user, slug)
    if project.kind != KIND:
        raise InvalidInput(
            gettext("intrinsic measures are computed for %(kind)s projects, not %(other)s")
            % {"kind": kind_title(KIND), "other": kind_title(project.kind)},
            field="kind",
        )
    with transaction.atomic():
        job = job_create(kind=JOB_KIND, project=project, user=user, params={"all": bool(remeasure)})
        audit_record(actor=user, action="summary_measures", project=project, target=f"job:{job.pk}",
                     after={"all": bool(remeasure)})  # fmt: skip
    return job


def summary_measures_enqueue_on_commit(project, *, remeasure: bool = False) -> None:
    """Queue a measuring job for a project after the surrounding transaction commits
    (job_create enqueues on commit). For import paths and settings changes; no permission
    check."""
    job_create(kind=JOB_KIND, project=project, params={"all": remeasure})


def summary_measures_compute(project, *, remeasure: bool = False, job_id: int | None = None) -> dict:
    """Measure the project's items (only those without measures unless `remeasure`), in
    batches of BATCH items, each batch in one transaction with its rows locked.
    Returns {"measured": items written, "items": items in the project}."""
    items = Item.objects.filter(project=project)
    todo = items if remeasure else items.exclude(computed__has_key="intrinsic")
    ids = list(todo.order_by("pk").values_list("pk", flat=True))
    from annotation.kinds.registry import get_kind

    reference_system = get_kind(project.kind).project_settings(project)["reference_system"]
    # Imported only when there is a reference to score against (the package loads slowly).
    rouge = RougeScorer() if ids and reference_system else None
    from annotation.services.aggregation import aggregation_request_on_commit
    from annotation.services.embeddings import bert_scorer_or_none

    # None unless MASHOV_BERTSCORE_MODEL names a model (and bert-score is installed).
    bertscore = bert_scorer_or_none() if ids else None
    for start in range(0, len(ids), BATCH):
        batch = ids[start : start + BATCH]
        with transaction.atomic():
            rows = list(
                Item.objects.select_for_update().filter(pk__in=batch).order_by("pk").only("pk", "payload", "computed")
            )
            for item in rows:
                item.computed = {
                    **(item.computed or {}),
                    "intrinsic": item_measures(item.payload, reference_system, rouge, bertscore),
                }
            Item.objects.bulk_update(rows, ["computed"])
            # The report's means of the measures follow the measured items (services.figures).
            aggregation_request_on_commit(project.pk, batch)
        if job_id is not None:
            job_set_progress(job_id, (start + len(batch)) / len(ids))
    # The profile reads every article once: only when new items were measured (an import) or
    # none was stored yet; rating never changes it.
    if ids or stored_figures(project, PROFILE_FIGURE) is None:
        from annotation.services.figures import project_figure_store

        project_figure_store(project, PROFILE_FIGURE, summary_profile_compute(project))
    return {"measured": len(ids), "items": items.count()}


def json_column(value):
    """A nested JSON value read with values_list: SQLite hands it back as text on some Django
    versions, PostgreSQL as objects; text that is not JSON reads as None."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def summary_profile_compute(project) -> dict:
    """HeSum Table 1's linguistic profile of the project's texts, per split (items of no split
    under ""): the articles' count, vocabulary size and mean length in words and sentences,
    and the same for each system's summaries (the reference summary is one of the systems).
    Whitespace tokens, as the intrinsic measures. One pass over the items, read in chunks.

    Table 1's morphology columns (annotation/metrics/hebrew_morphology.py: lemma vocabulary,
    anaphors, construct state, the share of words the analyser knows) come from hspell, for
    a Hebrew project where it is installed (annotation/hspell.py), one hspell run per chunk;
    `analyser` names it ("hspell 1.4"), and is None, with those figures None, elsewhere.

    {"tokens": "whitespace", "analyser", "splits": [{"split", "articles": {...}, "systems":
    {system: {...}}}, ...]} with splits in name order."""
    from annotation.hspell import hspell_or_none

    analyser = hspell_or_none() if project.language == HSPELL_LANGUAGE else None
    articles: dict[str, TextProfile] = defaultdict(TextProfile)
    summaries: dict[str, dict[str, TextProfile]] = defaultdict(lambda: defaultdict(TextProfile))
    article_morphology: dict[str, MorphologyProfile] = defaultdict(MorphologyProfile)
    summary_morphology: dict[str, dict[str, MorphologyProfile]] = defaultdict(lambda: defaultdict(MorphologyProfile))
    rows = (
        Item.objects.filter(project=project)
        .order_by("pk")
        .values_list("split", "payload__article", "payload__summaries")
        .iterator(chunk_size=BATCH)
    )
    while chunk := list(islice(rows, BATCH)):
        items = [
            (split, article or "", [(e.get("system") or "", e.get("text") or "") for e in json_column(stored) or []])
            for split, article, stored in chunk
        ]
        analyses = None
        if analyser is not None:
            analyses = analyser.analyse(
                words_of(text for _split, article, pairs in items for text in [article, *(t for _s, t in pairs)])
            )
        for split, article, pairs in items:
            articles[split].add(article)
            if analyses is not None:
                article_morphology[split].add(article, analyses)
            for system, text in pairs:
                summaries[split][system].add(text)
                if analyses is not None:
                    summary_morphology[split][system].add(text, analyses)

    def figures(profile: TextProfile, morphology: MorphologyProfile | None) -> dict:
        return {**profile.figures(), **(morphology.figures() if morphology else dict.fromkeys(MORPHOLOGY_FIGURES))}

    return {
        "tokens": "whitespace",
        "analyser": analyser.name if analyser else None,
        "splits": [
            {
                "split": split,
                "articles": figures(articles[split], article_morphology[split] if analyser else None),
                "systems": {
                    system: figures(profile, summary_morphology[split][system] if analyser else None)
                    for system, profile in summaries[split].items()
                },
            }
            for split in sorted(articles)
        ],
    }


def summary_measures_job(job: Job) -> dict:
    """The "summary_intrinsic" job's handler (annotation.tasks)."""
    project = job.project
    if project is None or project.kind != KIND:
        message = stored_message(
            gettext_noop("intrinsic measures are computed for %(kind)s projects"), kind=kind_title(KIND)
        )
        return {"errors": [{"field": "kind", **message}]}
    return summary_measures_compute(project, remeasure=bool((job.params or {}).get("all")), job_id=job.pk)
