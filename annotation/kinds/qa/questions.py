"""What a question of `qa_authoring` is: the authored value and its checks, the grades a
reviewer gives, and the split a paragraph's article falls in (HeQ §3, §3.3).

An annotator submits `{"questions": [{"question": str, "answerable": bool, "answer": {"start": int, "text": str} | null}]}`.
`start` counts code points of the stored paragraph and `text` must equal that slice
(docs/text.md "Offsets"; the page converts from the browser's UTF-16 units)."""

from __future__ import annotations

import hashlib
from typing import Any

from django.utils.translation import gettext as _

from annotation.errors import FieldError, InvalidInput
from annotation.metrics.morphology import trim_end
from annotation.metrics.offsets import span_edge_problem, span_matches
from annotation.metrics.text import forbidden_character
from annotation.wording import fault_text, span_problem_text

GRADES = ("rejected", "verified", "good", "gold")
GRADE_SCORE = {grade: index for index, grade in enumerate(GRADES)}
SPLITS = ("train", "dev", "test")
MAX_QUESTION_LENGTH = 2_000


def article_order(key: str, seed: int) -> bytes:
    """An article's place in the seeded shuffle: a hash of (seed, key), so an article's
    place among the others does not depend on which others exist."""
    return hashlib.sha256(f"{seed}\x00{key}".encode()).digest()


def assign_article_splits(
    question_counts: dict[str, int],
    *,
    seed: int,
    dev_share: float,
    test_share: float,
    fixed: dict[str, int] | None = None,
) -> dict[str, str]:
    """{article key: split} such that the realised shares of QUESTIONS come as close as the
    articles allow to test_share and dev_share (HeQ §3.3: 90/5/5 of the data, all questions
    of an article in one split). `question_counts` are the questions of each article whose
    split is not fixed; `fixed` the questions per split of paragraphs whose split the file
    gave (they count in the totals and their split's share).

    Articles are taken in a seeded shuffle (`article_order`); each goes to test, else dev,
    when it brings that split's question count strictly closer to its target, else to
    train. Deterministic given the seed and the counts; an article without questions is
    in train.

    >>> assign_article_splits({"a": 1, "b": 18, "c": 1}, seed=13, dev_share=0.05, test_share=0.05)
    {'a': 'test', 'b': 'train', 'c': 'dev'}
    """
    fixed = fixed or {}
    total = sum(question_counts.values()) + sum(fixed.values())
    targets = {"test": test_share * total, "dev": dev_share * total}
    filled = {split: fixed.get(split, 0) for split in targets}
    splits = {}
    for key in sorted(question_counts, key=lambda key: (article_order(key, seed), key)):
        count = question_counts[key]
        splits[key] = "train"
        for split in ("test", "dev"):
            if abs(filled[split] + count - targets[split]) < abs(filled[split] - targets[split]):
                filled[split] += count
                splits[key] = split
                break
    return splits


def article_key(item) -> str:
    return item.group or item.external_id


def project_article_splits(project, settings: dict) -> dict[str, str]:
    """{article key: split} of `project` from the questions present now (imported and
    authored, of paragraphs not removed; rejected ones count too, so that a grade does not
    move an article).

    The rule for stability: the split is computed, not stored. The export, the validation
    queue, the validation submit and the quality report all read this one function, so they
    agree at any moment; while questions arrive an article may change split, and the split
    is final when collection ends. Validation keeps up by itself: questions of an article
    that enters dev/test join the queue, and answers given while an article was in dev/test
    stay as extra spans if it leaves. Storing the split the first time it is needed would
    freeze it from the first few questions and miss the shares the paper asks for. Two
    queries."""
    from annotation.models import Annotation, Item

    counts: dict[str, int] = {}
    fixed: dict[str, int] = {}
    keys: dict[int, tuple[str, str]] = {}
    for item_id, payload, split, group, external_id in (
        Item.objects.filter(project=project)
        .exclude(status=Item.Status.REMOVED)
        .values_list("id", "payload", "split", "group", "external_id")
    ):
        keys[item_id] = (split, group or external_id)
        imported = payload.get("questions") if isinstance(payload, dict) else None
        number = sum(isinstance(q, dict) for q in imported) if isinstance(imported, list) else 0
        _add_questions(counts, fixed, *keys[item_id], number)
    for item_id, value in Annotation.objects.filter(item_id__in=keys).values_list("item_id", "value"):
        _add_questions(counts, fixed, *keys[item_id], len(questions_of(value)))
    return assign_article_splits(
        counts,
        seed=settings["split_seed"],
        dev_share=settings["dev_share"],
        test_share=settings["test_share"],
        fixed=fixed,
    )


