"""Corrected answers (HeQ §3.4: wrong answers were corrected during the assessment).

A validator or a supervisor replaces an existing answer span of a question — the author's
span of a question written in Mashov, or one of the `answers` of a question of the imported
file — with the right one. The new span is held to the authoring rules (`check_span_value`:
the text equals the paragraph's slice at `start`, edges on grapheme edges, whitespace and
sentence punctuation trimmed at its end as the answer API trims them) and stored in place,
so every export carries it; the old span is kept as an ItemRevision (action
`answer_corrected`: who, when, old and new) and the audit log records it. The item's status
and gold are the decision ledger's and are not touched."""

from __future__ import annotations

from django.db import transaction
from django.utils.translation import gettext as _

from annotation import access
from annotation.errors import Conflict, FieldError, InvalidInput, NotFound, PermissionDenied
from annotation.models import Annotation, Item, ItemRevision, Membership
from annotation.rows import clean_comment
from annotation.services.aggregation import aggregation_request_on_commit
from annotation.services.audit import audit_record

from .questions import check_span_value, imported_questions_of, questions_of
from .reviews import QUESTION_KINDS

BODY_FIELDS = ("annotation", "question", "question_key", "answer_index", "answer", "reason")
ANSWER_CORRECT = "answer_correct"


def _int(value, field: str, *, upper: int | None = None) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0 or (upper is not None and value >= upper):
        raise InvalidInput(
            _("must be an index between 0 and %(last)s") % {"last": (upper or 1) - 1}
            if upper is not None
            else _("must be an id"),
            field=field,
        )
    return value


def _read_body(body) -> tuple[dict, str]:
    if not isinstance(body, dict):
        raise InvalidInput(_("the body must be a JSON object"), field="body")
    unknown = set(body) - set(BODY_FIELDS)
    if unknown:
        raise InvalidInput(
            _("unknown field(s): %(unknown)s; known: %(known)s")
            % {"unknown": ", ".join(sorted(map(str, unknown))), "known": ", ".join(BODY_FIELDS)},
            field=sorted(map(str, unknown))[0],
        )
    errors: list[FieldError] = []
    reason = clean_comment(body.get("reason"), errors)
    if errors:
        raise InvalidInput(errors[0].message, field="reason")
    if ("annotation" in body) == ("question_key" in body):
        raise InvalidInput(
            _("name an authored question with annotation + question, or one of the file with question_key"),
            field="annotation",
        )
    return body, reason


def _corrector_project(user, item: Item):
    """The item's project when the caller may correct its answers: its validators (reviewers,
    supervisors, active annotators) and admins; others are refused (outsiders: not found)
    before anything of the body or the kind is said."""
    project = access.access_project_for_user(user, item.project.slug)
    if not access.is_admin(user):
        membership = access.membership_of(user, project)
        if (
            membership is not None
            and membership.role == Membership.Role.ANNOTATOR
            and membership.status != Membership.Status.ACTIVE
        ):
            raise PermissionDenied(_("Only active annotators, reviewers and supervisors correct answers."))
    if project.kind not in QUESTION_KINDS:
        raise InvalidInput(_("projects of this kind have no questions to correct"), field="item")
    return project


def answer_correct(*, user, item_id: int, body) -> ItemRevision:
    """Replace an existing answer span of one of the item's questions; the revision (old and
    new span) is returned. 400 naming the field for bad input, nothing stored; 409 when the
    question has no span to correct, is the caller's own (unless they supervise) or the
    correction changes nothing."""
    item = Item.objects.select_related("project").filter(pk=item_id).exclude(status=Item.Status.REMOVED).first()
    if item is None:
        raise NotFound()
    project = _corrector_project(user, item)
    supervisor = access.supervises(user, project)
    data, reason = _read_body(body)
    context = item.payload.get("context", "")
    with transaction.atomic():
        item = Item.objects.select_for_update().select_related("project").get(pk=item.pk)
        if "annotation" in data:
            annotation_id = _int(data["annotation"], "annotation")
            annotation = Annotation.objects.select_for_update().filter(pk=annotation_id, item=item).first()
            if annotation is None:
                raise InvalidInput(_("is not an annotation of this item"), field="annotation")
            if annotation.annotator_id == user.pk and not supervisor:
                raise PermissionDenied(_("You cannot correct the answer of your own question."))
            questions = questions_of(annotation.value)
            index = _int(data.get("question"), "question", upper=max(len(questions), 1))
            if index >= len(questions):
                raise InvalidInput(_("is not a question of this annotation"), field="question")
            old = questions[index].get("answer")
            if not questions[index].get("answerable") or not isinstance(old, dict):
                raise Conflict(_("this question has no answer span to correct"), field="question")
            new = check_span_value(True, data.get("answer"), context, "")
            assert new is not None
            old = {"start": old.get("start"), "text": old.get("text")}
            if new == old:
                raise Conflict(_("the correction changes nothing"), field="answer")
            where: dict[str, object] = {"annotation": annotation.pk, "question": index}
            value = {**annotation.value, "questions": [dict(q) for q in annotation.value["questions"]]}
            value["questions"][index]["answer"] = new
            annotation.value = value
            annotation.save(update_fields=["value"])
            previous_payload = item.payload
        else:
            key = data["question_key"]
            if not isinstance(key, str) or not key:
                raise InvalidInput(_("is required: the id of the file's question"), field="question_key")
            found = [index for index, question in imported_questions_of(item.payload) if question["id"] == key]
            if not found:
                raise InvalidInput(_("is not a question of this paragraph"), field="question_key")
            if item.author_id == user.pk and not supervisor:
                raise PermissionDenied(_("You cannot correct the answer of your own question."))
            question = item.payload["questions"][found[0]]
            answers = question.get("answers") if isinstance(question.get("answers"), list) else []
            if question.get("is_impossible") is True or not answers:
                raise Conflict(_("this question has no answer span to correct"), field="question_key")
            position = _int(data.get("answer_index", 0), "answer_index", upper=len(answers))
            current = answers[position] if isinstance(answers[position], dict) else {}
            new = check_span_value(True, data.get("answer"), context, "")
            assert new is not None
            old = {"start": current.get("answer_start"), "text": current.get("text")}
            if new == old:
                raise Conflict(_("the correction changes nothing"), field="answer")
            where = {"question_key": key, "question": found[0], "answer_index": position}
            questions = [dict(q) if isinstance(q, dict) else q for q in item.payload["questions"]]
            fixed = list(answers)
            fixed[position] = {**current, "text": new["text"], "answer_start": new["start"]}
            questions[found[0]] = {**questions[found[0]], "answers": fixed}
            previous_payload = item.payload
            item.payload = {**item.payload, "questions": questions}
            item.save(update_fields=["payload"])
        # The answer is in the report (positions, span agreement): the worker keeps it by the item.
        aggregation_request_on_commit(item.project_id, [item.pk])
        revision = ItemRevision.objects.create(
            item=item,
            failed_round=item.round,
            action=ItemRevision.Action.ANSWER_CORRECTED,
            previous_payload=previous_payload,
            reason=reason,
            details={**where, "old": old, "new": new},
            created_by=user,
        )
        audit_record(
            actor=user, action=ANSWER_CORRECT, project=item.project, target=f"item:{item.external_id}",
            before={**where, "answer": old}, after={**where, "answer": new}, comment=reason,
        )  # fmt: skip
    return revision
