"""`qa_authoring`: HeQ's question authoring (HeQ §3; DESIGN.md §2; API.md).

An item is one paragraph. The annotator writes `min_questions`..`max_questions` questions
about it (HeQ: 3-5), each answerable with a span of the paragraph or unanswerable, and submits
`{"questions": [{"question": str, "answerable": bool, "answer": {"start": int, "text": str} | null}]}`.
`start` counts code points of the stored paragraph and `text` must equal that slice
(DESIGN.md §6; the page converts from the browser's UTF-16 units).

Import formats
- `squad`: SQuAD v2 JSON as HeQ ships it, both releases. v1.1 has a boolean `is_impossible`
  and the plausible-but-wrong span of an unanswerable question in `wrong_answers`; v1.0 has
  the *string* "TRUE"/"FALSE" with the meaning inverted ("TRUE" = answerable) and keeps the
  plausible span in `answers` (../shared/data/heq/README.md). The release is detected from the
  type of `is_impossible` (and checked against `version`); v1.0 questions are converted to the
  v1.1 convention. One paragraph is one item, external id `<title>#<n>` (n-th paragraph of
  the article), group = title; questions already in the file are kept in the payload as
  existing questions, exactly as given, and exported again.
- `jsonl` / `csv`: `id, context, title?, group?, split?, questions?` (questions in the v1.1
  convention; JSONL only).
- `articles` (the pool builder, HeQ §3.2): JSONL `{"title", "text", "source"?}` of whole
  articles, one paragraph a line; paragraphs of 500-1,600 code points are kept, at most 3 per
  article, chosen at random with a seed derived from the title (re-importing chooses the same).

Settings (HeQ's numbers as defaults): `min_questions` 3, `max_questions` 5; `review_rate`
0.2 (share of a trusted member's paragraphs sent to review; trial and untrusted members are
always reviewed, HeQ §3.3 "Crowdsource Monitoring"); `validators_per_question` 2 (HeQ §3.3:
several correct spans for dev/test); `validate_splits` ["dev", "test"]; `authors_per_paragraph`
1; `split_seed`, `dev_share` 0.05 and `test_share` 0.05 (90/5/5 by article, HeQ §3.3);
`overlap_warning` 0.5 (the page warns above this question-paragraph word overlap).

Export: `squad` (HeQ's v1.1 shape; `question quality` = the reviewer's grade) and `jsonl` (one
question a line) through `export_questions_stream`; rejected questions are left out unless
asked for."""

from __future__ import annotations

import hashlib
import json
import random
import uuid
from types import SimpleNamespace
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from typing import Any

from annotation import safe_json
from annotation.errors import FieldError, InvalidInput
from annotation.metrics import overlap as overlap_metrics
from annotation.metrics.offsets import span_matches
from annotation.metrics.spans import exact_match, f1, tlnls
from annotation.metrics.text import bidi_control, fold_for_matching, forbidden_character
from annotation.rows import ItemRow, RowProblems, read_jsonl_objects, require_text

from annotation.kinds.base import SEED_RANGE, Kind, check_range

GRADES = ("rejected", "verified", "good", "gold")
GRADE_SCORE = {grade: index for index, grade in enumerate(GRADES)}
SPLITS = ("train", "dev", "test")
MAX_QUESTION_LENGTH = 2_000
MAX_CONTEXT_LENGTH = 100_000
# An imported question's id is what names it in a validation (QuestionValidation.question_key).
MAX_QUESTION_ID_LENGTH = 200
# HeQ §3.2: paragraphs of 500-1,600 characters, at most three per article.
POOL_MIN_CHARS, POOL_MAX_CHARS, POOL_PER_ARTICLE = 500, 1_600, 3
# Key order of HeQ's files, kept on export (PostgreSQL's jsonb does not keep key order).
QUESTION_KEYS = ("question", "id", "answers", "is_impossible", "WH Question", "question quality", "wrong_answers")
ARTICLE_KEYS = ("title", "source")
UNREVIEWED = "unreviewed"
# Question ids of authored questions: UUIDs like HeQ's, stable for (project, annotation, index).
QUESTION_ID_NAMESPACE = uuid.UUID("6f1c44a4-5b8e-4a53-9a8e-3c0f2f5f0a11")


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


