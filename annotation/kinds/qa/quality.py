"""HeQ's quality signals (§3.3-3.4, appendix C): the figures of a `qa_authoring` project's
report (`GET /api/projects/{slug}/report/`), which the quality dashboard lays out.

They are computed from counts, each item's share (`quality_counts`) summed: over every
item per request (`quality_report_for_project`), or kept by the changed items on the
worker for a large project (services.figures, `Kind.report_counts`), the same numbers
either way. An item's share is its paragraph's imported questions, its authored questions
with their grades, and the validators' answers to both (a validation of an authored
question counts with the question's item). What the counts hold, and why they are enough:
- sums over questions (authored, imported, answerable, graded, rejected; the histograms
  of question overlap and answer positions; the WH-words; the review backlog) as counts;
- the means of the overlaps and of the validators' EM, F1 and TLNLS: how many values,
  and their sum kept exactly as integers (metrics.figures.float_scaled), so that the mean
  is the float math.fsum gives, whatever the order;
- the grades per annotator and day, and the scores per validator, keyed by user id
  (names are read when the figures are computed: a renamed user needs no recount);
- the oldest annotation waiting for review is no sum: the counts hold how many wait per
  day, and the oldest day's annotations are read again (two queries, one day's work);
- the validation queue's progress follows the article split (`project_article_splits`),
  which places every article by a greedy pass over all of them: a question added
  anywhere may move any article. The counts hold its inputs, the questions per article
  (per split for paragraphs whose file fixed it), and per article how many questions to
  validate have each number of answers; the pass then runs over the articles, not the
  items. Those counters have a key per article, so this part of a run costs the project's
  articles, not its changed items;
- the final audit is read from its sample (`audit_figures`, one query, at most
  MAX_PER_SOURCE rows a source)."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone
from types import SimpleNamespace

from annotation.metrics import overlap as overlap_metrics
from annotation.metrics.figures import SEPARATOR, counts_apply, float_scaled, float_sum
from annotation.metrics.spans import exact_match, f1, tlnls
from annotation.metrics.text import fold_for_matching

from .audit import audit_figures
from .questions import (
    GRADE_SCORE,
    GRADES,
    assign_article_splits,
    imported_golds,
    imported_questions_of,
    questions_of,
)

ORIGINS = ("authored", "imported")
METRICS = ("em", "f1", "tlnls")
BINS = 10
# Annotations read at a time while the oldest one waiting for review is looked for.
OLDEST_CHUNK = 200


def _review_coverage(authored: int, graded: int, rejected: int) -> dict:
    """HeQ §3.4's review figures: the share of authored questions a reviewer graded and the
    share of graded questions rejected (None where nothing is counted)."""
    return {
        "reviewed_share": graded / authored if authored else None,
        "rejected_share": rejected / graded if graded else None,
    }


class _Share:
    """One item's share of the counts, {counter: {key: n}}, built up."""

    def __init__(self) -> None:
        self.counts: dict[str, dict[str, int]] = {}

    def add(self, counter: str, key: str, n: int = 1) -> None:
        if n:
            keys = self.counts.setdefault(counter, {})
            keys[key] = keys.get(key, 0) + n

    def add_float(self, counter: str, key: str, value: float) -> None:
        coarse, scaled = float_scaled(value)
        self.add(f"{counter}_n", key)
        self.add(f"{counter}_c" if coarse else f"{counter}_f", key, scaled)


def _join(*parts) -> str:
    return SEPARATOR.join(str(part) for part in parts)