def _add_questions(counts: dict, fixed: dict, split: str, key: str, number: int) -> None:
    if split:
        fixed[split] = fixed.get(split, 0) + number
    else:
        counts[key] = counts.get(key, 0) + number


def item_split(item, article_splits: dict[str, str]) -> str:
    """The item's stored split when the file gave one, else its article's split in
    `article_splits` (from `project_article_splits`; train when the article has none)."""
    if item.split:
        return item.split
    return article_splits.get(article_key(item), "train")


def clean_questions(value: Any, context: str, *, min_questions: int, max_questions: int) -> dict:
    """The authored value, validated against the stored paragraph; InvalidInput lists every
    problem by field (`value.questions.2.answer.start`). A question is kept exactly as typed;
    an answer loses whitespace and sentence punctuation at its end (`_trimmed`)."""
    if not isinstance(value, dict) or not isinstance(value.get("questions"), list):
        raise InvalidInput(
            _('must be an object like {"questions": [{"question", "answerable", "answer"}]}'), field="value"
        )
    errors = [
        FieldError("value", _("unknown field “%(field)s”") % {"field": key})
        for key in value
        if key != "questions" and not forbidden_character(str(key))
    ]
    questions = value["questions"]
    if not min_questions <= len(questions) <= max_questions:
        errors.append(
            FieldError(
                "value.questions",
                _("must hold between %(min)s and %(max)s questions (got %(n)s)")
                % {"min": min_questions, "max": max_questions, "n": len(questions)},
            )
        )
    cleaned = []
    for index, question in enumerate(questions[:50]):
        path = f"value.questions.{index}"
        errors_before = len(errors)
        if not isinstance(question, dict):
            errors.append(FieldError(path, _("must be an object")))
            continue
        unknown = set(question) - {"question", "answerable", "answer"}
        if unknown:
            errors.append(
                FieldError(
                    path, _("unknown field(s); expected %(fields)s") % {"fields": "question, answerable, answer"}
                )
            )
        text = question.get("question")
        if not isinstance(text, str):
            errors.append(FieldError(f"{path}.question", _("is required (a string)")))
        elif not text.strip():
            errors.append(FieldError(f"{path}.question", _("must not be empty")))
        elif fault := forbidden_character(text):
            errors.append(FieldError(f"{path}.question", fault_text(fault)))
        elif len(text) > MAX_QUESTION_LENGTH:
            errors.append(
                FieldError(f"{path}.question", _("is longer than %(n)s characters") % {"n": MAX_QUESTION_LENGTH})
            )
        answerable = question.get("answerable")
        answer = question.get("answer")
        if not isinstance(answerable, bool):
            errors.append(FieldError(f"{path}.answerable", _("must be true or false")))
        elif not answerable:
            if answer is not None:
                errors.append(FieldError(f"{path}.answer", _("must be null for an unanswerable question")))
        elif not isinstance(answer, dict):
            errors.append(FieldError(f"{path}.answer", _('an answerable question needs {"start", "text"}')))
        else:
            start, span = answer.get("start"), answer.get("text")
            if set(answer) - {"start", "text"}:
                errors.append(
                    FieldError(f"{path}.answer", _("unknown field(s); expected %(fields)s") % {"fields": "start, text"})
                )
            if not isinstance(start, int) or isinstance(start, bool):
                errors.append(FieldError(f"{path}.answer.start", _("must be an integer (code points)")))
            elif not isinstance(span, str) or not span:
                errors.append(FieldError(f"{path}.answer.text", _("must be a non-empty string")))
            elif fault := forbidden_character(span):
                errors.append(FieldError(f"{path}.answer.text", fault_text(fault)))
            elif not 0 <= start < len(context) or start + len(span) > len(context):
                errors.append(
                    FieldError(
                        f"{path}.answer.start",
                        _("the span lies outside the paragraph (0..%(n)s code points)") % {"n": len(context)},
                    )
                )
            elif not span_matches(context, start, span):
                errors.append(
                    FieldError(
                        f"{path}.answer.text",
                        _("is not the paragraph's text at %(start)s (code points)") % {"start": start},
                    )
                )
            elif problem := span_edge_problem(context, start, span):
                errors.append(
                    FieldError(
                        f"{path}.answer.{'start' if problem.edge == 'start' else 'text'}", span_problem_text(problem)
                    )
                )
        if len(errors) == errors_before:
            cleaned.append(
                {
                    "question": text,
                    "answerable": answerable,
                    "answer": _trimmed(context, answer["start"], answer["text"])
                    if answerable and isinstance(answer, dict)
                    else None,
                }
            )
    if errors:
        raise InvalidInput(_("invalid value"), errors=errors)
    return {"questions": cleaned}


