"""The files of `qa_authoring` (HeQ's own, and the pool builder's).

Import formats
- `squad`: SQuAD v2 JSON as HeQ ships it, both releases. v1.1 has a boolean `is_impossible`
  and the plausible-but-wrong span of an unanswerable question in `wrong_answers`; v1.0 has
  the *string* "TRUE"/"FALSE" with the meaning inverted ("TRUE" = answerable) and keeps the
  plausible span in `answers`. The release is detected from the
  type of `is_impossible` (and checked against `version`); v1.0 questions are converted to the
  v1.1 convention. One paragraph is one item, external id `<title>#<n>` (n-th paragraph of
  that title in the file), group = title, and the article's index in the file kept in the
  payload (`article_index`), so articles that share a title export apart; questions already
  in the file are kept in the payload as existing questions, exactly as given, and exported
  again.
- `jsonl` / `csv`: `id, context, title?, group?, split?, questions?` (questions in the v1.1
  convention; a CSV cell holds them as JSON, as the paragraph CSV export writes them).
- `questions`: the per-question JSONL export read back (`read_questions`), one paragraph per
  `paragraph` id with its questions; squad_v2-shaped answers become spans again.
- `articles` (the pool builder, HeQ §3.2): JSONL `{"title", "text", "source"?}` of whole
  articles, one paragraph a line. The article's `source` (case-insensitive; none means
  `pool_default_source`) picks its rule in the `pool_rules` setting — HeQ's: Wikipedia
  500-1,600 code points and at most 3 paragraphs an article; Geektime at least 550 code
  points of which at least 300 Hebrew letters (U+05D0-U+05EA), no upper bound or cap given.
  Where a cap applies, paragraphs are chosen at random with a seed derived from the title
  (re-importing chooses the same).

Export: `squad` (HeQ's v1.1 shape; `question quality` = the reviewer's grade) and `jsonl` (one
question a line, answers and wrong answers in squad_v2's shape, imported back as `questions`)
through `export_questions_stream`; rejected questions are left out unless asked for."""

from __future__ import annotations

import hashlib
import json
import random
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from typing import Any

from django.utils.translation import gettext as _

from annotation import safe_json
from annotation.errors import InvalidInput
from annotation.kinds.base import ExportSplits
from annotation.kinds.registry import get_kind
from annotation.metrics import overlap as overlap_metrics
from annotation.metrics.offsets import span_matches
from annotation.metrics.text import bidi_control
from annotation.rows import RowProblems, read_jsonl_objects
from annotation.upload_text import FileText
from annotation.wording import fault_text, join_list

from .questions import SPLITS, item_split, project_article_splits, questions_of

MAX_CONTEXT_LENGTH = 100_000
# An imported question's id is what names it in a validation (QuestionValidation.question_key).
MAX_QUESTION_ID_LENGTH = 200
# HeQ §3.2's pool rules per source (the kind's `pool_rules` default): Wikipedia paragraphs of
# 500-1,600 characters, at most three per article; Geektime paragraphs of at least 550
# characters, at least 300 of them Hebrew. None: the paper sets no such bound.
POOL_RULES = {
    "wikipedia": {"min_chars": 500, "max_chars": 1_600, "min_hebrew_letters": 0, "per_article": 3},
    "geektime": {"min_chars": 550, "max_chars": None, "min_hebrew_letters": 300, "per_article": None},
}
POOL_RULE_KEYS = ("min_chars", "max_chars", "min_hebrew_letters", "per_article")
# Key order of HeQ's files, kept on export (PostgreSQL's jsonb does not keep key order).
QUESTION_KEYS = ("question", "id", "answers", "is_impossible", "WH Question", "question quality", "wrong_answers")
ARTICLE_KEYS = ("title", "source")
UNREVIEWED = "unreviewed"
# The member of the paragraph JSONL export holding the file's questions (the import reads
# it as `questions`).
PARAGRAPH_QUESTIONS_EXPORTED = "existing_questions"
# Question ids of authored questions: UUIDs like HeQ's, stable for (project, annotation, index).
QUESTION_ID_NAMESPACE = uuid.UUID("6f1c44a4-5b8e-4a53-9a8e-3c0f2f5f0a11")