def quality_counts(project, settings: dict, item_ids: list[int]) -> dict[int, dict[str, dict[str, int]]]:
    """{item id: its share of the counts} (module docstring) of the items `item_ids`, in
    five queries (one array parameter each). `settings` are the project's, with the kind's
    defaults filled in."""
    from annotation.models import Annotation, Item, QuestionValidation, Review
    from annotation.sql import column_in

    fold_letters = settings["fold_letter_variants"]
    shares: dict[int, _Share] = {}
    items = {}
    for item_id, payload, split, group, external_id, status in Item.objects.filter(
        column_in(Item, "id", item_ids), project=project
    ).values_list("id", "payload", "split", "group", "external_id", "status"):
        items[item_id] = (payload, SimpleNamespace(split=split, group=group, external_id=external_id), status)
        shares[item_id] = _Share()
    annotations = list(
        Annotation.objects.filter(column_in(Annotation, "item_id", list(items)))
        .order_by("id")
        .values("id", "item_id", "annotator_id", "created_at", "value", "review_required")
    )
    annotation_ids = [row["id"] for row in annotations]
    grades: dict[tuple[int, int], str] = {}
    for annotation_id, question, grade in Review.objects.filter(
        column_in(Review, "annotation_id", annotation_ids)
    ).values_list("annotation_id", "question", "grade"):
        grades[(annotation_id, question)] = grade
    # The validators' answers to the items' questions: those of the annotations read (an
    # authored question's item is its annotation's), and of the file's questions.
    answers: dict[tuple, list[tuple[int, str | None]]] = defaultdict(list)
    fields = ("annotation_id", "item_id", "question", "question_key", "validator_id", "answer_text")
    for rows in (
        QuestionValidation.objects.filter(column_in(QuestionValidation, "annotation_id", annotation_ids)),
        QuestionValidation.objects.filter(column_in(QuestionValidation, "item_id", list(items)), annotation=None),
    ):
        for annotation_id, item_id, question, question_key, validator_id, answer_text in rows.values_list(*fields):
            key = (
                ("authored", annotation_id, question)
                if annotation_id is not None
                else ("imported", item_id, question_key)
            )
            answers[key].append((validator_id, answer_text))
    by_item: dict[int, list[dict]] = defaultdict(list)
    for row in annotations:
        by_item[row["item_id"]].append(row)

    def scored(share: _Share, origin: str, golds: list, given: list) -> None:
        for validator_id, prediction in given:
            prediction = fold_for_matching(prediction) if prediction is not None else None
            scores = [metric(prediction, golds, fold_letters=fold_letters) for metric in (exact_match, f1, tlnls)]
            for scope in (_join("o", origin), _join("v", validator_id)):
                share.add("span_n", scope)
                for metric, score in zip(METRICS, scores, strict=True):
                    coarse, scaled = float_scaled(score)
                    share.add("span_c" if coarse else "span_f", _join(scope, metric), scaled)

    def overlap(share: _Share, origin: str, question, context: str) -> None:
        value = overlap_metrics.question_overlap(question, context, fold_letters=fold_letters)
        share.add("overlap_bins", _join(origin, overlap_metrics.overlap_histogram([value], BINS).index(1)))
        share.add_float("overlap", origin, value)

    def position(share: _Share, origin: str, start: int, context: str) -> None:
        if context and 0 <= start < len(context):
            share.add("positions", _join(origin, overlap_metrics.position_bucket(start, len(context), BINS)))

    def wh(share: _Share, origin: str, question) -> None:
        word = overlap_metrics.wh_word(question)
        if word is None:
            share.add("wh_without", origin)
        else:
            share.add("wh", _join(origin, word))

    for item_id, (payload, place, status) in items.items():
        share = shares[item_id]
        context = payload.get("context", "") if isinstance(payload, dict) else ""
        counted = status != Item.Status.REMOVED
        # Where the item's questions count in the article split: its file's split, or its article.
        if place.split:
            split_counter, split_key = "fixed", place.split
        else:
            split_counter, split_key = "article", place.group or place.external_id
        to_validate: list[tuple[str, tuple]] = []
        for question in (payload.get("questions") or []) if isinstance(payload, dict) else []:
            share.add("questions", "imported")
            if not isinstance(question, dict):
                continue
            text = question.get("question", "")
            overlap(share, "imported", text, context)
            wh(share, "imported", text)
            if not question.get("is_impossible"):
                share.add("questions", "answerable")
            given = question.get("answers")
            if given and isinstance(given[0], dict):
                position(share, "imported", given[0]["answer_start"], context)
        imported = payload.get("questions") if isinstance(payload, dict) else None
        if counted and isinstance(imported, list):
            share.add(f"{split_counter}_q", split_key, sum(isinstance(q, dict) for q in imported))
        # A question id the file repeats is counted once, as its last question (the key names one).
        for question in {question["id"]: question for _index, question in imported_questions_of(payload)}.values():
            key = ("imported", item_id, question["id"])
            golds = [fold_for_matching(g) if g is not None else None for g in imported_golds(question)]
            scored(share, "imported", golds, answers.get(key, []))
            if question.get("question quality") != "rejected":
                to_validate.append(("imported", key))
        for row in by_item[item_id]:
            questions = questions_of(row["value"])
            day = row["created_at"].date().isoformat()
            if counted:
                share.add(f"{split_counter}_q", split_key, len(questions))
            waiting = 0
            for index, question in enumerate(questions):
                share.add("questions", "authored")
                if question.get("answerable"):
                    share.add("questions", "answerable")
                overlap(share, "authored", question["question"], context)
                wh(share, "authored", question["question"])
                if question.get("answer"):
                    position(share, "authored", question["answer"]["start"], context)
                gold = question.get("answer")
                key = ("authored", row["id"], index)
                scored(share, "authored", [fold_for_matching(gold["text"]) if gold else None], answers.get(key, []))
                grade = grades.get((row["id"], index))
                if grade is None:
                    waiting += 1
                else:
                    share.add("grades", _join(row["annotator_id"], day, grade))
                if grade != "rejected":
                    to_validate.append(("authored", key))
            if row["review_required"] and waiting:
                share.add("backlog", "annotations")
                share.add("backlog", "questions", waiting)
                share.add("backlog_days", day)
        if counted:
            for origin, key in to_validate:
                share.add(f"{split_counter}_v", _join(split_key, origin, len(answers.get(key, []))))
    # Every grade counts, a grade of a question the annotation no longer holds too.
    item_of = {row["id"]: row["item_id"] for row in annotations}
    for (annotation_id, _question), grade in grades.items():
        shares[item_of[annotation_id]].add("questions", "graded")
        if grade == "rejected":
            shares[item_of[annotation_id]].add("questions", "rejected")
    return {item_id: share.counts for item_id, share in shares.items()}


