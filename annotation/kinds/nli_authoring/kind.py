"""`nli_authoring`: write three NLI pairs from one multiple-choice question (FarsTail §3.1).

Import rows (JSONL, or CSV whose `choices` column holds a JSON list):
`id, question, choices: [str], answer_index, group?, split?`. At least two choices, every
choice a non-empty string, `answer_index` an integer (a string of digits in CSV) that
indexes `choices`. The id is limited to 120 characters because it is carried into the
group and external ids of the generated items (see below).

The author sees the question, its choices and which one is correct, and submits
`{"premise", "entailment", "contradiction", "neutral"}`: the premise found on the web, the
entailment hypothesis (question + correct answer), the contradiction hypothesis (question +
a wrong answer, similar length to the entailment one but other words) and the neutral
hypothesis (a related sentence whose status the premise leaves open). Each is a non-empty
string kept exactly as typed (never trimmed or normalised, docs/text.md "Storing text"); NUL and lone
surrogates are refused and every error names its field (`value.premise`, ...).
Optional `premise_source` and `neutral_source`: the web pages the premise and the neutral
hypothesis were found on (steps 2 and 4), absolute http(s) URLs (Django's URLValidator);
stored only when given, and carried to the generated items' `extra`. The similar-length
rule of steps 3-4 (every hypothesis within LENGTH_RATIO of the others, in code points)
and the "do not copy the entailment" rule of step 3 are warnings, not errors: the submit
response lists them (`value_warnings`) and the page shows them as the author types.

Settings:
- `relabel_project` (default ""): slug of the `nli_relabel` project that receives the
  generated items. It may be left empty when the project is created (the relabel project
  may not exist yet) but must be set before anyone submits; when set it must name an
  `nli_relabel` project that the user setting it supervises (or any, for an admin): a
  missing project, one they do not supervise and one of another kind get the same 400.
  At every submit the link is checked again: the user who made it (the project's creator)
  must still be an admin or a supervisor of the target, else a 409 and nothing is stored.
  So the target's supervisors revoke a link by taking that role away, and nothing done on
  the authoring side alone (adding the target's supervisors to it) makes a link hold.
- `authors_per_question` (default 1): how many authors write pairs for each question
  (the kind's votes needed).

On submit (`after_submit`, inside the submit transaction) three items are created in the
linked project, one per label, each with `author` = the submitting user (the assignment
engine then never gives it to them), `reference_label` = the intended label (it counts as
one of the k-of-n votes), `payload` `{premise, hypothesis}`, `group`
`"<authoring slug>:<question id>"` (all pairs of one question share a group, hence a split
and never two in a row for a relabeler), external id `"<question id>-<annotation id>-e|c|n"`,
the question's split, and positions after the project's current last one.

Authors see their failed items on the relabel project's revision page
(`/p/<relabel slug>/revisions/`) and `GET /api/projects/{slug}/revisions/`, as members of
the relabel project or of an authoring project whose link into it holds; an author
disqualified in either is refused (`annotation.kinds.nli.authors.access_project_for_author`)."""

from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from annotation.errors import FieldError, InvalidInput, NotFound
from annotation.kinds.base import Kind
from annotation.kinds.settings import between
from annotation.metrics.text import forbidden_character
from annotation.rows import ItemRow, RowProblems, require_text
from annotation.wording import fault_text, join_list

from .guide import AUTHORING_GUIDE

VALUE_FIELDS = ("premise", "entailment", "contradiction", "neutral")
# Optional: where on the web the premise and the neutral hypothesis were found.
SOURCE_FIELDS = ("premise_source", "neutral_source")
# "Similar length" (FarsTail §3.1 steps 3-4, which give no figure): a hypothesis more than
# this many times longer or shorter than another draws a warning. static/nli_authoring/
# annotate.js applies the same figure live.
LENGTH_RATIO = 2
_WEB_URL = URLValidator(schemes=["http", "https"])
MAX_ID_LENGTH = 120
MAX_CHOICES = 26
MAX_TEXT_LENGTH = 20_000


