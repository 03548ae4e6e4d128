"""HeQ's final audit (§3.4): a seeded random sample of questions per source (100 from
Wikipedia and 100 from Geektime in the paper), each checked by a supervisor for whether the
question is correct and whether its answer span is correct; the report gives both shares with
their intervals, per source and overall.

The pool is every question a dataset release would carry: authored questions of paragraphs
that are not removed, not graded rejected by a reviewer, and the imported file's questions not
marked rejected. A question's place in the draw is a hash of (seed, question), so the sample of
one source does not depend on what the other sources hold, and the same seed draws the same
sample again. The sample is fixed once a question is marked: a new draw would change what the
marks describe."""

from __future__ import annotations

from collections import defaultdict

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from annotation import access
from annotation.errors import Conflict, InvalidInput, NotFound
from annotation.metrics.intervals import proportion_interval
from annotation.models import Annotation, Item, QuestionAudit, Review
from annotation.services.aggregation import aggregation_request_on_commit
from annotation.services.audit import audit_record

from .questions import article_order, imported_questions_of, questions_of
from .reviews import QUESTION_KINDS

MAX_PER_SOURCE = 10_000
MAX_SEED = 2**62


def _audit_project(user, slug: str):
    project = access.access_project_for_supervisor(user, slug)
    if project.kind not in QUESTION_KINDS:
        raise InvalidInput(_("projects of this kind have no questions to audit"), field="slug")
    return project