def _trimmed(context: str, start: int, span: str) -> dict:
    """A valid span as stored: whitespace, then sentence punctuation, left out at its end, as
    the question page leaves them out of a selection (static/qa/annotate.js), so that an API
    client's "ירושלים." is stored as the page would have stored it."""
    end = start + len(span)
    while end > start + 1 and context[end - 1].isspace():
        end -= 1
    end = trim_end(context, start, end)
    return {"start": start, "text": context[start:end]}


def check_span_value(answerable: Any, answer: Any, context: str, path: str) -> dict | None:
    """One validator's answer: `{"start", "text"}` or None; InvalidInput naming `path`."""
    probe = {"question": "?", "answerable": answerable, "answer": answer}
    try:
        cleaned = clean_questions({"questions": [probe]}, context, min_questions=1, max_questions=1)
    except InvalidInput as exc:
        raise InvalidInput(
            _("invalid answer"),
            errors=[
                FieldError((e.field or "").replace("value.questions.0.", path) or path, e.message) for e in exc.errors
            ],
        ) from None
    return cleaned["questions"][0]["answer"]


def questions_of(value) -> list[dict]:
    questions = value.get("questions") if isinstance(value, dict) else None
    return [q for q in questions if isinstance(q, dict)] if isinstance(questions, list) else []


def imported_questions_of(payload) -> list[tuple[int, dict]]:
    """(index in the payload, question) of the file's questions that a validation can name:
    objects with a non-empty string id (import guarantees it; this guards older rows)."""
    questions = payload.get("questions") if isinstance(payload, dict) else None
    if not isinstance(questions, list):
        return []
    return [
        (index, q)
        for index, q in enumerate(questions)
        if isinstance(q, dict) and isinstance(q.get("id"), str) and q["id"]
    ]


def imported_golds(question: dict) -> list[str | None]:
    """The gold answers of an imported question for span agreement: the texts of its
    `answers`, or `[None]` ("no answer") when the file marks it unanswerable."""
    if question.get("is_impossible") is True:
        return [None]
    answers = question.get("answers")
    texts = (
        [a["text"] for a in answers if isinstance(a, dict) and isinstance(a.get("text"), str)]
        if isinstance(answers, list)
        else []
    )
    return texts or [None]