class NliAuthoringKind(Kind):
    name = "nli_authoring"
    title = _("NLI authoring from multiple-choice questions")
    short_title = _("NLI authoring")
    template = "nli_authoring/annotate.html"
    default_settings = {"relabel_project": "", "authors_per_question": 1}
    settings_help = {
        "relabel_project": _(
            "Address name of the NLI relabeling project (one you supervise) that receives the authored pairs."
        ),
        "authors_per_question": _("Authors who write pairs from each question."),
    }
    settings_labels = {"relabel_project": _("Relabeling project"), "authors_per_question": _("Authors per question")}
    round_bound_settings = {
        "authors_per_question": _("questions being authored would need a different number of authors")
    }

    csv_json_fields = ("choices",)
    # A submit creates three relabel items from the value: changing it afterwards would leave
    # them describing another text.
    editable_annotations = False

    def guide_sections(self, settings: dict) -> tuple:
        return AUTHORING_GUIDE

    def check_settings(self, settings: dict) -> None:
        if not 1 <= settings["authors_per_question"] <= 20:
            raise InvalidInput(between(1, 20), field="settings.authors_per_question")

    def author_sources(self, user, project) -> dict:
        from .links import linked_author_memberships

        return linked_author_memberships(user, project)

    def authorize_settings(self, settings: dict, actor) -> None:
        from .links import access_relabel_target_for_linker

        if settings["relabel_project"]:
            try:
                access_relabel_target_for_linker(actor, settings["relabel_project"])
            except NotFound:
                # One answer for missing, not supervised and not nli_relabel: the answer
                # must not tell whether a slug exists.
                raise InvalidInput(
                    gettext("must be the slug of an nli_relabel project you supervise"),
                    field="settings.relabel_project",
                ) from None

    def parse_record(self, record: dict, row: int) -> tuple[ItemRow | None, list[FieldError]]:
        problems = RowProblems(row)
        common = self.common_fields(record, problems)
        if len(common["external_id"]) > MAX_ID_LENGTH:
            problems.add(
                "id",
                gettext("is longer than %(n)s characters (it is part of the generated items' ids)")
                % {"n": MAX_ID_LENGTH},
            )
        question = require_text(record, "question", problems)
        if question and not question.strip():
            problems.add("question", gettext("is blank"))
        choices = record.get("choices")
        if not isinstance(choices, list):
            problems.add("choices", gettext("must be a list of strings"))
            choices = None
        elif not 2 <= len(choices) <= MAX_CHOICES:
            problems.add("choices", gettext("must hold between 2 and %(n)s choices") % {"n": MAX_CHOICES})
        else:
            for index, choice in enumerate(choices):
                if not isinstance(choice, str) or not choice.strip():
                    problems.add(f"choices[{index}]", gettext("must be a non-empty string"))
                elif fault := forbidden_character(choice):
                    problems.add(f"choices[{index}]", fault_text(fault))
        answer_index = record.get("answer_index")
        if isinstance(answer_index, str) and answer_index.isascii() and answer_index.isdigit():
            answer_index = int(answer_index)  # CSV cells are text
        if answer_index is None or answer_index == "":
            problems.add("answer_index", gettext("is required"))
        elif not isinstance(answer_index, int) or isinstance(answer_index, bool):
            problems.add("answer_index", gettext("must be an integer"))
        elif choices is not None and not 0 <= answer_index < len(choices):
            problems.add(
                "answer_index",
                gettext("must be between 0 and %(last)s (the position of the answer among the choices, from 0)")
                % {"last": len(choices) - 1},
            )
        if problems.errors:
            return None, problems.errors
        payload = {"question": question, "choices": list(choices), "answer_index": answer_index}
        return ItemRow(payload=payload, position=row, **common), []

    def votes_for(self, settings: dict, *, with_reference: bool) -> int:
        return settings["authors_per_question"]

    def export_record(self, item, facts) -> dict:
        from .formats import authoring_export_record

        return authoring_export_record(item, facts)

    def export_csv_columns(self) -> tuple[str, ...]:
        from .formats import CSV_COLUMNS

        return CSV_COLUMNS

    def annotator_payload(self, item) -> dict:
        # The author must know the correct answer: the entailment hypothesis is built from it.
        return {
            "question": item.payload["question"],
            "choices": item.payload["choices"],
            "answer_index": item.payload["answer_index"],
        }

    def clean_value(self, value: Any, item) -> dict:
        if not isinstance(value, dict):
            raise InvalidInput(
                gettext(
                    'must be an object like {"premise": ..., "entailment": ..., "contradiction": ..., "neutral": ...}'
                ),
                field="value",
            )
        errors = []
        for key in sorted(set(value) - set(VALUE_FIELDS) - set(SOURCE_FIELDS), key=str):
            reason = forbidden_character(key)
            if reason:
                # Never echo a key that cannot be encoded back (a lone surrogate would 500).
                errors.append(FieldError("value", gettext("a key %(reason)s") % {"reason": fault_text(reason)}))
            else:
                errors.append(
                    FieldError(
                        f"value.{key}",
                        gettext("is not a field of nli_authoring; expected %(fields)s")
                        % {"fields": join_list(VALUE_FIELDS)},
                    )
                )
        for name in VALUE_FIELDS:
            text = value.get(name)
            field = f"value.{name}"
            if text is None:
                errors.append(FieldError(field, gettext("is required")))
            elif not isinstance(text, str):
                errors.append(FieldError(field, gettext("must be a string")))
            elif not text.strip():
                errors.append(FieldError(field, gettext("must not be empty")))
            elif fault := forbidden_character(text):
                errors.append(FieldError(field, fault_text(fault)))
            elif len(text) > MAX_TEXT_LENGTH:
                errors.append(FieldError(field, gettext("is longer than %(n)s characters") % {"n": MAX_TEXT_LENGTH}))
        sources = {}
        for name in SOURCE_FIELDS:
            url = value.get(name)
            if url is None or url == "":
                continue
            try:
                if not isinstance(url, str):
                    raise ValidationError("not a string")
                _WEB_URL(url)
            except ValidationError:
                errors.append(
                    FieldError(f"value.{name}", gettext("must be a web address starting with http:// or https://"))
                )
            else:
                sources[name] = url
        if errors:
            raise InvalidInput(gettext("invalid value"), errors=errors)
        # Exactly as typed: no trimming, no normalisation.
        return {**{name: value[name] for name in VALUE_FIELDS}, **sources}

    def value_warnings(self, value: dict) -> list[dict]:
        """FarsTail §3.1 steps 3-4 on a cleaned value: the contradiction and the neutral
        hypothesis each about as long as the hypotheses before them (within LENGTH_RATIO,
        code points of the text without surrounding spaces), and the contradiction not a
        copy of the entailment (one containing the other).

        >>> NliAuthoringKind().value_warnings({"entailment": "abcd", "contradiction": "xyzw", "neutral": "n"})
        [{'field': 'value.neutral', 'code': 'length', 'message': 'is much shorter or longer than the entailment hypothesis; FarsTail asks for a similar length'}]
        """
        entailment, contradiction, neutral = (
            value[name].strip() for name in ("entailment", "contradiction", "neutral")
        )
        warnings = []
        for name, text, others in (
            ("contradiction", contradiction, (("entailment", entailment),)),
            ("neutral", neutral, (("entailment", entailment), ("contradiction", contradiction))),
        ):
            unlike = next((other for other, against in others if _lengths_differ(text, against)), None)
            if unlike is not None:
                warnings.append({
                    "field": f"value.{name}", "code": "length",
                    "message": gettext(
                        "is much shorter or longer than the %(other)s hypothesis; FarsTail asks for a similar length"
                    ) % {"other": gettext(unlike)},
                })  # fmt: skip
        if entailment and contradiction and (entailment in contradiction or contradiction in entailment):
            warnings.append({
                "field": "value.contradiction", "code": "copy",
                "message": gettext("copies the entailment hypothesis; use other structure and words"),
            })  # fmt: skip
        return warnings

    def supervisor_notices(self, project) -> list[str]:
        from .pairs import relabel_link_problem

        problem = relabel_link_problem(project, self.project_settings(project))
        return [_("Authors' submissions are refused: %(reason)s.") % {"reason": problem}] if problem else []

    def after_submit(self, annotation, item, settings: dict) -> None:
        """Create the three `nli_relabel` items of this annotation (see pairs.py); a refusal
        there rolls the whole submit back."""
        from .pairs import pairs_create_for_annotation

        pairs_create_for_annotation(annotation, item, settings)


def _lengths_differ(text: str, other: str) -> bool:
    if not text or not other:
        return False
    ratio = len(text) / len(other)
    return ratio < 1 / LENGTH_RATIO or ratio > LENGTH_RATIO