def hebrew_letters(text: str) -> int:
    """Letters of the Hebrew alphabet, final forms included (U+05D0-U+05EA); points and
    cantillation marks are not letters.

    >>> hebrew_letters("שָׁלוֹם Mobileye")
    4
    """
    return sum(1 for ch in text if "\u05d0" <= ch <= "\u05ea")


def pool_paragraphs(text: str, title: str, rule: dict) -> list[tuple[int, str]]:
    """(line number, paragraph) of the paragraphs chosen from one article (HeQ §3.2): lines
    of `min_chars`..`max_chars` code points with at least `min_hebrew_letters` Hebrew
    letters, at most `per_article` of them (None: no bound), chosen at random with the title
    as seed and returned in article order. Paragraphs are kept exactly (only the line break,
    and a "\\r" before it, separate them).

    >>> [n for n, _ in pool_paragraphs("short\\n" + "א" * 600 + "\\n" + "ב" * 2000, "t", POOL_RULES["wikipedia"])]
    [2]
    """
    low, high, per_article = rule["min_chars"], rule.get("max_chars"), rule.get("per_article")
    candidates = []
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if (
            low <= len(line)
            and (high is None or len(line) <= high)
            and line.strip()
            and hebrew_letters(line) >= (rule.get("min_hebrew_letters") or 0)
        ):
            candidates.append((number, line))
    if per_article is not None and len(candidates) > per_article:
        seed = int.from_bytes(hashlib.sha256(title.encode()).digest()[:8], "big")
        candidates = sorted(random.Random(seed).sample(candidates, per_article))
    return candidates


def check_pool_rules(rules: Any) -> str | None:
    """Why `rules` is not a valid `pool_rules` setting, or None."""
    if not isinstance(rules, dict) or not rules:
        return "must be an object of rules by source"
    for source, rule in rules.items():
        if source != source.lower():
            return f"{source!r}: sources are written in lower case"
        if not isinstance(rule, dict) or set(rule) - set(POOL_RULE_KEYS) or "min_chars" not in rule:
            return f"{source!r}: a rule is an object with min_chars and optionally {', '.join(POOL_RULE_KEYS[1:])}"
        for key in POOL_RULE_KEYS:
            value = rule.get(key)
            if value is not None and (
                not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_CONTEXT_LENGTH
            ):
                return f"{source!r}: {key} must be an integer between 0 and {MAX_CONTEXT_LENGTH} or null"
        if rule.get("max_chars") is not None and rule["max_chars"] < rule["min_chars"]:
            return f"{source!r}: max_chars is below min_chars"
        if rule.get("per_article") == 0:
            return f"{source!r}: per_article must be at least 1 (or null)"
    return None


# --- import ---------------------------------------------------------------------------------


def _v10_to_v11(question: dict) -> dict | str:
    """A v1.0 question in the v1.1 convention, or why it cannot be read. v1.0's
    is_impossible "TRUE" means answerable (README of the HeQ sample, checked question by
    question against v1.1); an unanswerable one keeps its plausible span in `answers`."""
    flag = question.get("is_impossible")
    if flag not in ("TRUE", "FALSE"):
        return _('is_impossible must be "TRUE" or "FALSE" in a v1.0 file')
    converted = {
        key: value for key, value in question.items() if key not in ("is_impossible", "answers", "wrong_answers")
    }
    answers = question.get("answers", [])
    if flag == "TRUE":
        converted.update(answers=answers, is_impossible=False, wrong_answers=[])
    else:
        converted.update(answers=[], is_impossible=True, wrong_answers=answers)
    return {key: converted[key] for key in (*QUESTION_KEYS, *converted) if key in converted}