def pool_paragraphs(text: str, title: str, *, low: int = POOL_MIN_CHARS, high: int = POOL_MAX_CHARS,
                    per_article: int = POOL_PER_ARTICLE) -> list[tuple[int, str]]:
    """(line number, paragraph) of the paragraphs chosen from one article (HeQ §3.2): lines
    of `low`..`high` code points, at most `per_article`, chosen at random with the title as
    seed and returned in article order. Paragraphs are kept exactly (only the line break,
    and a "\\r" before it, separate them).

    >>> [n for n, _ in pool_paragraphs("short\\n" + "א" * 600 + "\\n" + "ב" * 2000, "t")]
    [2]
    """
    candidates = []
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if low <= len(line) <= high and line.strip():
            candidates.append((number, line))
    if len(candidates) > per_article:
        seed = int.from_bytes(hashlib.sha256(title.encode()).digest()[:8], "big")
        candidates = sorted(random.Random(seed).sample(candidates, per_article))
    return candidates


# --- import ---------------------------------------------------------------------------------


def _v10_to_v11(question: dict) -> dict | str:
    """A v1.0 question in the v1.1 convention, or why it cannot be read. v1.0's
    is_impossible "TRUE" means answerable (README of the HeQ sample, checked question by
    question against v1.1); an unanswerable one keeps its plausible span in `answers`."""
    flag = question.get("is_impossible")
    if flag not in ("TRUE", "FALSE"):
        return 'is_impossible must be "TRUE" or "FALSE" in a v1.0 file'
    converted = {key: value for key, value in question.items() if key not in ("is_impossible", "answers", "wrong_answers")}
    answers = question.get("answers", [])
    if flag == "TRUE":
        converted.update(answers=answers, is_impossible=False, wrong_answers=[])
    else:
        converted.update(answers=[], is_impossible=True, wrong_answers=answers)
    return {key: converted[key] for key in (*QUESTION_KEYS, *converted) if key in converted}


def detect_squad_release(doc: dict) -> str:
    """"v1.0" or "v1.1": HeQ's two conventions for `is_impossible`, told apart by its type
    (strings in v1.0, booleans in v1.1 and in SQuAD 2.0). A file whose `version` names one
    release while its values follow the other, or that mixes both, is refused."""
    kinds = set()
    for article in doc.get("data") or []:
        for paragraph in (article.get("paragraphs") or []) if isinstance(article, dict) else []:
            for question in (paragraph.get("qas") or []) if isinstance(paragraph, dict) else []:
                if isinstance(question, dict) and "is_impossible" in question:
                    flag = question["is_impossible"]
                    kinds.add("v1.0" if isinstance(flag, str) else "v1.1" if isinstance(flag, bool) else "other")
    if "other" in kinds:
        raise InvalidInput("is_impossible must be a boolean (v1.1) or \"TRUE\"/\"FALSE\" (v1.0)", field="file")
    if len(kinds) > 1:
        raise InvalidInput("the file mixes v1.0 (string) and v1.1 (boolean) is_impossible values", field="file")
    found = kinds.pop() if kinds else None
    declared = doc.get("version")
    if found is None:
        return "v1.0" if declared == "v1.0" else "v1.1"
    if declared in ("v1.0", "v1.1") and declared != found:
        raise InvalidInput(f"the file says version {declared} but its is_impossible values are {found}'s", field="file")
    return found


