"""Blind validation of dev/test questions (HeQ §3.3-3.4; docs/api.md "Review and feedback").

A validator answers a question on their own — one authored in Mashov or one that came with the
imported file — marking a span or "unanswerable", without seeing the existing answers. Their
spans are stored as QuestionValidation rows and exported as extra gold answers. Validators are
reviewers, supervisors, and active (not trial, not disqualified) annotators; never the author."""

from __future__ import annotations

import random

from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.utils.translation import gettext as _

from annotation import access
from annotation.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from annotation.kinds.registry import get_kind
from annotation.models import Annotation, Item, Membership, QuestionValidation, Review
from annotation.services.aggregation import aggregation_request_on_commit
from annotation.wording import join_list

from .questions import check_span_value, imported_questions_of, item_split, project_article_splits, questions_of
from .reviews import QUESTION_KINDS


def _validator_project(user, slug: str):
    project = access.access_project_for_user(user, slug)
    if project.kind not in QUESTION_KINDS:
        raise InvalidInput(_("projects of this kind have no questions to validate"), field="slug")
    if access.is_admin(user):
        return project
    membership = access.membership_of(user, project)
    if membership.role == Membership.Role.ANNOTATOR and membership.status != Membership.Status.ACTIVE:
        raise PermissionDenied(_("Only active annotators, reviewers and supervisors validate questions."))
    return project


def validation_next_for_user(*, user, slug: str) -> dict | None:
    """A question for the caller to answer, or None when none is left. Candidates are the
    questions of paragraphs in a split that the project validates (settings.validate_splits,
    default dev and test): those authored in Mashov (not the caller's own, not graded
    rejected) and those that came with the imported file (HeQ §3.3: dev/test questions are
    validated and augmented; not marked "rejected" in the file, with a usable id) — each not
    yet answered by the caller and with fewer than `validators_per_question` answers. Chosen
    at random among those.

    Blind: the paragraph and the question text only — never the author's answer, the file's
    answers, `is_impossible`, `wrong_answers` or quality. An authored question is named by
    `annotation` + `question` (its index), an imported one by `item` + `question_key` (the
    file's question id; `annotation` is then null). Six queries (two for the splits)."""
    project = _validator_project(user, slug)
    kind = get_kind(project.kind)
    settings = kind.settings_for(project.settings)
    splits = set(settings["validate_splits"])
    items = {
        item.pk: item
        for item in Item.objects.filter(project=project)
        .exclude(status=Item.Status.REMOVED)
        .only("id", "external_id", "payload", "group", "split", "author_id")
    }
    article_splits = project_article_splits(project, settings)
    in_split = {pk for pk, item in items.items() if item_split(item, article_splits) in splits}
    if not in_split:
        return None
    annotations = (
        Annotation.objects.filter(item_id__in=in_split).exclude(annotator=user).values_list("id", "item_id", "value")
    )
    counts: dict[tuple, int] = {}
    mine: set[tuple] = set()
    for annotation_id, item_id, question, question_key, validator_id in QuestionValidation.objects.filter(
        Q(annotation__item__project=project) | Q(item__project=project)
    ).values_list("annotation_id", "item_id", "question", "question_key", "validator_id"):
        key = (
            ("authored", annotation_id, question) if annotation_id is not None else ("imported", item_id, question_key)
        )
        counts[key] = counts.get(key, 0) + 1
        if validator_id == user.pk:
            mine.add(key)
    rejected = set(
        Review.objects.filter(annotation__item__project=project, grade="rejected").values_list(
            "annotation_id", "question"
        )
    )

    def open_to_caller(key) -> bool:
        return key not in mine and counts.get(key, 0) < settings["validators_per_question"]

    candidates = []  # (key, item id, question index, question text)
    for annotation_id, item_id, value in annotations:
        for index, question in enumerate(questions_of(value)):
            key = ("authored", annotation_id, index)
            if (annotation_id, index) not in rejected and open_to_caller(key):
                candidates.append((key, item_id, index, question.get("question", "")))
    for item_id in sorted(in_split):
        if items[item_id].author_id == user.pk:
            continue
        for index, question in imported_questions_of(items[item_id].payload):
            if question.get("question quality") == "rejected":
                continue
            key = ("imported", item_id, question["id"])
            if open_to_caller(key):
                candidates.append((key, item_id, index, question.get("question", "")))
    if not candidates:
        return None
    key, item_id, index, text = random.choice(candidates)
    item = items[item_id]
    return {
        "annotation": key[1] if key[0] == "authored" else None,
        "question": index,
        "question_key": key[2] if key[0] == "imported" else None,
        "question_text": text,
        "item": {
            "id": item.pk,
            "external_id": item.external_id,
            "payload": {"context": item.payload.get("context", ""), "title": item.payload.get("title", "")},
        },
        "remaining": len(candidates),
    }