def detect_squad_release(doc: dict) -> str:
    """ "v1.0" or "v1.1": HeQ's two conventions for `is_impossible`, told apart by its type
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
        raise InvalidInput(_('is_impossible must be a boolean (v1.1) or "TRUE"/"FALSE" (v1.0)'), field="file")
    if len(kinds) > 1:
        raise InvalidInput(_("the file mixes v1.0 (string) and v1.1 (boolean) is_impossible values"), field="file")
    found = kinds.pop() if kinds else None
    declared = doc.get("version")
    if found is None:
        return "v1.0" if declared == "v1.0" else "v1.1"
    if declared in ("v1.0", "v1.1") and declared != found:
        raise InvalidInput(
            _("the file says version %(declared)s but its is_impossible values are those of %(found)s")
            % {"declared": declared, "found": found},
            field="file",
        )
    return found


def read_squad(text: str) -> Iterator[tuple[int, dict]]:
    """(row, record) per paragraph of a SQuAD v2 / HeQ file; rows count paragraphs from 1."""
    try:
        doc = safe_json.loads(text)
    except safe_json.UnsafeJSON as exc:
        raise InvalidInput(str(exc), field="file") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
        raise InvalidInput(_('a SQuAD file is an object with a "data" list of articles'), field="file")
    release = detect_squad_release(doc)
    row = 0
    paragraphs_of_title: Counter = Counter()
    for article_index, article in enumerate(doc["data"]):
        if not isinstance(article, dict) or not isinstance(article.get("paragraphs"), list):
            row += 1
            yield (
                row,
                {"_error": _("(article %(n)s) must be an object with a paragraphs list") % {"n": article_index + 1}},
            )
            continue
        title = article.get("title")
        article_extra = {k: v for k, v in article.items() if k not in ("title", "source", "paragraphs")}
        for paragraph in article["paragraphs"]:
            row += 1
            if not isinstance(paragraph, dict):
                yield row, {"_error": _("must be an object with context and qas")}
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
                "article_index": article_index,
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


def read_articles(text: FileText, rules: dict, default_source: str) -> Iterator[tuple[int, dict]]:
    """The pool builder: JSONL of whole articles → (row, record) per chosen paragraph, rows
    numbered by the article's line in the file; the rule is the one of the article's source
    in `rules` (`default_source` when it names none)."""
    for number, article, error, member in read_jsonl_objects(text):
        if error:
            yield number, {"_error": error, "_field": member}
            continue
        if (
            not isinstance(article, dict)
            or not isinstance(article.get("title"), str)
            or not isinstance(article.get("text"), str)
        ):
            yield number, {"_error": _('must be an object with string "title" and "text"')}
            continue
        source = article.get("source")
        if source is not None and not isinstance(source, str):
            yield number, {"_error": _("must be a string"), "_field": "source"}
            continue
        rule = rules.get((source or default_source).lower())
        if rule is None:
            yield (
                number,
                {
                    "_error": _("has no paragraph pool rule (the project has rules for: %(sources)s)")
                    % {"sources": join_list(sorted(rules))},
                    "_field": "source",
                },
            )
            continue
        for line_number, paragraph in pool_paragraphs(article["text"], article["title"], rule):
            record = {"id": f"{article['title']}#{line_number}", "title": article["title"], "context": paragraph}
            if "source" in article:
                record["source"] = article["source"]
            yield number, record


def _check_span(span: Any, context: str, path: str, problems: RowProblems) -> None:
    if not isinstance(span, dict):
        problems.add(path, _('must be an object {"text", "answer_start"}'))
        return
    text, start = span.get("text"), span.get("answer_start")
    if not isinstance(text, str) or not text:
        problems.add(f"{path}.text", _("must be a non-empty string"))
    elif not isinstance(start, int) or isinstance(start, bool):
        problems.add(f"{path}.answer_start", _("must be an integer (a code-point offset into the context)"))
    elif not span_matches(context, start, text):
        problems.add(
            f"{path}.answer_start",
            _("the text is not the context's slice at %(start)s (code points)") % {"start": start},
        )


def check_existing_question(question: Any, context: str, path: str, problems: RowProblems, seen: set) -> None:
    """A question already in the file, in the v1.1 convention."""
    if not isinstance(question, dict):
        problems.add(path, _("must be an object"))
        return
    if "_error" in question:
        problems.add(f"{path}.is_impossible", question["_error"])
        return
    qid = question.get("id")
    if not isinstance(qid, str) or not qid:
        problems.add(f"{path}.id", _("must be a non-empty string"))
    elif fault := bidi_control(qid):
        problems.add(f"{path}.id", fault_text(fault))
    elif len(qid) > MAX_QUESTION_ID_LENGTH:
        problems.add(f"{path}.id", _("is longer than %(n)s characters") % {"n": MAX_QUESTION_ID_LENGTH})
    elif qid in seen:
        problems.add(f"{path}.id", _("duplicate question id “%(id)s”") % {"id": qid})
    else:
        seen.add(qid)
    text = question.get("question")
    if not isinstance(text, str) or not text.strip():
        problems.add(f"{path}.question", _("must be a non-empty string"))
    impossible = question.get("is_impossible", False)
    if not isinstance(impossible, bool):
        problems.add(f"{path}.is_impossible", _("must be a boolean"))
    answers = question.get("answers", [])
    if not isinstance(answers, list):
        problems.add(f"{path}.answers", _("must be a list"))
        answers = []
    for index, answer in enumerate(answers):
        _check_span(answer, context, f"{path}.answers[{index}]", problems)
    if impossible is False and not answers:
        problems.add(f"{path}.answers", _("an answerable question needs at least one answer"))
    if impossible is True and answers:
        problems.add(
            f"{path}.answers", _("an unanswerable question has no answers (put a plausible span in wrong_answers)")
        )
    wrong = question.get("wrong_answers", [])
    if not isinstance(wrong, list):
        problems.add(f"{path}.wrong_answers", _("must be a list"))
    else:
        for index, answer in enumerate(wrong):
            _check_span(answer, context, f"{path}.wrong_answers[{index}]", problems)
    for label in ("question quality", "WH Question"):
        value = question.get(label)
        if value is not None and not isinstance(value, str):
            problems.add(f"{path}.{label}", _("must be a string"))
        elif value is not None and (fault := bidi_control(value)):
            problems.add(f"{path}.{label}", fault_text(fault))


def ordered_question(question: dict) -> dict:
    """A stored question with HeQ's key order (jsonb sorts keys), answers as text + start."""
    ordered = {key: question[key] for key in QUESTION_KEYS if key in question}
    ordered.update({key: value for key, value in question.items() if key not in ordered})
    for name in ("answers", "wrong_answers"):
        if isinstance(ordered.get(name), list):
            ordered[name] = [
                {
                    "text": a.get("text"),
                    "answer_start": a.get("answer_start"),
                    **{k: v for k, v in a.items() if k not in ("text", "answer_start")},
                }
                if isinstance(a, dict)
                else a
                for a in ordered[name]
            ]
    return ordered


