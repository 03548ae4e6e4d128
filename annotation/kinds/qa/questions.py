"""What a question of `qa_authoring` is: the authored value and its checks, the grades a
reviewer gives, and the split a paragraph's article falls in (HeQ §3, §3.3).

An annotator submits `{"questions": [{"question": str, "answerable": bool, "answer": {"start": int, "text": str} | null}]}`.
`start` counts code points of the stored paragraph and `text` must equal that slice
(DESIGN.md §6; the page converts from the browser's UTF-16 units)."""

from __future__ import annotations

import hashlib
from typing import Any

from annotation.errors import FieldError, InvalidInput
from annotation.metrics.offsets import span_edge_problem, span_matches
from annotation.metrics.text import forbidden_character

GRADES = ("rejected", "verified", "good", "gold")
GRADE_SCORE = {grade: index for index, grade in enumerate(GRADES)}
SPLITS = ("train", "dev", "test")
MAX_QUESTION_LENGTH = 2_000


def article_split(key: str, *, seed: int, dev_share: float, test_share: float) -> str:
    """The split of an article (HeQ §3.3: 90/5/5, all questions of an article in one split):
    a seeded hash of the article key, so an article keeps its split whatever else is
    imported or exported, and the shares hold on average.

    >>> article_split("ירושלים", seed=13, dev_share=0.05, test_share=0.05)
    'train'
    """
    digest = hashlib.sha256(f"{seed}\x00{key}".encode()).digest()
    u = int.from_bytes(digest[:8], "big") / 2**64
    if u < test_share:
        return "test"
    if u < test_share + dev_share:
        return "dev"
    return "train"


def item_split(item, settings: dict) -> str:
    """The item's stored split when the file gave one, else its article's seeded split."""
    if item.split:
        return item.split
    return article_split(
        item.group or item.external_id,
        seed=settings["split_seed"],
        dev_share=settings["dev_share"],
        test_share=settings["test_share"],
    )



def clean_questions(value: Any, context: str, *, min_questions: int, max_questions: int) -> dict:
    """The authored value, validated against the stored paragraph; InvalidInput lists every
    problem by field (`value.questions.2.answer.start`). Text is kept exactly as typed."""
    if not isinstance(value, dict) or not isinstance(value.get("questions"), list):
        raise InvalidInput('must be an object like {"questions": [{"question", "answerable", "answer"}]}', field="value")
    errors = [FieldError("value", f"unknown field {key!r}") for key in value if key != "questions" and not forbidden_character(str(key))]
    questions = value["questions"]
    if not min_questions <= len(questions) <= max_questions:
        errors.append(FieldError("value.questions", f"must hold between {min_questions} and {max_questions} questions (got {len(questions)})"))
    cleaned = []
    for index, question in enumerate(questions[:50]):
        path = f"value.questions.{index}"
        errors_before = len(errors)
        if not isinstance(question, dict):
            errors.append(FieldError(path, "must be an object"))
            continue
        unknown = set(question) - {"question", "answerable", "answer"}
        if unknown:
            errors.append(FieldError(path, "unknown field(s); expected question, answerable, answer"))
        text = question.get("question")
        if not isinstance(text, str):
            errors.append(FieldError(f"{path}.question", "is required (a string)"))
        elif not text.strip():
            errors.append(FieldError(f"{path}.question", "must not be empty"))
        elif forbidden_character(text):
            errors.append(FieldError(f"{path}.question", forbidden_character(text)))
        elif len(text) > MAX_QUESTION_LENGTH:
            errors.append(FieldError(f"{path}.question", f"is longer than {MAX_QUESTION_LENGTH} characters"))
        answerable = question.get("answerable")
        answer = question.get("answer")
        if not isinstance(answerable, bool):
            errors.append(FieldError(f"{path}.answerable", "must be true or false"))
        elif not answerable:
            if answer is not None:
                errors.append(FieldError(f"{path}.answer", "must be null for an unanswerable question"))
        elif not isinstance(answer, dict):
            errors.append(FieldError(f"{path}.answer", 'an answerable question needs {"start", "text"}'))
        else:
            start, span = answer.get("start"), answer.get("text")
            if set(answer) - {"start", "text"}:
                errors.append(FieldError(f"{path}.answer", "unknown field(s); expected start, text"))
            if not isinstance(start, int) or isinstance(start, bool):
                errors.append(FieldError(f"{path}.answer.start", "must be an integer (code points)"))
            elif not isinstance(span, str) or not span:
                errors.append(FieldError(f"{path}.answer.text", "must be a non-empty string"))
            elif forbidden_character(span):
                errors.append(FieldError(f"{path}.answer.text", forbidden_character(span)))
            elif not 0 <= start < len(context) or start + len(span) > len(context):
                errors.append(FieldError(f"{path}.answer.start", f"the span lies outside the paragraph (0..{len(context)} code points)"))
            elif not span_matches(context, start, span):
                errors.append(FieldError(f"{path}.answer.text", f"is not the paragraph's text at {start} (code points)"))
            elif problem := span_edge_problem(context, start, span):
                errors.append(FieldError(f"{path}.answer.{'start' if problem.edge == 'start' else 'text'}", problem.message))
        if len(errors) == errors_before:
            cleaned.append({"question": text, "answerable": answerable, "answer": {"start": answer["start"], "text": answer["text"]} if answerable and isinstance(answer, dict) else None})
    if errors:
        raise InvalidInput("invalid value", errors=errors)
    return {"questions": cleaned}


def check_span_value(answerable: Any, answer: Any, context: str, path: str) -> dict | None:
    """One validator's answer: `{"start", "text"}` or None; InvalidInput naming `path`."""
    probe = {"question": "?", "answerable": answerable, "answer": answer}
    try:
        cleaned = clean_questions({"questions": [probe]}, context, min_questions=1, max_questions=1)
    except InvalidInput as exc:
        raise InvalidInput(
            "invalid answer",
            errors=[FieldError((e.field or "").replace("value.questions.0.", path) or path, e.message) for e in exc.errors],
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
    return [(index, q) for index, q in enumerate(questions)
            if isinstance(q, dict) and isinstance(q.get("id"), str) and q["id"]]


def imported_golds(question: dict) -> list[str | None]:
    """The gold answers of an imported question for span agreement: the texts of its
    `answers`, or `[None]` ("no answer") when the file marks it unanswerable."""
    if question.get("is_impossible") is True:
        return [None]
    answers = question.get("answers")
    texts = [a["text"] for a in answers if isinstance(a, dict) and isinstance(a.get("text"), str)] if isinstance(answers, list) else []
    return texts or [None]