def read_squad(text: str) -> Iterator[tuple[int, dict]]:
    """(row, record) per paragraph of a SQuAD v2 / HeQ file; rows count paragraphs from 1."""
    try:
        doc = safe_json.loads(text)
    except safe_json.UnsafeJSON as exc:
        raise InvalidInput(str(exc), field="file") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
        raise InvalidInput('a SQuAD file is an object with a "data" list of articles', field="file")
    release = detect_squad_release(doc)
    row = 0
    paragraphs_of_title: Counter = Counter()
    for article_index, article in enumerate(doc["data"]):
        if not isinstance(article, dict) or not isinstance(article.get("paragraphs"), list):
            row += 1
            yield row, {"_error": f"(article {article_index + 1}) must be an object with a paragraphs list"}
            continue
        title = article.get("title")
        article_extra = {k: v for k, v in article.items() if k not in ("title", "source", "paragraphs")}
        for paragraph in article["paragraphs"]:
            row += 1
            if not isinstance(paragraph, dict):
                yield row, {"_error": "must be an object with context and qas"}
                continue
            key = title if isinstance(title, str) else ""
            paragraphs_of_title[key] += 1
            questions = paragraph.get("qas", [])
            if release == "v1.0" and isinstance(questions, list):
                converted = []
                for index, question in enumerate(questions):
                    if isinstance(question, dict):
                        question = _v10_to_v11(question)
                        if isinstance(question, str):
                            question = {"_error": question}
                    converted.append(question)
                questions = converted
            record = {
                "id": f"{key}#{paragraphs_of_title[key]}",
                "title": title,
                "context": paragraph.get("context"),
                "questions": questions,
                "paragraph_extra": {k: v for k, v in paragraph.items() if k not in ("context", "qas")},
            }
            if "source" in article:
                record["source"] = article["source"]
            if article_extra:
                record["article_extra"] = article_extra
            yield row, record


def read_articles(text: str) -> Iterator[tuple[int, dict]]:
    """The pool builder: JSONL of whole articles → (row, record) per chosen paragraph, rows
    numbered by the article's line in the file."""
    for number, article, error, member in read_jsonl_objects(text):
        if error:
            yield number, {"_error": error, "_field": member}
            continue
        if not isinstance(article, dict) or not isinstance(article.get("title"), str) or not isinstance(article.get("text"), str):
            yield number, {"_error": 'must be an object with string "title" and "text"'}
            continue
        for line_number, paragraph in pool_paragraphs(article["text"], article["title"]):
            record = {"id": f"{article['title']}#{line_number}", "title": article["title"], "context": paragraph}
            if "source" in article:
                record["source"] = article["source"]
            yield number, record


def _check_span(span: Any, context: str, path: str, problems: RowProblems) -> None:
    if not isinstance(span, dict):
        problems.add(path, 'must be an object {"text", "answer_start"}')
        return
    text, start = span.get("text"), span.get("answer_start")
    if not isinstance(text, str) or not text:
        problems.add(f"{path}.text", "must be a non-empty string")
    elif not isinstance(start, int) or isinstance(start, bool):
        problems.add(f"{path}.answer_start", "must be an integer (a code-point offset into the context)")
    elif not span_matches(context, start, text):
        problems.add(f"{path}.answer_start", f"the text is not the context's slice at {start} (code points)")