class ArticleSplits(ExportSplits):
    """The paragraphs' computed splits (`project_article_splits`) for the paragraph JSONL and
    CSV exports: what they write in `split` and what `?split=` selects, as the SQuAD and
    per-question exports do. Two queries, when the export is prepared."""

    def __init__(self, project):
        self.article_splits = project_article_splits(project, get_kind(project.kind).settings_for(project.settings))

    def of(self, item) -> str:
        return item_split(item, self.article_splits)

    def filter(self, items, split: str):
        from django.db.models import Q

        def of_articles(keys: list[str]) -> Q:
            return Q(group__in=keys) | Q(group="", external_id__in=keys)

        # A paragraph keeps the split its file gave; the others take their article's, and an
        # article without questions yet is in train (item_split).
        if split == "train":
            elsewhere = [key for key, name in self.article_splits.items() if name != split]
            return items.filter(Q(split=split) | (Q(split="") & ~of_articles(elsewhere)))
        here = [key for key, name in self.article_splits.items() if name == split]
        return items.filter(Q(split=split) | (Q(split="") & of_articles(here)))


def authored_question_id(project_slug: str, annotation_id: int, index: int) -> str:
    return str(uuid.uuid5(QUESTION_ID_NAMESPACE, f"{project_slug}:{annotation_id}:{index}"))


