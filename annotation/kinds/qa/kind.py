"""`qa_authoring`: HeQ's question authoring (HeQ §3; docs/kinds.md "The kinds"; docs/api.md).

An item is one paragraph. The annotator writes `min_questions`..`max_questions` questions
about it (HeQ: 3-5), each answerable with a span of the paragraph or unanswerable (the value
is described in questions.py). Trial and untrusted members' paragraphs go to review, and the
dev/test questions to blind validation (reviews.py, validation.py).

Settings (HeQ's numbers as defaults): `min_questions` 3, `max_questions` 5; `review_rate`
0.2 (share of a trusted member's paragraphs sent to review; trial and untrusted members are
always reviewed, HeQ §3.3 "Crowdsource Monitoring"; the draw is keyed by the project's
secret and `review_seed`, so the server can replay it and members cannot predict it); `validators_per_question` 2 (HeQ §3.3:
several correct spans for dev/test); `validate_splits` ["dev", "test"]; `authors_per_paragraph`
1; `split_seed`, `dev_share` 0.05 and `test_share` 0.05 (90/5/5 of the questions, each article
whole in one split, HeQ §3.3: questions.project_article_splits);
`overlap_warning` 0.5 (the page warns above this question-paragraph word overlap);
`pool_rules` (the `articles` pool builder's bounds per source, HeQ §3.2: formats.POOL_RULES)
and `pool_default_source` "wikipedia" (the rule of an article without a source).

Formats are in formats.py, the value in questions.py, the report's figures in quality.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from annotation.errors import FieldError, InvalidInput
from annotation.kinds.base import Kind, ProjectLink, ReleaseFile, release_texts_of
from annotation.kinds.settings import SEED_RANGE, between, check_range
from annotation.metrics.text import bidi_control
from annotation.rows import ItemRow, RowProblems, require_text
from annotation.upload_text import FileText, whole_text
from annotation.wording import fault_text, join_list

from .formats import (
    MAX_CONTEXT_LENGTH,
    PARAGRAPH_QUESTIONS_EXPORTED,
    POOL_RULES,
    check_existing_question,
    check_pool_rules,
    export_questions_stream,
    ordered_question,
    read_articles,
    read_questions,
    read_squad,
)
from .guide import QA_GUIDE
from .quality import quality_counts, quality_report_for_project, quality_sections_from_counts
from .questions import SPLITS, clean_questions, questions_of


class QaAuthoringKind(Kind):
    name = "qa_authoring"
    hub_task_category = "question-answering"
    title = _("Question authoring with answer spans (HeQ)")
    short_title = _("Question authoring")

    # What report_sections adds to the project's report, for the API's schema.
    report_keys = {
        "questions": "question counts (authored, imported, answerable, graded, rejected)",
        "grades_per_annotator": "mean grade per annotator per day",
        "question_overlap": "question-paragraph word overlap histogram",
        "answer_positions": "answer start position histogram (HeQ App. C)",
        "wh_words": "question-word counts and diversity",
        "review_backlog": "annotations and questions waiting for review",
        "span_agreement": "EM, F1, TLNLS of validators against the gold answers",
        "validation": "validation progress of dev/test questions",
        "review_coverage": "share of authored questions reviewed and share of reviewed ones rejected (HeQ 3.4)",
        "final_audit": "the audit sample's shares of correct questions and spans with Wilson intervals, per source (HeQ 3.4)",
    }
    template = "qa/annotate.html"
    extra_formats = ("squad", "articles", "questions")
    # The paragraph CSV carries the questions and their answers as JSON cells, the file's
    # and the authored ones, so a spreadsheet reader sees them and the import reads them back.
    csv_json_fields = (
        PARAGRAPH_QUESTIONS_EXPORTED, "questions", "authored", "article_index", "paragraph_extra", "article_extra",
    )  # fmt: skip
    format_titles = {
        "articles": _("whole articles (the paragraph pool)"),
        "questions": _("questions, one a line (the per-question export)"),
    }
    # HeQ §3.3: "randomly split into train (90%), development (5%), and test (5%) sets, with
    # the constraint that questions related to a specific article were assigned to the same set".
    release_split_shares = {"train": 0.9, "dev": 0.05, "test": 0.05}
    default_settings = {
        "min_questions": 3,
        "max_questions": 5,
        "review_rate": 0.2,
        "review_seed": 13,
        "validators_per_question": 2,
        "validate_splits": ["dev", "test"],
        "authors_per_paragraph": 1,
        "split_seed": 13,
        "dev_share": 0.05,
        "test_share": 0.05,
        "overlap_warning": 0.5,
        "pool_rules": POOL_RULES,
        "pool_default_source": "wikipedia",
    }
    # The qa page reads the question counts and the overlap warning (static/qa/annotate.js).
    member_settings = ("min_questions", "max_questions", "overlap_warning", "fold_letter_variants")
    supervisor_only_settings = ("review_seed", "split_seed")
    settings_help = {
        "min_questions": _("Fewest questions an author writes per paragraph (HeQ: 3)."),
        "max_questions": _("Most questions an author writes per paragraph (HeQ: 5)."),
        "review_rate": _("Share of a trusted author's work drawn for review (new authors are always reviewed)."),
        "review_seed": _("Seed of the review draw."),
        "validators_per_question": _("Extra answer spans collected per question on the validated splits."),
        "validate_splits": _("Splits whose questions get extra answer spans (HeQ: dev and test)."),
        "authors_per_paragraph": _("Authors who write questions on each paragraph."),
        "split_seed": _("Seed of the article-grouped split."),
        "dev_share": _("Share of questions in dev (HeQ: 5 %)."),
        "test_share": _("Share of questions in test (HeQ: 5 %)."),
        "overlap_warning": _("Question-paragraph word overlap above which the author is warned."),
        "pool_rules": _("Paragraph pool rules per source (HeQ §3.2: length, paragraphs per article)."),
        "pool_default_source": _("Source whose pool rules apply when a row names none."),
    }
    settings_labels = {
        "min_questions": _("Fewest questions per paragraph"),
        "max_questions": _("Most questions per paragraph"),
        "review_rate": _("Share of a trusted author's work reviewed"),
        "review_seed": _("Seed of the review draw"),
        "validators_per_question": _("Extra answers per question"),
        "validate_splits": _("Splits validated"),
        "authors_per_paragraph": _("Authors per paragraph"),
        "split_seed": _("Seed of the split"),
        "dev_share": _("Share in dev"),
        "test_share": _("Share in test"),
        "overlap_warning": _("Warn at word overlap"),
        "pool_rules": _("Paragraph pool rules"),
        "pool_default_source": _("Default source"),
        "pool_rules.min_chars": _("Fewest characters"),
        "pool_rules.max_chars": _("Most characters"),
        "pool_rules.min_hebrew_letters": _("Fewest Hebrew letters"),
        "pool_rules.per_article": _("Paragraphs per article"),
    }
    settings_units = {"min_questions": _("questions"), "max_questions": _("questions")}
    settings_choices = {"validate_splits": {"train": _("train"), "dev": _("dev"), "test": _("test")}}
    rare_settings = ("review_seed", "split_seed", "pool_rules", "pool_default_source", "overlap_warning")
    round_bound_settings = {
        "min_questions": _("questions already submitted were checked against the old bounds"),
        "max_questions": _("questions already submitted were checked against the old bounds"),
        "authors_per_paragraph": _("paragraphs being authored would need a different number of authors"),
    }

    urls = ("annotation.kinds.qa.urls",)

    def guide_sections(self, settings: dict) -> tuple:
        return QA_GUIDE

    def check_settings(self, settings: dict) -> None:
        if not 1 <= settings["min_questions"] <= settings["max_questions"] <= 20:
            raise InvalidInput(
                gettext("must be at least 1 and at most the most questions per paragraph, which is at most 20"),
                field="settings.min_questions",
            )
        for name in ("review_rate", "overlap_warning", "dev_share", "test_share"):
            if not 0.0 <= settings[name] <= 1.0:
                raise InvalidInput(between(0, 1), field=f"settings.{name}")
        if settings["dev_share"] + settings["test_share"] > 1.0:
            raise InvalidInput(gettext("together with the share in dev must be at most 1"), field="settings.test_share")
        if not 1 <= settings["validators_per_question"] <= 20:
            raise InvalidInput(between(1, 20), field="settings.validators_per_question")
        if not 1 <= settings["authors_per_paragraph"] <= 20:
            raise InvalidInput(between(1, 20), field="settings.authors_per_paragraph")
        if any(split not in SPLITS for split in settings["validate_splits"]):
            raise InvalidInput(
                gettext("must list splits among %(splits)s") % {"splits": join_list(SPLITS)},
                field="settings.validate_splits",
            )
        check_range(settings, "split_seed", *SEED_RANGE)
        check_range(settings, "review_seed", *SEED_RANGE)
        problem = check_pool_rules(settings["pool_rules"])
        if problem:
            raise InvalidInput(problem, field="settings.pool_rules")
        if settings["pool_default_source"] not in settings["pool_rules"]:
            raise InvalidInput(
                gettext("must name a source of the paragraph pool rules"), field="settings.pool_default_source"
            )

    # --- import ---

    def read_format_with_settings(
        self, fmt: str, text: FileText, filename: str, settings: dict
    ) -> Iterator[tuple[int, dict]]:
        if fmt == "squad":
            return read_squad(whole_text(text))  # one JSON document: read whole
        if fmt == "articles":
            return read_articles(text, settings["pool_rules"], settings["pool_default_source"])
        if fmt == "questions":
            return read_questions(text)
        return super().read_format(fmt, text, filename)

    def parse_record(self, record: dict, row: int) -> tuple[ItemRow | None, list[FieldError]]:
        problems = RowProblems(row)
        common = self.common_fields(record, problems)
        title = require_text(record, "title", problems, required=False, identifier=True)
        if "title" in record and record["title"] is not None and not isinstance(record["title"], str):
            problems.add("title", gettext("must be a string"))
        context = require_text(record, "context", problems)
        if context and not context.strip():
            problems.add("context", gettext("is blank"))
        if len(context) > MAX_CONTEXT_LENGTH:
            problems.add("context", gettext("is longer than %(n)s characters") % {"n": MAX_CONTEXT_LENGTH})
        source = record.get("source")
        if source is not None and not isinstance(source, str):
            problems.add("source", gettext("must be a string"))
        elif source is not None and (fault := bidi_control(source)):
            problems.add("source", fault_text(fault))
        # The paragraph export writes the file's questions as `existing_questions`.
        questions = record.get("questions", record.get(PARAGRAPH_QUESTIONS_EXPORTED)) or []
        if not isinstance(questions, list):
            problems.add("questions", gettext("must be a list"))
            questions = []
        seen: set = set()
        if context:
            for index, question in enumerate(questions):
                check_existing_question(question, context, f"questions[{index}]", problems, seen)
        for name in ("paragraph_extra", "article_extra"):
            if record.get(name) is not None and not isinstance(record[name], dict):
                problems.add(name, gettext("must be an object"))
        article_index = record.get("article_index")
        if article_index is not None and (
            not isinstance(article_index, int) or isinstance(article_index, bool) or article_index < 0
        ):
            problems.add("article_index", gettext("must be a non-negative integer"))
        if problems.errors:
            return None, problems.errors
        payload: dict = {"context": context, "title": title}
        if questions:
            payload["questions"] = questions
        if article_index is not None:
            payload["article_index"] = article_index
        for name in ("source", "paragraph_extra", "article_extra"):
            # An empty cell (a CSV's source) is no source.
            if record.get(name) not in (None, {}, ""):
                payload[name] = record[name]
        if not common["group"]:
            common["group"] = title
        return ItemRow(payload=payload, position=row, **common), []

    # --- annotating ---

    def votes_for(self, settings: dict, *, with_reference: bool) -> int:
        return settings["authors_per_paragraph"]

    def annotator_payload(self, item) -> dict:
        # Only the paragraph: not the questions already written on it (the author writes
        # their own) and never their answers.
        return {"context": item.payload["context"], "title": item.payload.get("title", "")}

    def clean_value(self, value: Any, item) -> dict:
        settings = self.settings_for(item.project.settings)
        return clean_questions(
            value,
            item.payload["context"],
            min_questions=settings["min_questions"],
            max_questions=settings["max_questions"],
        )

    def after_submit(self, annotation, item, settings: dict) -> None:
        """Route the paragraph to review: always for trial and untrusted members, for
        trusted ones a draw keyed by the project's secret with probability `review_rate`
        (HeQ §3.3: experienced annotators were randomly selected for feedback;
        reviews.review_sampled)."""
        from annotation.models import Membership

        from .reviews import review_key, review_sampled

        membership = (
            Membership.objects.select_related("user")
            .filter(project_id=item.project_id, user_id=annotation.annotator_id)
            .first()
        )
        if membership is None or membership.status != Membership.Status.ACTIVE or not membership.trusted:
            required = True
        else:
            key = review_key(item.project.slug, item.external_id, membership.user.get_username(), annotation.round)
            required = review_sampled(
                secret=item.project.draw_secret, seed=settings["review_seed"], key=key, rate=settings["review_rate"]
            )
        if required != annotation.review_required:
            annotation.review_required = required
            annotation.save(update_fields=["review_required"])

    # --- model evaluation ---

    def release_texts(self, payload: dict) -> dict[str, list[str]]:
        """The paragraph and its imported questions (authored ones are annotations)."""
        questions = [q.get("question") for q in payload.get("questions") or [] if isinstance(q, dict)]
        texts = {"title": [payload.get("title")], "context": [payload.get("context")], "question": questions}
        return release_texts_of(texts)

    def evaluation_scorer(self):
        from .evaluation import QaScorer

        return QaScorer(self)

    # --- report ---

    def report_sections(self, project) -> dict:
        """HeQ's quality signals (§3.3-3.4, appendix C): see quality.py."""
        return quality_report_for_project(project, self.project_settings(project))

    # Kept by the changed items on a large project (quality.py): submits and edits, reviews,
    # validations and answer corrections name their item, audits ask for a run.
    report_counted = True
    report_counts_version = "qa-1"

    def report_counts(self, project, item_ids: list[int]) -> dict[int, dict[str, dict[str, int]]]:
        return quality_counts(project, self.project_settings(project), item_ids)

    def report_sections_from_counts(self, project, counts: dict[str, dict[str, int]]) -> dict:
        return quality_sections_from_counts(project, self.project_settings(project), counts)

    def after_settings_change(self, project, before: dict, after: dict) -> None:
        """The report kept on a large project follows: an item's share of its counts
        follows the letter folding, so that change reads every item again; the other
        settings apply to the summed counts, so a run that reads no item computes it anew."""
        from annotation.services.aggregation import aggregation_request_on_commit

        folding = before.get("fold_letter_variants") != after.get("fold_letter_variants")
        aggregation_request_on_commit(project.pk, None if folding else [])

    # --- export ---

    # `squad` and per-question `jsonl` are written by `export_questions_stream` (served at
    # GET /api/projects/{slug}/questions/export/): a SQuAD document is not a table, so the
    # generic export (`?format=squad`) delegates to `export_stream` instead of its row writers.
    streamed_formats = ("squad",)
    export_pages = ((_("questions, one a line"), "api-question-export", "format=jsonl"),)

    def export_stream(self, spec) -> Iterator[bytes]:
        return export_questions_stream(spec.project, fmt=spec.fmt, split=spec.split)

    def release_files(self, project, split: str, items):
        """The split's questions one a line with squad_v2's answers (`{"text": [...],
        "answer_start": [...]}`), the shape question-answering trainers read: the Hub's
        `questions` config."""
        data = b"".join(export_questions_stream(project, fmt="jsonl", split=split))
        yield ReleaseFile(f"questions/{split}.jsonl", data, config="questions")

    def export_splits(self, project):
        from .formats import ArticleSplits

        return ArticleSplits(project)

    def export_record(self, item, facts) -> dict:
        """A paragraph for the generic JSONL/CSV export: its questions from the file and the
        authored ones as submitted (grades and extra answers are in the `squad` export);
        the split is the article's computed one (`export_splits`). The JSONL and CSV imports
        read it back to the same paragraph."""
        payload = item.payload
        return {
            "id": item.external_id,
            "title": payload.get("title", ""),
            "context": payload.get("context", ""),
            "source": payload.get("source"),
            "article_index": payload.get("article_index"),
            "paragraph_extra": payload.get("paragraph_extra") or {},
            "article_extra": payload.get("article_extra") or {},
            "group": item.group,
            "split": item.split,
            "status": item.status,
            PARAGRAPH_QUESTIONS_EXPORTED: [ordered_question(q) for q in payload.get("questions") or []],
            "authored": [
                {"annotator": annotator, "questions": questions_of(value)} for annotator, value in facts.annotations
            ],
            "annotators": [annotator for annotator, _value in facts.annotations],
        }

    def export_csv_columns(self) -> tuple[str, ...]:
        return (
            "id", "title", "context", "source", "article_index", "paragraph_extra", "article_extra", "group",
            "split", "status", PARAGRAPH_QUESTIONS_EXPORTED, "authored", "annotators",
        )  # fmt: skip

    # --- pages and review ------------------------------------------------------------

    reviewed_by_question = True

    def review_questions(self, value: dict) -> list[dict]:
        return questions_of(value)

    def review_questions_count(self):
        # questions_of in SQL: the objects of the value's "questions" list (none when it
        # is not a list).
        from django.db import connection
        from django.db.models import IntegerField
        from django.db.models.expressions import RawSQL

        value = '"annotation_annotation"."value"'
        if connection.vendor == "postgresql":
            sql = (
                f"(SELECT count(*) FROM jsonb_array_elements(CASE WHEN jsonb_typeof({value} -> 'questions') = 'array' "
                f"THEN {value} -> 'questions' ELSE '[]'::jsonb END) AS q WHERE jsonb_typeof(q) = 'object')"
            )
        else:
            sql = (
                f"(SELECT count(*) FROM json_each(CASE WHEN json_type({value}, '$.questions') = 'array' "
                f"THEN json_extract({value}, '$.questions') ELSE '[]' END) WHERE type = 'object')"
            )
        return RawSQL(sql, (), output_field=IntegerField())

    def review_payload(self, payload: dict) -> dict:
        # The paragraph alone: not the questions imported with it, nor their answers.
        return {"context": payload.get("context", ""), "title": payload.get("title", "")}

    def feedback_details(self, review) -> dict:
        from .pages import paragraph_parts

        questions = questions_of(review.annotation.value)
        if review.question is None or review.question >= len(questions):
            return {}
        question = questions[review.question]
        answerable = bool(question.get("answerable"))
        return {
            "question_text": question.get("question"),
            "answer": (question.get("answer") or {}).get("text") if answerable else None,
            "paragraph": paragraph_parts(review.annotation.item.payload.get("context"), question.get("answer")),
        }

    def project_links(self, project) -> list[ProjectLink]:
        return [
            ProjectLink("review-qa", _("Review questions")),
            ProjectLink("validate-qa", _("Validate answers")),
            ProjectLink("quality-qa", _("Question quality")),
            ProjectLink("question-audit-qa", _("Final audit"), supervisors_only=True),
        ]