def _whole_number(value, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(
            _("must be a whole number from %(low)s to %(high)s") % {"low": low, "high": high}, field=field
        )
    return value


def _source_of(payload, default_source: str) -> str:
    source = payload.get("source") if isinstance(payload, dict) else None
    return (source if isinstance(source, str) and source.strip() else default_source).strip().lower()[:100]


def audit_pool(project, default_source: str) -> dict[str, list[tuple[str, dict]]]:
    """{source: [(draw key, QuestionAudit fields), ...]} of every question the audit may
    draw (module docstring). Three queries."""
    items = {
        pk: payload
        for pk, payload in Item.objects.filter(project=project)
        .exclude(status=Item.Status.REMOVED)
        .values_list("pk", "payload")
    }
    rejected = set(
        Review.objects.filter(annotation__item__project=project, grade=Review.Grade.REJECTED).values_list(
            "annotation_id", "question"
        )
    )
    pool: dict[str, list[tuple[str, dict]]] = defaultdict(list)
    for annotation_id, item_id, value in (
        Annotation.objects.filter(item_id__in=list(items)).order_by("pk").values_list("pk", "item_id", "value")
    ):
        source = _source_of(items[item_id], default_source)
        for index, _question in enumerate(questions_of(value)):
            if (annotation_id, index) not in rejected:
                fields = {"item_id": item_id, "annotation_id": annotation_id, "question": index, "source": source}
                pool[source].append((f"a:{annotation_id}:{index}", fields))
    for item_id, payload in items.items():
        source = _source_of(payload, default_source)
        for index, question in imported_questions_of(payload):
            if question.get("question quality") != "rejected":
                fields = {"item_id": item_id, "question": index, "question_key": question["id"], "source": source}
                pool[source].append((f"i:{item_id}:{question['id']}", fields))
    return pool


def _audit_key(row: QuestionAudit) -> tuple:
    return (row.item_id, row.annotation_id, row.question, row.question_key)


def audit_sample_draw(*, user, slug: str, per_source, seed) -> dict:
    """Draw the project's audit sample: `per_source` questions of each source (all of a
    source that has fewer), chosen by `seed`. Replaces an earlier draw until a question of it
    is marked; refused after that, unless the draw gives the same sample again (which keeps
    its marks). Recorded in the audit log. Returns the sample's counts."""
    project = _audit_project(user, slug)
    per_source = _whole_number(per_source, "per_source", 1, MAX_PER_SOURCE)
    seed = _whole_number(seed, "seed", 0, MAX_SEED)
    from annotation.kinds.registry import get_kind

    settings = get_kind(project.kind).project_settings(project)
    with transaction.atomic():
        # The project row serialises two draws of one project.
        type(project).objects.select_for_update().get(pk=project.pk)
        rows = []
        for source, questions in sorted(audit_pool(project, settings["pool_default_source"]).items()):
            chosen = sorted(questions, key=lambda entry: article_order(entry[0], seed))[:per_source]
            rows += [QuestionAudit(project=project, seed=seed, **fields) for _key, fields in chosen]
        drawn = QuestionAudit.objects.filter(project=project)
        if {_audit_key(row) for row in rows} != set(map(_audit_key, drawn)) or drawn.exclude(seed=seed).exists():
            if drawn.filter(question_correct__isnull=False).exists():
                raise Conflict(
                    _(
                        "the audit sample is fixed once a question of it is marked; a new draw would change what "
                        "the marks describe"
                    ),
                    field="seed",
                )
            drawn.delete()
            QuestionAudit.objects.bulk_create(rows)
        # else: the same sample drawn again, its marks kept.
        counts = defaultdict(int)
        for row in rows:
            counts[row.source] += 1
        # The report reads the audit from its sample; no item's share of its counts changed.
        aggregation_request_on_commit(project.pk, [])
        audit_record(actor=user, action="question_audit_draw", project=project, target=f"project:{project.slug}",
                     after={"per_source": per_source, "seed": seed, "drawn": dict(counts)})  # fmt: skip
    return {"per_source": per_source, "seed": seed, "drawn": dict(sorted(counts.items()))}


def audit_mark(*, user, slug: str, audit_id: int, question_correct, span_correct) -> QuestionAudit:
    """A supervisor's verdict on one sampled question: `question_correct` true or false,
    `span_correct` true, false or null (no span to judge). Marking again replaces the verdict;
    both the old and the new are in the audit log."""
    project = _audit_project(user, slug)
    if not isinstance(question_correct, bool):
        raise InvalidInput(_("must be true or false"), field="question_correct")
    if span_correct is not None and not isinstance(span_correct, bool):
        raise InvalidInput(_("must be true, false or null"), field="span_correct")
    if isinstance(audit_id, bool) or not isinstance(audit_id, int):
        raise NotFound(_("No such question in this project's audit sample."))
    with transaction.atomic():
        entry = QuestionAudit.objects.select_for_update().filter(project=project, pk=audit_id).first()
        if entry is None:
            raise NotFound(_("No such question in this project's audit sample."))
        before = {"question_correct": entry.question_correct, "span_correct": entry.span_correct}
        entry.question_correct, entry.span_correct = question_correct, span_correct
        entry.auditor, entry.audited_at = user, timezone.now()
        entry.save(update_fields=["question_correct", "span_correct", "auditor", "audited_at"])
        aggregation_request_on_commit(project.pk, [])  # as for a draw
        audit_record(actor=user, action="question_audit_mark", project=project, target=f"question_audit:{entry.pk}",
                     before=before, after={"question_correct": question_correct, "span_correct": span_correct})  # fmt: skip
    return entry


def audit_sample_for_supervisor(*, user, slug: str) -> dict:
    """{"figures": audit_figures, "results": the sample}: each sampled question with what a
    supervisor needs to judge it (the paragraph, the question and its answer: the author's
    span, or the file's first answer; None for an unanswerable question) and the verdict so
    far. In source order, then drawn order."""
    project = _audit_project(user, slug)
    return {"figures": audit_figures(project), "results": _audit_entries(project)}


def _audit_entries(project) -> list[dict]:
    entries = list(QuestionAudit.objects.filter(project=project).select_related("item", "annotation"))
    out = []
    for entry in entries:
        payload = entry.item.payload
        if entry.annotation_id is not None:
            questions = questions_of(entry.annotation.value)
            question = questions[entry.question] if entry.question < len(questions) else {}
            answer = question.get("answer") if question.get("answerable", True) else None
            text, answer = question.get("question", ""), answer
        else:
            found = dict(imported_questions_of(payload)).get(entry.question) or {}
            answers = found.get("answers") or []
            first = answers[0] if answers and isinstance(answers[0], dict) else None
            text = found.get("question", "")
            answer = (
                {"start": first.get("answer_start"), "text": first.get("text")}
                if first and not found.get("is_impossible")
                else None
            )
        out.append(
            {
                "id": entry.pk,
                "source": entry.source,
                "item": entry.item_id,
                "title": payload.get("title", ""),
                "context": payload.get("context", ""),
                "question": text,
                "answer": answer,
                "question_correct": entry.question_correct,
                "span_correct": entry.span_correct,
            }
        )
    return out


def audit_figures(project) -> dict | None:
    """The report's `final_audit`: per source and overall, how many questions were drawn and
    marked, and the shares of correct questions and of correct spans (over the marked ones
    with a span to judge) with their Wilson intervals. None before a draw. One query."""
    rows = list(
        QuestionAudit.objects.filter(project=project).values_list("source", "question_correct", "span_correct", "seed")
    )
    if not rows:
        return None

    def figures(selected) -> dict:
        marked = [row for row in selected if row[1] is not None]
        spans = [row[2] for row in marked if row[2] is not None]
        return {
            "drawn": len(selected),
            "marked": len(marked),
            "question_correct": proportion_interval(sum(1 for row in marked if row[1]), len(marked)),
            "span_correct": proportion_interval(sum(1 for span in spans if span), len(spans)),
        }

    by_source: dict[str, list] = defaultdict(list)
    for row in rows:
        by_source[row[0]].append(row)
    return {
        "seed": rows[0][3],
        "sources": {source: figures(selected) for source, selected in sorted(by_source.items())},
        "all": figures(rows),
    }