def export_questions(project, *, split: str | None = None, include_rejected: bool = False) -> Iterator[dict]:
    """Every exported paragraph of `project` in source order, as
    `{"item", "split", "title", "source", "article_index", "paragraph": {...v1.1 paragraph...}, "authors": {question id: pseudonym}}`.

    Questions: those of the imported file (kept as they were, with the validators' distinct
    spans appended to an answerable question's `answers`; `question quality` stays the
    file's: reviewers grade authored questions only), then the authored ones: id a UUID stable for (project, annotation, index),
    answers = the author's span then the validators' distinct spans (HeQ §3.3 "augmented by
    creating several correct answer spans"), `question quality` = the grade or
    "unreviewed". Rejected questions (grade, or imported quality "rejected") are left out
    unless `include_rejected`. A paragraph without questions is exported with none (it
    imports back as the same item). Removed items are never exported. Four queries per 500 items, and two for the splits."""
    from annotation.models import Annotation, Item, QuestionValidation, Review
    from annotation.selectors.names import annotator_pseudonym

    settings = get_kind(project.kind).settings_for(project.settings)
    items = Item.objects.filter(project=project).exclude(status=Item.Status.REMOVED).order_by("position", "id")
    article_splits = project_article_splits(project, settings)
    pseudonyms: dict[int, str] = {}

    def pseudonym(user_id):
        if user_id not in pseudonyms:
            pseudonyms[user_id] = annotator_pseudonym(project.pk, user_id)
        return pseudonyms[user_id]

    chunk: list = []
    for item in items.iterator(chunk_size=500):
        chunk.append(item)
        if len(chunk) == 500:
            yield from _export_chunk(
                project,
                chunk,
                article_splits,
                split,
                include_rejected,
                pseudonym,
                Annotation,
                Review,
                QuestionValidation,
            )
            chunk = []
    if chunk:
        yield from _export_chunk(
            project, chunk, article_splits, split, include_rejected, pseudonym, Annotation, Review, QuestionValidation
        )


def _export_chunk(
    project, chunk, article_splits, split, include_rejected, pseudonym, Annotation, Review, QuestionValidation
):
    wanted = [(item, item_split(item, article_splits)) for item in chunk]
    if split:
        wanted = [(item, s) for item, s in wanted if s == split]
    ids = [item.pk for item, _s in wanted]
    annotations = defaultdict(list)
    for row in (
        Annotation.objects.filter(item_id__in=ids).order_by("id").values("id", "item_id", "annotator_id", "value")
    ):
        annotations[row["item_id"]].append(row)
    annotation_ids = [row["id"] for rows in annotations.values() for row in rows]
    grades = {
        (a, q): g
        for a, q, g in Review.objects.filter(annotation_id__in=annotation_ids).values_list(
            "annotation_id", "question", "grade"
        )
    }
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
            ordered = ordered_question(question)
            # Validators' spans join an answerable question's answers (HeQ §3.3); a question
            # nobody validated is written exactly as it came in.
            extra = (
                imported_spans.get((item.pk, question.get("id")), ())
                if question.get("is_impossible") is not True
                else ()
            )
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
                qas.append(
                    {
                        "question": question.get("question", ""),
                        "id": qid,
                        "answers": answers,
                        "is_impossible": not question.get("answerable"),
                        "WH Question": overlap_metrics.wh_word(question.get("question", "")) or "",
                        "question quality": grade or UNREVIEWED,
                        "wrong_answers": [],
                    }
                )
        # A paragraph without questions is still an item of the project: SQuAD writes it
        # with `"qas": []`, and it imports back as a paragraph waiting for its questions.
        paragraph = {"context": payload.get("context", "")}
        paragraph.update(payload.get("paragraph_extra") or {})
        paragraph["qas"] = qas
        yield {
            "item": item,
            "split": item_split_name,
            "title": payload.get("title", ""),
            "source": payload.get("source"),
            "article_index": payload.get("article_index"),
            "article_extra": payload.get("article_extra") or {},
            "paragraph": paragraph,
            "authors": authors,
        }