def _usernames(ids) -> dict[str, str]:
    """{user id (a key part): username}, "#<id>" for a user deleted since the counts were
    kept (their work went with them, and the next full run takes it out). One query."""
    from django.contrib.auth import get_user_model

    users = get_user_model().objects.filter(pk__in=[int(pk) for pk in ids]).values_list("pk", "username")
    return {str(pk): f"#{pk}" for pk in ids} | {str(pk): username for pk, username in users}


def _oldest_waiting(project, day: str | None):
    """When the oldest annotation still waiting for review was made, `day` being the first
    day with one (the backlog's counts): that day's annotations to review are listed by
    time (one narrow query) and read in that order, OLDEST_CHUNK at a time (two queries a
    chunk), until one waits; most often the first chunk holds it."""
    from annotation.models import Annotation, Review
    from annotation.sql import column_in

    if day is None:
        return None
    start = datetime.fromisoformat(day).replace(tzinfo=dt_timezone.utc)
    candidates = list(
        Annotation.objects.filter(
            item__project=project, review_required=True, created_at__gte=start, created_at__lt=start + timedelta(days=1)
        )
        .order_by("created_at", "pk")
        .values_list("pk", "created_at")
    )
    for first in range(0, len(candidates), OLDEST_CHUNK):
        chunk = candidates[first : first + OLDEST_CHUNK]
        ids = [pk for pk, _created in chunk]
        values = dict(Annotation.objects.filter(column_in(Annotation, "id", ids)).values_list("pk", "value"))
        graded = set(
            Review.objects.filter(column_in(Review, "annotation_id", ids)).values_list("annotation_id", "question")
        )
        for pk, created in chunk:
            if any((pk, index) not in graded for index in range(len(questions_of(values[pk])))):
                return created
    return None