def validation_submit(
    *, user, annotation_id=None, question=None, item_id=None, question_key=None, answerable, answer
) -> QuestionValidation:
    """Store the caller's own answer to a question: a span (`start` in code points of the
    stored paragraph, `text` equal to that slice) or null for unanswerable.

    The question is an authored one (`annotation_id` + `question`, its index) or one of the
    imported file (`item_id` + `question_key`, the file's question id; `question` is then
    not used, the stored index is looked up from the key). Giving both or neither is a 400.
    The caller may not validate their own question. The question must be one that
    `validation_next_for_user` could serve, else a conflict (409): its paragraph in a split
    of settings.validate_splits, not rejected, not yet answered by the caller (the unique
    constraints settle races) and with fewer than settings.validators_per_question answers
    (counted under a row lock, so concurrent validators never exceed it)."""
    if annotation_id is not None and item_id is not None:
        raise InvalidInput(
            _("give either annotation (an authored question) or item with question_key (an imported one)"), field="item"
        )
    if annotation_id is None and item_id is None:
        raise InvalidInput(
            _("is required (or item with question_key for a question of the imported file)"), field="annotation"
        )
    if item_id is not None:
        return _imported_validation_submit(
            user=user, item_id=item_id, question_key=question_key, answerable=answerable, answer=answer
        )
    if not isinstance(annotation_id, int) or isinstance(annotation_id, bool):
        raise InvalidInput(_("must be an annotation id"), field="annotation")
    annotation = (
        Annotation.objects.select_related("item__project")
        .filter(pk=annotation_id)
        .exclude(item__status=Item.Status.REMOVED)
        .first()
    )
    if annotation is None:
        raise NotFound()
    _validator_project(user, annotation.item.project.slug)
    if annotation.annotator_id == user.pk:
        raise PermissionDenied(_("You cannot validate your own question."))
    count = len(questions_of(annotation.value))
    if not isinstance(question, int) or isinstance(question, bool) or not 0 <= question < count:
        raise InvalidInput(_("must be an index between 0 and %(last)s") % {"last": count - 1}, field="question")
    if Review.objects.filter(annotation=annotation, question=question, grade="rejected").exists():
        raise Conflict(_("this question was graded rejected; rejected questions are not validated"), field="question")
    span = check_span_value(answerable, answer, annotation.item.payload.get("context", ""), "")
    try:
        with transaction.atomic():
            # The annotation's row lock queues concurrent validators of its questions, so
            # the count below sees every answer stored before this one.
            Annotation.objects.select_for_update().filter(pk=annotation.pk).first()
            _check_question_open(
                annotation.item,
                QuestionValidation.objects.filter(annotation=annotation, question=question),
                user=user,
                field="question",
            )
            # The answer is in the report (span agreement, validation progress): the worker
            # keeps it by the question's item.
            aggregation_request_on_commit(annotation.item.project_id, [annotation.item_id])
            return QuestionValidation.objects.create(
                annotation=annotation,
                question=question,
                validator=user,
                answer_start=span["start"] if span else None,
                answer_text=span["text"] if span else None,
            )
    except IntegrityError:
        raise Conflict(_("You already answered this question."), field="question") from None


def _check_question_open(item: Item, answers: QuerySet[QuestionValidation], *, user, field: str) -> None:
    """The rules `validation_next_for_user` serves by, for a question named directly: its
    paragraph is in a split the project validates (settings.validate_splits), the caller has
    not answered it and it has fewer than settings.validators_per_question answers (those in
    `answers`); else Conflict naming `field`.
    Call inside the transaction that stores the answer, holding the row lock that
    serialises the question's validators (the annotation or, for the file's questions, the
    paragraph)."""
    settings = get_kind(item.project.kind).settings_for(item.project.settings)
    split = item_split(item, project_article_splits(item.project, settings))
    if split not in settings["validate_splits"]:
        raise Conflict(
            _("questions of the “%(split)s” split are not validated (the project validates: %(splits)s)")
            % {"split": split, "splits": join_list(settings["validate_splits"])},
            field=field,
        )
    validators = list(answers.values_list("validator_id", flat=True))
    if user.pk in validators:
        raise Conflict(_("You already answered this question."), field=field)
    if len(validators) >= settings["validators_per_question"]:
        raise Conflict(
            _("this question already has its %(n)s validators") % {"n": settings["validators_per_question"]},
            field=field,
        )


def _imported_validation_submit(*, user, item_id, question_key, answerable, answer) -> QuestionValidation:
    if not isinstance(item_id, int) or isinstance(item_id, bool):
        raise InvalidInput(_("must be an item id"), field="item")
    item = Item.objects.select_related("project").filter(pk=item_id).exclude(status=Item.Status.REMOVED).first()
    if item is None:
        raise NotFound()
    _validator_project(user, item.project.slug)
    if item.author_id == user.pk:
        raise PermissionDenied(_("You cannot validate a question of your own paragraph."))
    if not isinstance(question_key, str) or not question_key:
        raise InvalidInput(_("is required: the id of the file's question"), field="question_key")
    found = [index for index, question in imported_questions_of(item.payload) if question["id"] == question_key]
    if not found:
        raise InvalidInput(_("is not a question of this paragraph"), field="question_key")
    if item.payload["questions"][found[0]].get("question quality") == "rejected":
        raise Conflict(
            _("the file marks this question rejected; rejected questions are not validated"), field="question_key"
        )
    span = check_span_value(answerable, answer, item.payload.get("context", ""), "")
    try:
        with transaction.atomic():
            # The paragraph's row lock queues concurrent validators of its file's questions.
            Item.objects.select_for_update().filter(pk=item.pk).first()
            _check_question_open(
                item,
                QuestionValidation.objects.filter(item=item, question_key=question_key),
                user=user,
                field="question_key",
            )
            aggregation_request_on_commit(item.project_id, [item.pk])  # as for an authored question
            return QuestionValidation.objects.create(
                item=item,
                question=found[0],
                question_key=question_key,
                validator=user,
                answer_start=span["start"] if span else None,
                answer_text=span["text"] if span else None,
            )
    except IntegrityError:
        raise Conflict(_("You already answered this question."), field="question_key") from None