def export_questions_stream(
    project, *, fmt: str, split: str | None = None, include_rejected: bool = False
) -> Iterator[bytes]:
    """`squad`: one SQuAD v2 JSON document in HeQ's v1.1 shape (articles — the imported
    file's, else one per title and source — in order of first appearance, then paragraphs,
    then qas), serialised like HeQ's files (`json.dumps(ensure_ascii=False)` and a final
    newline), so a v1.1 file imported and exported unchanged comes back byte for byte. The articles are gathered in memory before
    the document is written (a JSON document cannot be closed article by article when an
    article's paragraphs are not adjacent). `jsonl`: one question a line, streamed."""
    if fmt not in ("squad", "jsonl"):
        raise InvalidInput(_("must be one of %(choices)s") % {"choices": "squad, jsonl"}, field="format")
    if split is not None and split != "" and split not in SPLITS:
        raise InvalidInput(_("must be one of %(choices)s") % {"choices": join_list(SPLITS)}, field="split")
    paragraphs = export_questions(project, split=split or None, include_rejected=include_rejected)
    if fmt == "jsonl":
        return _questions_jsonl(paragraphs)
    return _squad_document(paragraphs)


def _squad_document(paragraphs: Iterable[dict]) -> Iterator[bytes]:
    articles: dict[tuple, dict] = {}
    for entry in paragraphs:
        key = (entry["title"], entry["source"], entry["article_index"])
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


def columnar_answers(answers: list) -> dict:
    """A question's answers in squad_v2's shape, as the Hugging Face `datasets` library
    loads SQuAD: one list of texts and one of start offsets (code points), aligned.

    >>> columnar_answers([{"text": "אב", "answer_start": 3}, {"text": "ב", "answer_start": 4}])
    {'text': ['אב', 'ב'], 'answer_start': [3, 4]}
    """
    spans = [answer for answer in answers if isinstance(answer, dict)]
    return {"text": [span.get("text") for span in spans], "answer_start": [span.get("answer_start") for span in spans]}


def spans_of(columns) -> list | None:
    """squad_v2's `{"text": [...], "answer_start": [...]}` as a list of spans, or None when
    `columns` is not in that shape.

    >>> spans_of({"text": ["אב"], "answer_start": [3]})
    [{'text': 'אב', 'answer_start': 3}]
    """
    if not isinstance(columns, dict) or set(columns) != {"text", "answer_start"}:
        return None
    texts, starts = columns["text"], columns["answer_start"]
    if not isinstance(texts, list) or not isinstance(starts, list) or len(texts) != len(starts):
        return None
    return [{"text": text, "answer_start": start} for text, start in zip(texts, starts)]


# The per-question JSONL's members that become a paragraph's, and those that become a question's.
PARAGRAPH_MEMBERS = ("title", "context", "split", "source", "article_index")
QUESTION_MEMBERS = {"question": "question", "id": "id", "is_impossible": "is_impossible",
                    "wh_question": "WH Question", "question_quality": "question quality"}  # fmt: skip


