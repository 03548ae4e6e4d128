"""HeQ's quality signals (§3.3-3.4, appendix C): the figures of a `qa_authoring` project's
report (`GET /api/projects/{slug}/report/`), which the quality dashboard lays out."""

from __future__ import annotations

from collections import Counter, defaultdict
from types import SimpleNamespace

from annotation.metrics import overlap as overlap_metrics
from annotation.metrics.spans import exact_match, f1, tlnls
from annotation.metrics.text import fold_for_matching

from .audit import audit_figures
from .questions import (
    GRADE_SCORE,
    GRADES,
    imported_golds,
    imported_questions_of,
    item_split,
    project_article_splits,
    questions_of,
)


def _review_coverage(authored: int, grades: dict) -> dict:
    """HeQ §3.4's review figures: the share of authored questions a reviewer graded and the
    share of graded questions rejected (None where nothing is counted)."""
    rejected = sum(1 for grade in grades.values() if grade == "rejected")
    return {
        "reviewed_share": len(grades) / authored if authored else None,
        "rejected_share": rejected / len(grades) if grades else None,
    }


def quality_report_for_project(project, settings: dict) -> dict:
    """HeQ's quality signals (§3.3-3.4, appendix C), in seven queries (two for the splits).

    `span_agreement` compares each validator's answer with the question's existing
    answers — the author's span for an authored question, the file's `answers` for an
    imported one (`[None]` when the file marks it unanswerable) — by EM, F1 and TLNLS
    (max over golds, matching folding; Arabic yeh/kaf as Persian when the project's
    `fold_letter_variants` says so, as for the overlap), overall, per validator and
    `by_origin`.
    `validation` is the progress of the validation queue: questions of the validated
    splits (not rejected), those with `validators_per_question` answers, and answers.
    `settings` are the project's, with the kind's defaults filled in."""
    from django.db.models import Q

    from annotation.models import Annotation, Item, QuestionValidation, Review

    contexts = {}
    imported_questions = []
    imported_by_key: dict[tuple[int, str], dict] = {}
    validated_items: set[int] = set()
    article_splits = project_article_splits(project, settings)
    for item_id, payload, split, group, external_id, status in Item.objects.filter(project=project).values_list(
        "id", "payload", "split", "group", "external_id", "status"
    ):
        context = payload.get("context", "") if isinstance(payload, dict) else ""
        contexts[item_id] = context
        for question in (payload.get("questions") or []) if isinstance(payload, dict) else []:
            imported_questions.append((question, context))
        for _index, question in imported_questions_of(payload):
            imported_by_key[(item_id, question["id"])] = question
        place = SimpleNamespace(split=split, group=group, external_id=external_id)
        if status != Item.Status.REMOVED and item_split(place, article_splits) in settings["validate_splits"]:
            validated_items.add(item_id)
    annotations = list(
        Annotation.objects.filter(item__project=project)
        .order_by("id")
        .values("id", "item_id", "annotator__username", "created_at", "value", "review_required")
    )
    grades: dict[tuple[int, int], str] = {}
    for annotation_id, question, grade in Review.objects.filter(annotation__item__project=project).values_list(
        "annotation_id", "question", "grade"
    ):
        grades[(annotation_id, question)] = grade
    validations = list(
        QuestionValidation.objects.filter(Q(annotation__item__project=project) | Q(item__project=project))
        .order_by("id")
        .values("annotation_id", "item_id", "question", "question_key", "validator__username", "answer_text")
    )
    authored = []  # (annotation row, index, question dict, context)
    for row in annotations:
        for index, question in enumerate(questions_of(row["value"])):
            authored.append((row, index, question, contexts.get(row["item_id"], "")))

    per_annotator: dict[str, dict] = defaultdict(lambda: {"totals": Counter(), "days": defaultdict(Counter)})
    for row, index, _question, _context in authored:
        grade = grades.get((row["id"], index))
        if grade is None:
            continue
        entry = per_annotator[row["annotator__username"]]
        entry["totals"][grade] += 1
        entry["days"][row["created_at"].date().isoformat()][grade] += 1
    grades_per_annotator = []
    for name in sorted(per_annotator):
        entry = per_annotator[name]
        series = []
        for day in sorted(entry["days"]):
            counts = entry["days"][day]
            n = sum(counts.values())
            series.append(
                {
                    "period": day,
                    **{g: counts.get(g, 0) for g in GRADES},
                    "reviewed": n,
                    "mean_grade": sum(GRADE_SCORE[g] * c for g, c in counts.items()) / n,
                }
            )
        grades_per_annotator.append(
            {"annotator": name, "totals": {g: entry["totals"].get(g, 0) for g in GRADES}, "series": series}
        )

    fold_letters = settings["fold_letter_variants"]

    def overlaps(pairs):
        return [overlap_metrics.question_overlap(q, c, fold_letters=fold_letters) for q, c in pairs]

    authored_pairs = [(q["question"], c) for _r, _i, q, c in authored]
    imported_pairs = [(q.get("question", ""), c) for q, c in imported_questions if isinstance(q, dict)]
    authored_overlap, imported_overlap = overlaps(authored_pairs), overlaps(imported_pairs)

    def positions(spans):
        return overlap_metrics.position_histogram([(s, len(c)) for s, c in spans if c and 0 <= s < len(c)])

    authored_positions = positions([(q["answer"]["start"], c) for _r, _i, q, c in authored if q.get("answer")])
    imported_positions = positions(
        [
            (q["answers"][0]["answer_start"], c)
            for q, c in imported_questions
            if isinstance(q, dict) and q.get("answers") and isinstance(q["answers"][0], dict)
        ]
    )

    def diversity(questions):
        d = overlap_metrics.wh_diversity(questions)
        return {"counts": d.counts, "distinct": d.distinct, "entropy": d.entropy, "without_wh": d.without_wh}

    backlog_annotations, backlog_questions, oldest = 0, 0, None
    for row in annotations:
        if not row["review_required"]:
            continue
        waiting = sum(1 for index in range(len(questions_of(row["value"]))) if (row["id"], index) not in grades)
        if waiting:
            backlog_annotations += 1
            backlog_questions += waiting
            oldest = row["created_at"] if oldest is None else min(oldest, row["created_at"])

    author_answer = {(row["id"], index): q.get("answer") for row, index, q, _c in authored}
    scores: dict[str, list] = defaultdict(list)
    origin_scores: dict[str, list] = {"authored": [], "imported": []}
    answers_per_question: Counter = Counter()
    for validation in validations:
        if validation["annotation_id"] is not None:
            key = (validation["annotation_id"], validation["question"])
            if key not in author_answer:
                continue
            gold = author_answer[key]
            golds = [fold_for_matching(gold["text"]) if gold else None]
            origin = "authored"
        else:
            key = (validation["item_id"], validation["question_key"])
            if key not in imported_by_key:
                continue
            golds = [fold_for_matching(g) if g is not None else None for g in imported_golds(imported_by_key[key])]
            origin = "imported"
        answers_per_question[(origin, *key)] += 1
        prediction = validation["answer_text"]
        prediction = fold_for_matching(prediction) if prediction is not None else None
        score = tuple(metric(prediction, golds, fold_letters=fold_letters) for metric in (exact_match, f1, tlnls))
        scores[validation["validator__username"]].append(score)
        origin_scores[origin].append(score)

    def means(rows):
        if not rows:
            return {"pairs": 0, "em": None, "f1": None, "tlnls": None}
        return {
            "pairs": len(rows),
            "em": sum(r[0] for r in rows) / len(rows),
            "f1": sum(r[1] for r in rows) / len(rows),
            "tlnls": sum(r[2] for r in rows) / len(rows),
        }

    to_validate = [
        ("authored", row["id"], index)
        for row, index, _q, _c in authored
        if row["item_id"] in validated_items and grades.get((row["id"], index)) != "rejected"
    ]
    to_validate += [
        ("imported", item_id, qid)
        for (item_id, qid), q in imported_by_key.items()
        if item_id in validated_items and q.get("question quality") != "rejected"
    ]
    needed = settings["validators_per_question"]
    everything = [row for rows in scores.values() for row in rows]
    return {
        "questions": {
            "authored": len(authored),
            "imported": len(imported_questions),
            "answerable": sum(1 for _r, _i, q, _c in authored if q.get("answerable"))
            + sum(1 for q, _c in imported_questions if isinstance(q, dict) and not q.get("is_impossible")),
            "graded": len(grades),
            "rejected": sum(1 for g in grades.values() if g == "rejected"),
        },
        "review_coverage": _review_coverage(len(authored), grades),
        "final_audit": audit_figures(project),
        "grades_per_annotator": grades_per_annotator,
        "question_overlap": {
            "bins": 10,
            "authored": overlap_metrics.overlap_histogram(authored_overlap),
            "imported": overlap_metrics.overlap_histogram(imported_overlap),
            "mean_authored": sum(authored_overlap) / len(authored_overlap) if authored_overlap else None,
            "mean_imported": sum(imported_overlap) / len(imported_overlap) if imported_overlap else None,
            "warning_above": settings["overlap_warning"],
        },
        "answer_positions": {"bins": 10, "authored": authored_positions, "imported": imported_positions},
        "wh_words": {
            "authored": diversity(q["question"] for _r, _i, q, _c in authored),
            "imported": diversity(q for q, _c in imported_pairs),
        },
        "review_backlog": {"annotations": backlog_annotations, "questions": backlog_questions, "oldest": oldest},
        "span_agreement": {
            **means(everything),
            "by_origin": {origin: means(rows) for origin, rows in origin_scores.items()},
            "per_validator": [{"validator": name, **means(rows)} for name, rows in sorted(scores.items())],
        },
        "validation": {
            "splits": list(settings["validate_splits"]),
            "validators_per_question": needed,
            "questions": len(to_validate),
            "authored": sum(1 for key in to_validate if key[0] == "authored"),
            "imported": sum(1 for key in to_validate if key[0] == "imported"),
            "complete": sum(1 for key in to_validate if answers_per_question[key] >= needed),
            "answers": sum(answers_per_question[key] for key in to_validate),
        },
    }