def _check_existing_question(question: Any, context: str, path: str, problems: RowProblems, seen: set) -> None:
    """A question already in the file, in the v1.1 convention."""
    if not isinstance(question, dict):
        problems.add(path, "must be an object")
        return
    if "_error" in question:
        problems.add(f"{path}.is_impossible", question["_error"])
        return
    qid = question.get("id")
    if not isinstance(qid, str) or not qid:
        problems.add(f"{path}.id", "must be a non-empty string")
    elif bidi_control(qid):
        problems.add(f"{path}.id", bidi_control(qid))
    elif len(qid) > MAX_QUESTION_ID_LENGTH:
        problems.add(f"{path}.id", f"is longer than {MAX_QUESTION_ID_LENGTH} characters")
    elif qid in seen:
        problems.add(f"{path}.id", f"duplicate question id {qid!r}")
    else:
        seen.add(qid)
    text = question.get("question")
    if not isinstance(text, str) or not text.strip():
        problems.add(f"{path}.question", "must be a non-empty string")
    impossible = question.get("is_impossible", False)
    if not isinstance(impossible, bool):
        problems.add(f"{path}.is_impossible", "must be a boolean")
    answers = question.get("answers", [])
    if not isinstance(answers, list):
        problems.add(f"{path}.answers", "must be a list")
        answers = []
    for index, answer in enumerate(answers):
        _check_span(answer, context, f"{path}.answers[{index}]", problems)
    if impossible is False and not answers:
        problems.add(f"{path}.answers", "an answerable question needs at least one answer")
    if impossible is True and answers:
        problems.add(f"{path}.answers", "an unanswerable question has no answers (put a plausible span in wrong_answers)")
    wrong = question.get("wrong_answers", [])
    if not isinstance(wrong, list):
        problems.add(f"{path}.wrong_answers", "must be a list")
    else:
        for index, answer in enumerate(wrong):
            _check_span(answer, context, f"{path}.wrong_answers[{index}]", problems)
    for label in ("question quality", "WH Question"):
        value = question.get(label)
        if value is not None and (not isinstance(value, str) or bidi_control(value)):
            problems.add(f"{path}.{label}", bidi_control(value) if isinstance(value, str) else "must be a string")


# --- the value ------------------------------------------------------------------------------


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