def read_questions(text: FileText) -> Iterator[tuple[int, dict]]:
    """The per-question JSONL export read back (import format `questions`): its lines
    grouped by `paragraph` into one record per paragraph, in the order paragraphs first
    appear, numbered by that line; answers in squad_v2's shape become spans again. A
    question's null members and empty `wrong_answers` are left out; the export's other
    members (origin, author) are not content. Every line of a paragraph must agree on
    the paragraph's members."""
    paragraphs: dict[str, tuple[int, dict]] = {}
    for number, line, error, member in read_jsonl_objects(text):
        if error is None and not isinstance(line, dict):
            error = "must be a JSON object"
        if error is None and (not isinstance(line.get("paragraph"), str) or not line["paragraph"]):
            error, member = "must name the question's paragraph (its id)", "paragraph"
        if error is not None:
            yield number, {"_error": error, "_field": member}
            continue
        question = {name: line[key] for key, name in QUESTION_MEMBERS.items() if line.get(key) is not None}
        # A paragraph's line with no question (`question` null, no id): the export's line
        # for a paragraph without questions.
        bare = line.get("question") is None and line.get("id") is None
        for name in () if bare else ("answers", "wrong_answers"):
            spans = spans_of(line.get(name, {"text": [], "answer_start": []}))
            if spans is None:
                yield number, {"_error": _('must be {"text": [...], "answer_start": [...]} (squad_v2)'), "_field": name}
                break
            if spans or name == "answers":
                question[name] = spans
        else:
            key = line["paragraph"]
            fields = {name: line.get(name) for name in PARAGRAPH_MEMBERS if line.get(name) is not None}
            if key not in paragraphs:
                paragraphs[key] = (number, {"id": key, **fields, "questions": []})
            elif {name: paragraphs[key][1].get(name) for name in fields} != fields:
                yield (
                    number,
                    {
                        "_error": _("differs from the first line of paragraph “%(key)s”") % {"key": key},
                        "_field": "context",
                    },
                )
                continue
            if not bare:
                paragraphs[key][1]["questions"].append(question)
    yield from paragraphs.values()


def _questions_jsonl(paragraphs: Iterable[dict]) -> Iterator[bytes]:
    for entry in paragraphs:
        paragraph = entry["paragraph"]
        lines = []
        # A paragraph without questions is one line with no question (`question` null),
        # so that it imports back.
        for question in paragraph["qas"] or [None]:
            if question is None:
                record = {
                    "id": None, "title": entry["title"], "paragraph": entry["item"].external_id,
                    "context": paragraph["context"], "question": None, "split": entry["split"],
                    "source": entry["source"], "article_index": entry["article_index"],
                }  # fmt: skip
                lines.append(_jsonl_line(record))
                continue
            record = {
                "id": question.get("id"),
                "title": entry["title"],
                "paragraph": entry["item"].external_id,
                "context": paragraph["context"],
                "question": question.get("question"),
                "answers": columnar_answers(question.get("answers", [])),
                "is_impossible": question.get("is_impossible"),
                "wrong_answers": columnar_answers(question.get("wrong_answers", [])),
                "question_quality": question.get("question quality"),
                "wh_question": question.get("WH Question"),
                "split": entry["split"],
                "source": entry["source"],
                "article_index": entry["article_index"],
                "origin": "authored" if question.get("id") in entry["authors"] else "imported",
                "author": entry["authors"].get(question.get("id")),
            }
            lines.append(_jsonl_line(record))
        yield "".join(lines).encode("utf-8")


def _jsonl_line(record: dict) -> str:
    line = json.dumps(record, ensure_ascii=False)
    # U+2028/U+2029/U+0085 escaped so that line-splitting readers keep one record a line.
    return line.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").replace("\x85", "\\u0085") + "\n"