def quality_sections_from_counts(project, settings: dict, counts: dict[str, dict[str, int]]) -> dict:
    """The report (`quality_report_for_project`) from the items' `quality_counts` summed:
    the users' names, the oldest waiting day's annotations and the audit sample read."""

    def counter(name: str) -> dict[str, int]:
        return counts.get(name, {})

    def mean(name: str, key: str, n: int):
        return float_sum(counter(f"{name}_c").get(key, 0), counter(f"{name}_f").get(key, 0)) / n if n else None

    grades = counter("grades")
    validators = {key.split(SEPARATOR)[1] for key in counter("span_n") if key.startswith("v" + SEPARATOR)}
    names = _usernames({key.split(SEPARATOR)[0] for key in grades} | validators)
    per_annotator: dict[str, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(dict))
    for key, n in grades.items():
        annotator, day, grade = key.split(SEPARATOR)
        per_annotator[names[annotator]][day][grade] = n
    grades_per_annotator = []
    for name in sorted(per_annotator):
        series = []
        for day, by_grade in sorted(per_annotator[name].items()):
            reviewed = sum(by_grade.values())
            series.append(
                {
                    "period": day,
                    **{g: by_grade.get(g, 0) for g in GRADES},
                    "reviewed": reviewed,
                    "mean_grade": sum(GRADE_SCORE[g] * c for g, c in by_grade.items()) / reviewed,
                }
            )
        totals = {g: sum(by_grade.get(g, 0) for by_grade in per_annotator[name].values()) for g in GRADES}
        grades_per_annotator.append({"annotator": name, "totals": totals, "series": series})

    def histogram(name: str, origin: str) -> list[int]:
        return [counter(name).get(_join(origin, bin_), 0) for bin_ in range(BINS)]

    def diversity(origin: str) -> dict:
        words = {
            key.split(SEPARATOR, 1)[1]: n
            for key, n in sorted(counter("wh").items())
            if key.startswith(origin + SEPARATOR)
        }
        d = overlap_metrics.wh_diversity_from_counts(words, counter("wh_without").get(origin, 0))
        return {"counts": d.counts, "distinct": d.distinct, "entropy": d.entropy, "without_wh": d.without_wh}

    def means(scopes: list[str]) -> dict:
        n = sum(counter("span_n").get(scope, 0) for scope in scopes)
        if not n:
            return {"pairs": 0, "em": None, "f1": None, "tlnls": None}
        figures: dict = {"pairs": n}
        for metric in METRICS:
            coarse = sum(counter("span_c").get(_join(scope, metric), 0) for scope in scopes)
            fine = sum(counter("span_f").get(_join(scope, metric), 0) for scope in scopes)
            figures[metric] = float_sum(coarse, fine) / n
        return figures

    article_splits = assign_article_splits(
        counter("article_q"),
        seed=settings["split_seed"],
        dev_share=settings["dev_share"],
        test_share=settings["test_share"],
        fixed=counter("fixed_q"),
    )
    validated = set(settings["validate_splits"])
    needed = settings["validators_per_question"]
    progress = {"questions": 0, "authored": 0, "imported": 0, "complete": 0, "answers": 0}
    for name in ("article_v", "fixed_v"):
        for key, n in counter(name).items():
            place, origin, given = key.rsplit(SEPARATOR, 2)
            split = place if name == "fixed_v" else article_splits.get(place, "train")
            if split in validated:
                progress["questions"] += n
                progress[origin] += n
                progress["complete"] += n if int(given) >= needed else 0
                progress["answers"] += n * int(given)
    questions = counter("questions")
    backlog = counter("backlog")
    return {
        "questions": {
            name: questions.get(name, 0) for name in ("authored", "imported", "answerable", "graded", "rejected")
        },
        "review_coverage": _review_coverage(
            questions.get("authored", 0), questions.get("graded", 0), questions.get("rejected", 0)
        ),
        "final_audit": audit_figures(project),
        "grades_per_annotator": grades_per_annotator,
        "question_overlap": {
            "bins": BINS,
            "authored": histogram("overlap_bins", "authored"),
            "imported": histogram("overlap_bins", "imported"),
            "mean_authored": mean("overlap", "authored", counter("overlap_n").get("authored", 0)),
            "mean_imported": mean("overlap", "imported", counter("overlap_n").get("imported", 0)),
            "warning_above": settings["overlap_warning"],
        },
        "answer_positions": {
            "bins": BINS,
            "authored": histogram("positions", "authored"),
            "imported": histogram("positions", "imported"),
        },
        "wh_words": {"authored": diversity("authored"), "imported": diversity("imported")},
        "review_backlog": {
            "annotations": backlog.get("annotations", 0),
            "questions": backlog.get("questions", 0),
            "oldest": _oldest_waiting(project, min(counter("backlog_days"), default=None)),
        },
        "span_agreement": {
            **means([_join("o", origin) for origin in ORIGINS]),
            "by_origin": {origin: means([_join("o", origin)]) for origin in ORIGINS},
            "per_validator": [
                {"validator": names[pk], **means([_join("v", pk)])}
                for pk in sorted(validators, key=lambda pk: names[pk])
            ],
        },
        "validation": {
            "splits": list(settings["validate_splits"]),
            "validators_per_question": needed,
            **progress,
        },
    }


def quality_report_for_project(project, settings: dict) -> dict:
    """HeQ's quality signals (§3.3-3.4, appendix C), from every item's share of the counts
    (`quality_counts`, read a chunk of items at a time; module docstring).

    `span_agreement` compares each validator's answer with the question's existing
    answers — the author's span for an authored question, the file's `answers` for an
    imported one (`[None]` when the file marks it unanswerable) — by EM, F1 and TLNLS
    (max over golds, matching folding; Arabic yeh/kaf as Persian when the project's
    `fold_letter_variants` says so, as for the overlap), overall, per validator and
    `by_origin`.
    `validation` is the progress of the validation queue: questions of the validated
    splits (not rejected), those with `validators_per_question` answers, and answers.
    `settings` are the project's, with the kind's defaults filled in."""
    from annotation.selectors.figures import project_item_ids

    counts: dict[str, dict[str, int]] = {}
    for ids in project_item_ids(project):
        for share in quality_counts(project, settings, ids).values():
            counts_apply(counts, share, 1)
    return quality_sections_from_counts(project, settings, counts)