class QaAuthoringKind(Kind):
    name = "qa_authoring"
    title = "Question authoring with answer spans (HeQ)"
    template = "annotation/annotate_qa.html"
    extra_formats = ("squad", "articles")
    default_settings = {
        "min_questions": 3,
        "max_questions": 5,
        "review_rate": 0.2,
        "validators_per_question": 2,
        "validate_splits": ["dev", "test"],
        "authors_per_paragraph": 1,
        "split_seed": 13,
        "dev_share": 0.05,
        "test_share": 0.05,
        "overlap_warning": 0.5,
    }
    page_urls = ("annotation.urls_heq",)
    api_urls = ("api.urls_heq",)

    def check_settings(self, settings: dict) -> None:
        if not 1 <= settings["min_questions"] <= settings["max_questions"] <= 20:
            raise InvalidInput("need 1 <= min_questions <= max_questions <= 20", field="settings.min_questions")
        for name in ("review_rate", "overlap_warning", "dev_share", "test_share"):
            if not 0.0 <= settings[name] <= 1.0:
                raise InvalidInput("must be between 0 and 1", field=f"settings.{name}")
        if settings["dev_share"] + settings["test_share"] > 1.0:
            raise InvalidInput("dev_share + test_share must be at most 1", field="settings.test_share")
        if not 1 <= settings["validators_per_question"] <= 20:
            raise InvalidInput("must be between 1 and 20", field="settings.validators_per_question")
        if not 1 <= settings["authors_per_paragraph"] <= 20:
            raise InvalidInput("must be between 1 and 20", field="settings.authors_per_paragraph")
        if any(split not in SPLITS for split in settings["validate_splits"]):
            raise InvalidInput(f"must list splits among {', '.join(SPLITS)}", field="settings.validate_splits")
        check_range(settings, "split_seed", *SEED_RANGE)

    # --- import ---

    def read_format(self, fmt: str, text: str, filename: str) -> Iterator[tuple[int, dict]]:
        if fmt == "squad":
            return read_squad(text)
        if fmt == "articles":
            return read_articles(text)
        return super().read_format(fmt, text, filename)

    def parse_record(self, record: dict, row: int) -> tuple[ItemRow | None, list[FieldError]]:
        problems = RowProblems(row)
        common = self.common_fields(record, problems)
        title = require_text(record, "title", problems, required=False, identifier=True)
        if "title" in record and record["title"] is not None and not isinstance(record["title"], str):
            problems.add("title", "must be a string")
        context = require_text(record, "context", problems)
        if context and not context.strip():
            problems.add("context", "is blank")
        if len(context) > MAX_CONTEXT_LENGTH:
            problems.add("context", f"is longer than {MAX_CONTEXT_LENGTH} characters")
        source = record.get("source")
        if source is not None and (not isinstance(source, str) or bidi_control(source)):
            problems.add("source", bidi_control(source) if isinstance(source, str) else "must be a string")
        questions = record.get("questions") or []
        if not isinstance(questions, list):
            problems.add("questions", "must be a list")
            questions = []
        seen: set = set()
        if context:
            for index, question in enumerate(questions):
                _check_existing_question(question, context, f"questions[{index}]", problems, seen)
        for name in ("paragraph_extra", "article_extra"):
            if record.get(name) is not None and not isinstance(record[name], dict):
                problems.add(name, "must be an object")
        if problems.errors:
            return None, problems.errors
        payload: dict = {"context": context, "title": title}
        if questions:
            payload["questions"] = questions
        for name in ("source", "paragraph_extra", "article_extra"):
            if record.get(name) not in (None, {}):
                payload[name] = record[name]
        if not common["group"]:
            common["group"] = title
        return ItemRow(payload=payload, position=row, **common), []

    # --- annotating ---

    def votes_needed(self, item, settings: dict) -> int:
        return settings["authors_per_paragraph"]

    def annotator_payload(self, item) -> dict:
        # Only the paragraph: not the questions already written on it (the author writes
        # their own) and never their answers.
        return {"context": item.payload["context"], "title": item.payload.get("title", "")}

    def clean_value(self, value: Any, item) -> dict:
        settings = self.settings_for(item.project.settings)
        return clean_questions(
            value, item.payload["context"], min_questions=settings["min_questions"], max_questions=settings["max_questions"]
        )

    def after_submit(self, annotation, item, settings: dict) -> None:
        """Route the paragraph to review: always for trial and untrusted members, for
        trusted ones with probability `review_rate` (HeQ §3.3: experienced annotators were
        randomly selected for feedback)."""
        from annotation.models import Membership

        membership = Membership.objects.filter(project_id=item.project_id, user_id=annotation.annotator_id).first()
        if membership is None or membership.status != Membership.Status.ACTIVE or not membership.trusted:
            required = True
        else:
            required = random.random() < settings["review_rate"]
        if required != annotation.review_required:
            annotation.review_required = required
            annotation.save(update_fields=["review_required"])

    # --- report ---

    def report_sections(self, project) -> dict:
        """HeQ's quality signals (§3.3-3.4, appendix C), in four queries.

        `span_agreement` compares each validator's answer with the question's existing
        answers — the author's span for an authored question, the file's `answers` for an
        imported one (`[None]` when the file marks it unanswerable) — by EM, F1 and TLNLS
        (max over golds, matching folding), overall, per validator and `by_origin`.
        `validation` is the progress of the validation queue: questions of the validated
        splits (not rejected), those with `validators_per_question` answers, and answers."""
        from django.db.models import Q

        from annotation.models import Annotation, Item, QuestionValidation, Review

        settings = self.settings_for(project.settings)
        contexts = {}
        imported_questions = []
        imported_by_key: dict[tuple[int, str], dict] = {}
        validated_items: set[int] = set()
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
            if status != Item.Status.REMOVED and item_split(place, settings) in settings["validate_splits"]:
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
                series.append({"period": day, **{g: counts.get(g, 0) for g in GRADES}, "reviewed": n,
                               "mean_grade": sum(GRADE_SCORE[g] * c for g, c in counts.items()) / n})
            grades_per_annotator.append({"annotator": name, "totals": {g: entry["totals"].get(g, 0) for g in GRADES}, "series": series})

        def overlaps(pairs):
            return [overlap_metrics.question_overlap(q, c) for q, c in pairs]

        authored_pairs = [(q["question"], c) for _r, _i, q, c in authored]
        imported_pairs = [(q.get("question", ""), c) for q, c in imported_questions if isinstance(q, dict)]
        authored_overlap, imported_overlap = overlaps(authored_pairs), overlaps(imported_pairs)

        def positions(spans):
            return overlap_metrics.position_histogram([(s, len(c)) for s, c in spans if c and 0 <= s < len(c)])

        authored_positions = positions([(q["answer"]["start"], c) for _r, _i, q, c in authored if q.get("answer")])
        imported_positions = positions(
            [(q["answers"][0]["answer_start"], c) for q, c in imported_questions
             if isinstance(q, dict) and q.get("answers") and isinstance(q["answers"][0], dict)]
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
            score = (exact_match(prediction, golds), f1(prediction, golds), tlnls(prediction, golds))
            scores[validation["validator__username"]].append(score)
            origin_scores[origin].append(score)

        def means(rows):
            if not rows:
                return {"pairs": 0, "em": None, "f1": None, "tlnls": None}
            return {"pairs": len(rows), "em": sum(r[0] for r in rows) / len(rows), "f1": sum(r[1] for r in rows) / len(rows),
                    "tlnls": sum(r[2] for r in rows) / len(rows)}

        to_validate = [("authored", row["id"], index) for row, index, _q, _c in authored
                       if row["item_id"] in validated_items and grades.get((row["id"], index)) != "rejected"]
        to_validate += [("imported", item_id, qid) for (item_id, qid), q in imported_by_key.items()
                        if item_id in validated_items and q.get("question quality") != "rejected"]
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

    # --- export ---

    # `squad` and per-question `jsonl` are written by `export_questions_stream` (served at
    # GET /api/projects/{slug}/questions/export/): a SQuAD document is not a table, so the
    # generic export (`?format=squad`) delegates to `export_stream` instead of its row writers.
    streamed_formats = ("squad",)

    def export_stream(self, spec) -> Iterator[bytes]:
        return export_questions_stream(spec.project, fmt=spec.fmt, split=spec.split)

    def export_record(self, item, facts) -> dict:
        """A paragraph for the generic JSONL/CSV export: its questions from the file and the
        authored ones as submitted (grades and extra answers are in the `squad` export)."""
        payload = item.payload
        return {
            "id": item.external_id,
            "title": payload.get("title", ""),
            "context": payload.get("context", ""),
            "group": item.group,
            "split": item.split,
            "status": item.status,
            "existing_questions": [_ordered_question(q) for q in payload.get("questions") or []],
            "authored": [{"annotator": annotator, "questions": questions_of(value)} for annotator, value in facts.annotations],
            "annotators": [annotator for annotator, _value in facts.annotations],
        }

    def export_csv_columns(self) -> tuple[str, ...]:
        return ("id", "title", "context", "group", "split", "status", "annotators")


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


def _ordered_question(question: dict) -> dict:
    """A stored question with HeQ's key order (jsonb sorts keys), answers as text + start."""
    ordered = {key: question[key] for key in QUESTION_KEYS if key in question}
    ordered.update({key: value for key, value in question.items() if key not in ordered})
    for name in ("answers", "wrong_answers"):
        if isinstance(ordered.get(name), list):
            ordered[name] = [
                {"text": a.get("text"), "answer_start": a.get("answer_start"), **{k: v for k, v in a.items() if k not in ("text", "answer_start")}}
                if isinstance(a, dict) else a
                for a in ordered[name]
            ]
    return ordered


def authored_question_id(project_slug: str, annotation_id: int, index: int) -> str:
    return str(uuid.uuid5(QUESTION_ID_NAMESPACE, f"{project_slug}:{annotation_id}:{index}"))


def export_questions(project, *, split: str | None = None, include_rejected: bool = False) -> Iterator[dict]:
    """Every exported paragraph of `project` in source order, as
    `{"item", "split", "title", "source", "paragraph": {...v1.1 paragraph...}, "authors": {question id: pseudonym}}`.

    Questions: those of the imported file (kept as they were, with the validators' distinct
    spans appended to an answerable question's `answers`; `question quality` stays the
    file's: reviewers grade authored questions only), then the authored ones: id a UUID stable for (project, annotation, index),
    answers = the author's span then the validators' distinct spans (HeQ §3.3 "augmented by
    creating several correct answer spans"), `question quality` = the grade or
    "unreviewed". Rejected questions (grade, or imported quality "rejected") are left out
    unless `include_rejected`. Paragraphs left without questions are left out. Removed
    items are never exported. Four queries per 500 items."""
    from annotation.models import Annotation, Item, QuestionValidation, Review
    from annotation.services.exports import annotator_pseudonym

    kind = QaAuthoringKind()
    settings = kind.settings_for(project.settings)
    items = Item.objects.filter(project=project).exclude(status=Item.Status.REMOVED).order_by("position", "id")
    pseudonyms: dict[int, str] = {}

    def pseudonym(user_id):
        if user_id not in pseudonyms:
            pseudonyms[user_id] = annotator_pseudonym(project.pk, user_id)
        return pseudonyms[user_id]

    chunk: list = []
    for item in items.iterator(chunk_size=500):
        chunk.append(item)
        if len(chunk) == 500:
            yield from _export_chunk(project, chunk, settings, split, include_rejected, pseudonym, Annotation, Review, QuestionValidation)
            chunk = []
    if chunk:
        yield from _export_chunk(project, chunk, settings, split, include_rejected, pseudonym, Annotation, Review, QuestionValidation)


def _export_chunk(project, chunk, settings, split, include_rejected, pseudonym, Annotation, Review, QuestionValidation):
    wanted = [(item, item_split(item, settings)) for item in chunk]
    if split:
        wanted = [(item, s) for item, s in wanted if s == split]
    ids = [item.pk for item, _s in wanted]
    annotations = defaultdict(list)
    for row in Annotation.objects.filter(item_id__in=ids).order_by("id").values("id", "item_id", "annotator_id", "value"):
        annotations[row["item_id"]].append(row)
    annotation_ids = [row["id"] for rows in annotations.values() for row in rows]
    grades = {(a, q): g for a, q, g in Review.objects.filter(annotation_id__in=annotation_ids).values_list("annotation_id", "question", "grade")}
    extra_spans = defaultdict(list)
    for a, q, start, text in (
        QuestionValidation.objects.filter(annotation_id__in=annotation_ids, answer_start__isnull=False)
        .order_by("id")
        .values_list("annotation_id", "question", "answer_start", "answer_text")
    ):
        extra_spans[(a, q)].append({"text": text, "answer_start": start})
    imported_spans = defaultdict(list)
    for item_id, key, start, text in (
        QuestionValidation.objects.filter(item_id__in=ids, answer_start__isnull=False)
        .order_by("id")
        .values_list("item_id", "question_key", "answer_start", "answer_text")
    ):
        imported_spans[(item_id, key)].append({"text": text, "answer_start": start})
    for item, item_split_name in wanted:
        payload = item.payload
        qas, authors = [], {}
        for question in payload.get("questions") or []:
            if not isinstance(question, dict):
                continue
            if question.get("question quality") == "rejected" and not include_rejected:
                continue
            ordered = _ordered_question(question)
            # Validators' spans join an answerable question's answers (HeQ §3.3); a question
            # nobody validated is written exactly as it came in.
            extra = imported_spans.get((item.pk, question.get("id")), ()) if question.get("is_impossible") is not True else ()
            if extra and isinstance(ordered.get("answers"), list):
                known = {(a.get("text"), a.get("answer_start")) for a in ordered["answers"] if isinstance(a, dict)}
                for span in extra:
                    if (span["text"], span["answer_start"]) not in known:
                        known.add((span["text"], span["answer_start"]))
                        ordered["answers"].append(span)
            qas.append(ordered)
        for row in annotations.get(item.pk, ()):
            for index, question in enumerate(questions_of(row["value"])):
                grade = grades.get((row["id"], index))
                if grade == "rejected" and not include_rejected:
                    continue
                answers = []
                if question.get("answerable") and question.get("answer"):
                    answers.append({"text": question["answer"]["text"], "answer_start": question["answer"]["start"]})
                    for span in extra_spans.get((row["id"], index), ()):
                        if span not in answers:
                            answers.append(span)
                qid = authored_question_id(project.slug, row["id"], index)
                authors[qid] = pseudonym(row["annotator_id"])
                qas.append({
                    "question": question.get("question", ""),
                    "id": qid,
                    "answers": answers,
                    "is_impossible": not question.get("answerable"),
                    "WH Question": overlap_metrics.wh_word(question.get("question", "")) or "",
                    "question quality": grade or UNREVIEWED,
                    "wrong_answers": [],
                })
        if not qas:
            continue
        paragraph = {"context": payload.get("context", "")}
        paragraph.update(payload.get("paragraph_extra") or {})
        paragraph["qas"] = qas
        yield {
            "item": item,
            "split": item_split_name,
            "title": payload.get("title", ""),
            "source": payload.get("source"),
            "article_extra": payload.get("article_extra") or {},
            "paragraph": paragraph,
            "authors": authors,
        }


def export_questions_stream(project, *, fmt: str, split: str | None = None, include_rejected: bool = False) -> Iterator[bytes]:
    """`squad`: one SQuAD v2 JSON document in HeQ's v1.1 shape (articles by title in order of
    first appearance, then paragraphs, then qas), serialised like HeQ's files
    (`json.dumps(ensure_ascii=False)` and a final newline), so a v1.1 file imported and
    exported unchanged comes back byte for byte. The articles are gathered in memory before
    the document is written (a JSON document cannot be closed article by article when an
    article's paragraphs are not adjacent). `jsonl`: one question a line, streamed."""
    if fmt not in ("squad", "jsonl"):
        raise InvalidInput("must be squad or jsonl", field="format")
    if split is not None and split != "" and split not in SPLITS:
        raise InvalidInput(f"must be one of {', '.join(SPLITS)}", field="split")
    paragraphs = export_questions(project, split=split or None, include_rejected=include_rejected)
    if fmt == "jsonl":
        return _questions_jsonl(paragraphs)
    return _squad_document(paragraphs)


def _squad_document(paragraphs: Iterable[dict]) -> Iterator[bytes]:
    articles: dict[tuple, dict] = {}
    for entry in paragraphs:
        key = (entry["title"], entry["source"])
        article = articles.get(key)
        if article is None:
            article = {"title": entry["title"]}
            if entry["source"] is not None:
                article["source"] = entry["source"]
            article.update(entry["article_extra"])
            article["paragraphs"] = []
            articles[key] = article
        article["paragraphs"].append(entry["paragraph"])
    doc = {"version": "v1.1", "data": list(articles.values())}
    yield (json.dumps(doc, ensure_ascii=False) + "\n").encode("utf-8")


def _questions_jsonl(paragraphs: Iterable[dict]) -> Iterator[bytes]:
    for entry in paragraphs:
        paragraph = entry["paragraph"]
        lines = []
        for question in paragraph["qas"]:
            record = {
                "id": question.get("id"),
                "title": entry["title"],
                "paragraph": entry["item"].external_id,
                "context": paragraph["context"],
                "question": question.get("question"),
                "answers": question.get("answers", []),
                "is_impossible": question.get("is_impossible"),
                "question_quality": question.get("question quality"),
                "wh_question": question.get("WH Question"),
                "split": entry["split"],
                "origin": "authored" if question.get("id") in entry["authors"] else "imported",
                "author": entry["authors"].get(question.get("id")),
            }
            line = json.dumps(record, ensure_ascii=False)
            # U+2028/U+2029/U+0085 escaped so that line-splitting readers keep one record a line.
            line = line.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").replace("\x85", "\\u0085")
            lines.append(line + "\n")
        yield "".join(lines).encode("utf-8")
