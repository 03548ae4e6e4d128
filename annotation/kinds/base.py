"""The shape every workflow kind has: a small required core, and capabilities with defaults
that fit most kinds, so that a kind overrides only what it has.

The required core (a kind implements `votes_for`, `annotator_payload`, `clean_value` and
`parse_record`, and names itself with `name`, `title` and `short_title`):

- KindSettings: the protocol numbers a project of the kind takes, with the papers' defaults
  (the shared settings and their checks are in settings.py);
- KindRules: what annotating means (the closed label set, if any; what an annotator sees,
  what a valid answer is, what a submit sets off);
- KindVoting: how many votes an item needs and how a round is decided.

Capabilities, each off or generic by default:

- KindFormats: the files the kind reads and writes (imports, exports);
- KindReports: the figures the kind computes (agreement, report sections);
- KindQuality: annotator quality and adjudication (probes' coherence, adjudicated exports);
- KindRelease: what the release stage needs (sentence pairs, split shares, model evaluation);
- KindWiring: the kind's own pages and API operations, jobs, project links, report keys,
  and how reviews grade its annotations; registry.py mounts and reads them.

The core never imports a particular kind; it asks the registry for one and calls these."""

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.utils import translation
from django.utils.translation import gettext

from annotation.errors import FieldError, InvalidInput
from annotation.rows import ItemRow, RowProblems, require_text
from annotation.upload_text import FileText
from annotation.wording import join_list

from .settings import (
    AGGREGATION_CHOICES,
    CLAIM_TTL_RANGE,
    COMMON_RARE_SETTINGS,
    COMMON_SETTINGS,
    COMMON_SETTINGS_HELP,
    COMMON_SETTINGS_LABELS,
    COMMON_SETTINGS_UNITS,
    IDLE_RELEASE_RANGE,
    OPTIONAL_SETTING_TYPES,
    ORDER_CHOICES,
    QUALITY_FLAG_RANGE,
    check_model_settings,
    check_range,
    language_defaults,
    type_wanted,
)


class KindSettings:
    default_settings: dict[str, Any] = {}
    # What each of `default_settings` means, in a sentence, for the console's forms.
    settings_help: dict[str, Any] = {}
    # The console's name of each of `default_settings` (the code where none is given), the
    # unit of a number, the choices of a setting that takes one value (or a list) of a few,
    # and the settings folded away as rarely changed.
    settings_labels: dict[str, Any] = {}
    settings_units: dict[str, Any] = {}
    settings_choices: dict[str, dict] = {}
    rare_settings: tuple[str, ...] = ()
    # Settings that running rounds depend on: name → why changing it would corrupt a round
    # that has annotations already (the 400 of `PATCH /api/projects/{slug}/` says it).
    round_bound_settings: dict[str, Any] = {}

    # Settings only supervisors and reviewers see (a released system's name would tell an
    # annotator which system a blind candidate may be).
    staff_only_settings: tuple[str, ...] = ()
    # Settings only supervisors (and admins) see: the seeds of the random draws.
    supervisor_only_settings: tuple[str, ...] = ()
    # The settings a member who is neither supervisor nor reviewer sees: what their pages
    # read (static/<kind>/annotate.js), never a seed, a rate or a blind system's name.
    member_settings: tuple[str, ...] = ("fold_letter_variants",)

    def settings_shown_to(self, settings: dict, role: str | None) -> dict:
        """The part of a project's `settings` its member in `role` may read: everything for
        "supervisor" (admins count as supervisors), all but `supervisor_only_settings` for
        "reviewer", `member_settings` for anyone else (annotators, disqualified members)."""
        if role == "supervisor":
            return dict(settings)
        if role == "reviewer":
            return {key: value for key, value in settings.items() if key not in self.supervisor_only_settings}
        return {key: value for key, value in settings.items() if key in self.member_settings}

    def settings_for(self, settings: dict | None, language: str | None = None) -> dict:
        """The project's settings with the papers' defaults filled in; pass the project's
        language where a language-dependent setting (`language_defaults`) is read, since
        settings stored before such a setting existed do not carry it."""
        return {**COMMON_SETTINGS, **language_defaults(language), **self.default_settings, **(settings or {})}

    def project_settings(self, project) -> dict:
        """`settings_for` a stored project, its language included."""
        return self.settings_for(project.settings, project.language)

    def clean_settings(self, settings: Any, language: str | None = None) -> dict:
        """Validated settings, defaults filled in for a project in `language`; unknown keys
        and wrong types are refused."""
        if settings is None:
            settings = {}
        if not isinstance(settings, dict):
            raise InvalidInput(gettext("must be an object"), field="settings")
        known = {**COMMON_SETTINGS, **self.default_settings}
        settings = dict(settings)
        errors = []
        for key, value in settings.items():
            if key not in known:
                errors.append(FieldError(f"settings.{key}", gettext("is not a setting of this kind of project")))
            elif key in OPTIONAL_SETTING_TYPES and known[key] is None:
                wanted = OPTIONAL_SETTING_TYPES[key]
                if value is None or type(value) is wanted:
                    continue
                if wanted is float and type(value) is int:
                    settings[key] = float(value)
                else:
                    empty_or = (
                        gettext("must be a whole number or empty")
                        if wanted is int
                        else gettext("must be a number or empty")
                    )
                    errors.append(FieldError(f"settings.{key}", empty_or))
            elif type(known[key]) is float and type(value) is int:
                # JSON has one number type: 1 and 1.0 are the same value to a client.
                settings[key] = float(value)
            elif type(value) is not type(known[key]):
                errors.append(FieldError(f"settings.{key}", type_wanted(type(known[key]))))
        if errors:
            raise InvalidInput(gettext("invalid settings"), errors=errors)
        merged = self.settings_for(settings, language)
        check_range(merged, "claim_ttl", *CLAIM_TTL_RANGE)
        check_range(merged, "idle_release_seconds", *IDLE_RELEASE_RANGE)
        check_range(merged, "quality_flag_below", *QUALITY_FLAG_RANGE)
        check_model_settings(merged)
        if merged.get("suggestions") and self.blind_to_suggestions(merged):
            raise InvalidInput(
                gettext("this project's protocol wants annotators blind to other answers: no suggestions"),
                field="settings.suggestions",
            )
        self.check_settings(merged)
        return {key: merged[key] for key in known}

    def check_settings(self, settings: dict) -> None:
        """Kind-specific cross-field checks; raise InvalidInput."""

    def blind_to_suggestions(self, settings: dict) -> bool:
        """Whether a project with these settings follows a protocol that wants annotators
        blind to other answers, a model's included (docs/protocols.md "Suggestions"): then
        `suggestions: true` is refused."""
        return False

    def settings_explained(self, language: str | None = None) -> list[dict]:
        """Every setting of the kind with its default for a project in `language` and what
        it means: `{"name", "default", "help"}`, common settings first."""
        defaults = self.settings_for({}, language)
        helps = {**COMMON_SETTINGS_HELP, **self.settings_help}
        labels = {**COMMON_SETTINGS_LABELS, **self.settings_labels}
        units = {**COMMON_SETTINGS_UNITS, **self.settings_units}
        choices = {"aggregation": AGGREGATION_CHOICES, "order": ORDER_CHOICES, **self.settings_choices}
        rare = (*COMMON_RARE_SETTINGS, *self.rare_settings)
        return [
            {
                "name": name,
                "default": defaults[name],
                "help": str(helps.get(name, "")),
                "label": str(labels.get(name, name)),
                "unit": str(units.get(name, "")),
                "choices": {value: str(text) for value, text in choices.get(name, {}).items()},
                "optional_type": OPTIONAL_SETTING_TYPES.get(name).__name__ if name in OPTIONAL_SETTING_TYPES else "",
                "rare": name in rare,
            }
            for name in {**COMMON_SETTINGS, **self.default_settings}
        ]

    def settings_change_errors(self, before: dict, after: dict, *, running: bool) -> list[FieldError]:
        """Why changing a project's settings from `before` to `after` (both cleaned) would
        corrupt its running rounds, one error per setting; `running` says whether any item
        has annotations in a round still open. The default refuses changes of
        `round_bound_settings` while rounds run and allows everything else."""
        if not running:
            return []
        return [
            FieldError(
                f"settings.{name}",
                gettext("cannot change while items have annotations in an open round: %(reason)s") % {"reason": reason},
            )
            for name, reason in self.round_bound_settings.items()
            if before.get(name) != after.get(name)
        ]

    def authorize_settings(self, settings: dict, actor) -> None:
        """Checks of cleaned settings that depend on who sets them (settings naming another
        project); raise InvalidInput. Every path that stores settings calls it."""

    def after_settings_change(self, project, before: dict, after: dict) -> None:
        """Called inside the transaction that stores a project's changed settings (both
        cleaned), for work that follows from a setting: figures computed from it are queued
        again (on commit). The default does nothing."""


class KindRules:
    """Annotating (required): what an annotator sees (`annotator_payload`) and what a valid
    answer is (`clean_value`), the labels and their guide, what a submit sets off."""

    # The annotate page's template.
    template: str = ""
    # The closed label set of a kind whose vote is one label (`{"label": one of them}`) and
    # whose gold is one of them, in the kind's order; () for the other kinds. One set serves
    # every stage: the labels an annotator chooses from and an adjudicator decides
    # (annotator quality, the adjudication queue), that every method of
    # annotation.metrics.aggregation aggregates (annotation.services.aggregation), and that
    # gold takes and a model predicts (bias analysis, model evaluation). Kinds with () get
    # none of these figures.
    labels: tuple[str, ...] = ()
    # Whether an item's imported label (`Item.reference_label`) is gold (an expert's or the
    # dataset's hidden answer) rather than an author's intended label: annotators are then
    # scored against it (annotator quality) and, where the kind's scorer says so, models
    # too (label_test's model evaluation scores against this hidden gold alone).
    reference_label_is_gold: bool = False

    def label_guide(self, language: str | None = None, settings: dict | None = None) -> tuple:
        """The meaning of each label and of each point of every scale the annotator uses
        (annotation.guides.GuideSection, in page order), worded from the kind's paper with
        the section cited, in the interface language `language` (None: the active one), for a
        project with `settings` (None: the defaults). Shown on every annotate page; a project
        may reword entries (`Project.label_guide`)."""
        from annotation.guides import guide_with_overrides

        if language is None:
            return tuple(guide_with_overrides(self.guide_sections(self.settings_for(settings)), None))
        with translation.override(language):
            return tuple(guide_with_overrides(self.guide_sections(self.settings_for(settings)), None))

    def guide_sections(self, settings: dict) -> tuple:
        """`label_guide`'s sections (lazy strings allowed) for a project's `settings`, the
        defaults filled in; kinds with labels or scales override this."""
        return ()

    def annotator_payload(self, item) -> dict:
        """What the annotator may see of an item: never gold, author labels or system names."""
        raise NotImplementedError

    def browser_text(self, payload: dict) -> str:
        """The text that stands for an item in the console's item list: by default the
        payload's first text field in its stored order, "" when it has none."""
        if isinstance(payload, dict):
            for value in payload.values():
                if isinstance(value, str) and value:
                    return value
        return ""

    def clean_value(self, value: Any, item) -> dict:
        """The submitted value, validated; raise InvalidInput naming the field."""
        raise NotImplementedError

    def annotator_value(self, value: dict, item) -> dict:
        """A stored value as its annotator may see it again (the submit answer): kinds that
        store more than the annotator saw (a blind order's key) give back what was sent."""
        return value

    def value_warnings(self, value: dict) -> list[dict]:
        """Advice on a cleaned value that does not stop it being stored (a protocol's soft
        rules), each `{"field", "code", "message"}`; the submit response lists them."""
        return []

    def after_submit(self, annotation, item, settings: dict) -> None:
        """Called inside the submit transaction, with the item locked, after the annotation
        is stored: kinds whose annotations create work elsewhere (authoring) do it here."""

    # Whether an annotator may change a submitted value while its round is open (PATCH
    # /api/annotations/{id}/); False where a submit created work elsewhere (authoring).
    editable_annotations: bool = True


class KindVoting:
    """Votes (required: `votes_for`): how many an item needs, adaptive overlap, and how a
    round is decided (the k-of-n consensus step or the kind's own rule)."""

    # Whether a complete round goes through the k-of-n consensus step.
    aggregates_by_consensus: bool = False

    def k_of_n_rule(self, settings: dict) -> tuple[int, int]:
        """The paper's k-of-n rule as (k, n), votes counted as `aggregates_by_consensus`
        says (the author's or original label one of them there)."""
        raise NotImplementedError

    def adaptive_overlap(self, settings: dict) -> bool:
        """Whether adaptive overlap is on: `overlap_min` is set."""
        return settings.get("overlap_min") is not None

    def adaptive_votes(self, item, settings: dict) -> int | None:
        """With adaptive overlap on (`overlap_min` set), the votes the item needs now: what
        the engine asked for so far (`Item.votes_target`), at first `overlap_min`; None when
        the feature is off. Kinds' `votes_needed` answer this first."""
        low = settings.get("overlap_min")
        if low is None:
            return None
        return item.votes_target or low

    def gold_statuses_from_aggregation(self, method: str) -> tuple[str, ...]:
        """The item statuses whose gold the aggregation job sets to `method`'s label when
        `method` is the project's choice (annotation.services.aggregation); () where the
        kind's own step owns the gold for that method, or its gold is given."""
        return ()

    def round_rule_decision(self, item, labels: list, settings: dict) -> tuple[str, Any] | None:
        """For a kind with `labels` and no consensus step: how its rule decides a round at
        the round's last vote, from the round's labels, as (method, value) — the value a
        label, or None for no gold (services.decisions records it). None: the kind's rounds
        end without a decision (no gold to decide)."""
        return None

    def status_after_round(self, *, accepted: bool, author_id: int | None, round_: int, settings: dict) -> str:
        """Where a decided round leaves an item: by default `complete` whatever the outcome
        (a failed round waits in the adjudication queue); consensus kinds add their
        revision loop."""
        return "complete"

    def wants_another_vote(self, item, settings: dict, submitted: int) -> bool:
        """With adaptive overlap on, called in the submit transaction (item locked) once the
        item holds the `submitted` votes it needed: whether to ask for one more rather than
        close the round. Never called with the feature off."""
        return False

    def votes_for(self, settings: dict, *, with_reference: bool) -> int:
        """Votes an ordinary item needs with adaptive overlap off, for an item with or
        without a reference label (an author's label counts as a vote in some protocols)."""
        raise NotImplementedError

    def votes_needed(self, item, settings: dict) -> int:
        """Votes `item` needs now: what adaptive overlap asked for, else `votes_for`."""
        adaptive = self.adaptive_votes(item, settings)
        if adaptive is not None:
            return adaptive
        return self.votes_for(settings, with_reference=bool(item.reference_label))

    def votes_needed_at_first(self, settings: dict, *, with_reference: bool) -> int:
        """Votes an ordinary item needs before adaptive overlap asked any item for more
        (`overlap_min` while it is on): what the claim query compares vote counts with."""
        low = settings.get("overlap_min")
        return low if low is not None else self.votes_for(settings, with_reference=with_reference)


class KindRelease:
    """What the release stage (near-duplicates, leak-free splits, bias analysis, model
    evaluation; FarsTail §3.2 and §4.3) needs to know of a kind."""

    # The shares of items a leak-free grouped split gives each split by default (FarsTail
    # §3.2: 70/15/15; HeQ §3.3: 90/5/5 by article), or None for kinds that are not split.
    release_split_shares: dict[str, float] | None = None
    # The Hugging Face Hub's task category of the kind's datasets, for a release's card.
    hub_task_category: str = "text-classification"

    # The payload's text fields a supervisor may edit on an accepted item, its label
    # standing (FarsTail §3.2's spelling cleanup; services/revisions.py); none by default.
    editable_text_fields: tuple[str, ...] = ()

    def pair_texts(self, payload: dict) -> tuple[str, str] | None:
        """The (premise, hypothesis) of a sentence-pair item, compared for near-duplicates
        and leaks and read by the bias analysis; None for kinds that hold no pair."""
        return None

    def duplicate_texts(self, payload: dict) -> tuple[str, str] | None:
        """The (premise, hypothesis) the near-duplicate search compares, or None: items of
        the kind are not searched. A pair's texts by default; a kind whose items hold a
        pair without being one (a translation of a sentence pair) names it here."""
        return self.pair_texts(payload)

    def model_texts(self, payload: dict) -> tuple[str, ...] | None:
        """The texts of an item the built-in model reads, one vectorizer each (docs/kinds.md
        "Model in the loop"), or None: the kind has no built-in model. A pair's texts by
        default."""
        return self.pair_texts(payload)

    def evaluation_scorer(self) -> "EvaluationScorer | None":
        """How a model's predictions on the project's gold are scored (model evaluation,
        annotation/release/evaluation.py), or None: the kind cannot be evaluated (a 400)."""
        return None

    def release_files(self, project, split: str, items) -> "Iterator[ReleaseFile]":
        """The dataset's files in its published shape for one split of a release, beside the
        JSONL, the Parquet and the export formats a release writes for every kind
        (`export_extra_formats`, `streamed_formats`). `items` are the split's released items
        in source order (a queryset); `split` is the split's name in the release."""
        return iter(())

    def release_texts(self, payload: dict) -> dict[str, list[str]]:
        """The texts of an item, by field, that a release card's statistics count tokens
        in (a field may hold several texts an item, such as candidate translations). The
        default: the payload's top-level text members."""
        if not isinstance(payload, dict):
            return {}
        return {field: [value] for field, value in payload.items() if isinstance(value, str) and value}


class EvaluationScorer:
    """A kind's part of model evaluation: whose gold, what a prediction is, which figures.
    annotation/release/evaluation.py reads the file, validates it against `gold`, and runs
    the bootstrap over `statistic` (annotation/metrics/evaluation.py)."""

    # The figure that answers "does model A beat model B" on the compare view.
    primary: str = "accuracy"
    # Whether a predictions file may be SQuAD's predictions dict {question id: answer text}.
    accepts_squad_dict: bool = False
    # The columns of a prediction row besides `id` (CSV header, JSONL keys).
    fields: tuple[str, ...] = ("prediction",)
    # The figures the leaderboard shows per model (dotted paths into the figures).
    columns: tuple[str, ...] = ("accuracy", "macro_f1")
    # Choices an evaluation request may make, {field: its values, the default first}.
    options: dict[str, tuple[str, ...]] = {}

    def configure(self, chosen: dict) -> "EvaluationScorer":
        """This scorer with an evaluation's cleaned `options` (see `clean_options`)."""
        self.chosen_options = dict(chosen)
        return self

    def chosen(self, option: str) -> str:
        """The value chosen for `option`, else its default."""
        return getattr(self, "chosen_options", {}).get(option) or self.options[option][0]

    def clean_options(self, given: dict) -> dict:
        """Every option with its value: the given ones checked (a 400 naming the field),
        the others at their default."""
        for field, value in given.items():
            if field not in self.options:
                raise InvalidInput(gettext("this kind's evaluations take no such choice"), field=field)
            if value not in self.options[field]:
                raise InvalidInput(
                    gettext("must be one of %(choices)s") % {"choices": join_list(self.options[field])}, field=field
                )
        return {field: given.get(field, values[0]) for field, values in self.options.items()}

    def gold(self, project, split: str | None) -> dict:
        """{key: gold} of every item scored in `split` (None: every split), in a stable
        order; the key is what a prediction row's `id` names (an item's external id, a
        question id)."""
        raise NotImplementedError

    def clean(self, record: dict, row: int) -> tuple[Any, list[FieldError]]:
        """The prediction a row carries, validated (its id is checked by the caller), or
        the errors naming row and field."""
        raise NotImplementedError

    def arrays(self, project, gold: dict, predictions: dict) -> dict:
        """Per-item numpy arrays, in `gold`'s order, from which `statistic` computes every
        figure (stored with the evaluation for paired comparisons)."""
        raise NotImplementedError

    def statistic(self, arrays: dict):
        """annotation.metrics.evaluation.Statistic over `arrays`."""
        raise NotImplementedError

    def extras(self, arrays: dict) -> dict:
        """Figures without an interval (confusion matrix, counts), as a nested tree merged
        into the figures."""
        return {}

    def slice_attributes(self, project, keys: list[str]) -> list[dict[str, str]]:
        """Each scored key's attributes an evaluation may be sliced by: `split`, `source`
        (the payload's, else its `extra`'s) and every field of the item's `extra`, as text.
        A key is an item's external id here; kinds whose keys are not override this."""
        from annotation.models import Item

        found = {}
        rows = Item.objects.filter(project=project, external_id__in=keys).values_list("external_id", "split", "payload")
        for external_id, split, payload in rows.iterator(chunk_size=2000):
            found[external_id] = {**item_slice_attributes(split, payload), **self.slice_more(payload)}
        return [found.get(key, {}) for key in keys]

    def slice_more(self, payload) -> dict[str, str]:
        """Attributes a kind computes from an item's payload to slice by (NLI: TTR bins)."""
        return {}


def item_slice_attributes(split: str, payload) -> dict[str, str]:
    """An item's `split`, `source` and `extra` fields as text, for slicing an evaluation.

    >>> item_slice_attributes("test", {"extra": {"hard(overlap)": "1", "n": 2}, "source": "wiki"})
    {'hard(overlap)': '1', 'n': '2', 'split': 'test', 'source': 'wiki'}
    """
    payload = payload if isinstance(payload, dict) else {}
    extra = payload.get("extra") if isinstance(payload.get("extra"), dict) else {}
    out = {str(key): value if isinstance(value, str) else json_text(value) for key, value in extra.items()}
    out["split"] = split or ""
    source = payload.get("source", extra.get("source"))
    if source is not None:
        out["source"] = source if isinstance(source, str) else json_text(source)
    return out


def json_text(value) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


class KindFormats:
    # Import formats besides the common `jsonl` and `csv`.
    extra_formats: tuple[str, ...] = ()
    # Fields of a CSV row that hold JSON (lists, objects) rather than text.
    csv_json_fields: tuple[str, ...] = ()
    # What an export gives by default: the items a data consumer would call finished.
    default_export_status: str = "complete"

    @property
    def formats(self) -> tuple[str, ...]:
        return ("jsonl", "csv", *self.extra_formats)

    # What the import form calls each of `extra_formats` whose code is not a file type's
    # name (the code where none is given).
    format_titles: dict[str, Any] = {}

    def format_choices(self) -> list[tuple[str, str]]:
        """(code, name) of every import format, for the import form."""
        return [(fmt, str(self.format_titles.get(fmt, fmt))) for fmt in self.formats]

    def read_format(self, fmt: str, text: FileText, filename: str) -> Iterator[tuple[int, dict]]:
        """(row number, record) pairs for a kind-specific format. `text` is the file's text
        whole or, from an import, an `UploadText` read line by line (`annotation.rows`'
        readers take either; `whole_text` gives a one-document format its text)."""
        raise InvalidInput(
            gettext("format “%(format)s” is not available for this kind of project") % {"format": fmt}, field="format"
        )

    def read_format_with_settings(
        self, fmt: str, text: FileText, filename: str, settings: dict
    ) -> Iterator[tuple[int, dict]]:
        """`read_format` for a format whose reading follows the project's settings (`settings`
        with the defaults filled in); the default ignores them."""
        return self.read_format(fmt, text, filename)

    def parse_record(self, record: dict, row: int) -> tuple[ItemRow | None, list[FieldError]]:
        raise NotImplementedError

    def common_fields(self, record: dict, problems: RowProblems) -> dict:
        return {
            "external_id": require_text(record, "id", problems, identifier=True),
            "group": require_text(record, "group", problems, required=False, identifier=True),
            "split": require_text(record, "split", problems, required=False, identifier=True),
        }

    # Export formats besides the common `jsonl` and `csv`: name → how the file is written.
    export_extra_formats: dict[str, dict[str, str]] = {}

    # Formats the kind writes as one document through `export_stream(spec)` (SQuAD JSON).
    streamed_formats: tuple[str, ...] = ()

    # Exports the kind writes through its own address, offered beside the common ones on the
    # item browser: (what the button says, the route's name under /api/, its query string).
    export_pages: tuple[tuple[Any, str, str], ...] = ()

    def export_stream(self, spec):
        raise NotImplementedError

    @property
    def export_formats(self) -> tuple[str, ...]:
        return ("jsonl", "csv", *self.export_extra_formats)

    def export_splits(self, project) -> "ExportSplits | None":
        """How the JSONL and CSV exports read an item's split where the kind computes it
        instead of storing it; None: the stored `Item.split`."""
        return None

    def export_record(self, item, facts: "ExportFacts") -> dict:
        """One exported record, JSON-ready, keys in output order, for `item` and the `facts`
        gathered for it. Text is returned exactly as stored (docs/text.md "Storing text"). The default
        carries the payload as stored; kinds flatten what their consumers expect."""
        outcome = facts.outcome
        return {
            "id": item.external_id,
            "payload": item.payload,
            "gold_label": item.gold_label or None,
            "author_label": item.reference_label or None,
            "votes": dict(outcome.votes) if outcome is not None else {},
            "n": outcome.n_votes if outcome is not None else len(facts.annotations),
            "round": item.round,
            "group": item.group,
            "split": item.split,
            "status": item.status,
            "label_changed": outcome.label_changed if outcome is not None else None,
            "agreement": outcome.agreement if outcome is not None else None,
            "author": facts.author,
            "annotators": [annotator for annotator, _value in facts.annotations],
        }

    def export_csv_columns(self) -> tuple[str, ...]:
        """CSV header, naming keys of `export_record`; a dict value `votes` is spread over
        `votes_<label>` columns by the kind that lists them."""
        return ("id", "payload", "gold_label", "author_label", "n", "round", "group", "split",
                "status", "label_changed", "agreement", "author", "annotators")  # fmt: skip

    def export_table_header(self, fmt: str, items) -> list[str]:
        """The header row of one of `export_extra_formats`. `items` is the queryset being
        exported, ordered; a kind may run one query over it to find optional columns."""
        raise InvalidInput(_export_format_missing(fmt), field="format")

    def export_table_row(self, fmt: str, item, header: list[str]) -> list[str]:
        """One row of one of `export_extra_formats`, matching `header`."""
        raise InvalidInput(_export_format_missing(fmt), field="format")

    # --- import: what a parsed row becomes, and what an import sets off ---
    def derived_group(self, payload: dict) -> str:
        """The group that keeps items apart in an annotator's sequence when the imported
        row names none (stored as `Item.derived_group`, never exported), or "" for none.
        At most 200 characters."""
        return ""

    def stored_payload(self, project, row: ItemRow) -> dict:
        """The payload stored for a new item of `project` parsed as `row`: kinds that add
        per-project facts the file does not hold (a secret display order) add them here."""
        return row.payload

    def same_content(self, stored: dict, parsed: dict) -> bool:
        """Whether a stored payload holds what a re-imported row parsed to (the re-import is
        then skipped); facts added by `stored_payload` are not content."""
        return stored == parsed

    def import_hold_out(self, project, row: ItemRow) -> str | None:
        """Why a valid row is held out of `project` at import (a translated sentence the
        import result lists beside the row), or None to store it. The dataset's own
        filters live here (a summary project's articles not in its language); rows held
        out are reported, never stored, and never make the import fail."""
        return None

    def after_import(self, project, created: int) -> None:
        """Called inside the import transaction once rows are stored; enqueue follow-up work
        with `transaction.on_commit` here."""


class KindReports:
    # Kinds whose agreement scopes differ from nli's (per round) set this and implement
    # compute_agreement; the "agreement" job then calls it.
    computes_agreement: bool = False

    def compute_agreement(self, project, job) -> dict:
        """Recompute and upsert the project's AgreementReports; return the job's result."""
        raise NotImplementedError

    def report_sections(self, project) -> dict:
        """Kind-specific figures for `GET /api/projects/{slug}/report/` and the dashboard,
        with a bounded number of queries."""
        return {}

    # A kind whose report sections are sums over items sets this, so that the worker keeps
    # them up to date by the items that changed (services.figures): each item's share of
    # the counts (`report_counts`), and the sections computed from the counts summed over
    # the project's items. Otherwise the worker reads `report_sections` whole on every run.
    report_counted: bool = False
    # Changed whenever what an item's share holds changes: sums stored with another
    # version are read anew over every item (a run after the change would otherwise take
    # out shares that no longer match the sums).
    report_counts_version: str = ""

    def report_counts(self, project, item_ids: list[int]) -> dict[int, dict[str, dict[str, int]]]:
        """{item id: {counter: {key: n}}}, each item's share of the counts its report
        sections are computed from (items with none may be left out), in a number of
        queries that does not grow with the ids; {} without a query for a kind that does
        not count them."""
        return {}

    def report_sections_from_counts(self, project, counts: dict[str, dict[str, int]]) -> dict:
        """`report_sections` from the items' `report_counts` summed over the project's
        items (keys held by no item left out), the alpha reports left as None (read live);
        a kind with counts implements it."""
        raise NotImplementedError

    def report_related(self, project, item_ids: list[int]) -> list[int]:
        """Items whose share of the report counts follows from these items' too (a share
        that reads another item, as a reversed probe's reads its original's labels): the
        worker reads them with the changed items. One query at most; none by default."""
        return []

    def coherence_from_counts(self, counts: dict[str, dict[str, int]]) -> tuple[dict[int, dict], set[int]] | None:
        """The annotators' coherence (`annotator_coherence`) and the originals of the probes
        answered incoherently (`incoherent_probes`) from the summed `report_counts`, for a
        kind whose counts hold them; None (the default): the worker reads them."""
        return None

    def supervisor_notices(self, project) -> list[str]:
        """What the project's supervisors must know to keep it working (shown on the project
        page to them only): reasons the project refuses its annotators' work."""
        return []


class KindQuality:
    """What the annotator-quality figures and the adjudication queue need to know of a kind:
    each annotator's coherence on reversed-pair probes and the probes answered incoherently
    (coherence paper §3), and how an adjudicated gold shows in an export."""

    def annotator_coherence(self, project) -> dict[int, dict]:
        """{annotator user id: {"probes", "soft", "hard"}} over the reversed-pair probes
        they answered; {} for kinds without probes."""
        return {}

    def incoherent_probes(self, project) -> list[tuple[int, int, str, str]]:
        """(original item id, annotator user id, label on the original, label on its
        reversal) for every probe one annotator answered incoherently (coherence paper
        §3.1); [] for kinds without probes."""
        return []

    def adjudicated_record(self, record: dict, adjudication: "AdjudicationFact") -> dict:
        """An export record (`export_record`) of an adjudicated item: the gold is the
        adjudicator's label, flagged `"adjudicated": true` with who (pseudonymous), when
        and the comment. Records of items nobody adjudicated never pass through here."""
        return {
            **record,
            "gold_label": adjudication.label,
            "adjudicated": True,
            "adjudication": {"by": adjudication.by, "at": adjudication.at, "comment": adjudication.comment},
        }

    # --- reversed-pair probes handed to annotators (coherence paper §3) ---
    def probe_for_annotator(self, project, user, settings: dict, *, last_group: str | None, now) -> int | None:
        """An item id to claim before the ordinary queue (a coherence probe), locked by the
        caller's transaction, or None. Called while the caller's membership row is locked."""
        return None

    def probes_remaining_for_annotator(self, project, user, settings: dict, *, ordinary_remaining: int) -> int:
        """How many more probes `probe_for_annotator` may still hand this annotator, beside
        the `ordinary_remaining` ordinary items they could still claim: added to the
        `remaining` of their progress so that a probe never makes the total grow."""
        return 0


@dataclass(frozen=True)
class ProjectLink:
    """A link the project page shows for a kind's own page: its URL name (taking the
    project's slug) and the link text (translated)."""

    url_name: str
    text: Any
    # Shown only to the project's supervisors (and admins): a page only they may open.
    supervisors_only: bool = False


class KindWiring:
    # Dotted names of the kind's URL modules (one `urls.py` per package): each module's
    # `urlpatterns` (pages) are mounted at the site's root, its `api_urlpatterns` (API
    # operations), where it has them, under /api/.
    urls: tuple[str, ...] = ()
    # Job kind → dotted path of the function (taking the Job) that runs it on the worker.
    job_handlers: dict[str, str] = {}
    # Job kind → its name for people (translated), for the project page's job list.
    job_titles: dict[str, Any] = {}
    # URL names of the kind's results pages that carry the "Recompute agreement" button
    # (templates/annotation/_recompute.html sends the page's name back).
    recompute_pages: tuple[str, ...] = ()
    # Keys the kind adds to `GET /api/projects/{slug}/report/` (`report_sections`) → what
    # each holds, for the API's schema.
    report_keys: dict[str, str] = {}

    def project_links(self, project) -> list[ProjectLink]:
        """Links to the kind's own pages for the project page's navigation."""
        return []

    def author_sources(self, user, project) -> dict:
        """For a kind whose submits create items in another project: `user`'s memberships
        in projects of this kind whose link into `project` still holds, by the slug an item
        they generated carries in its group (`"<slug>:<...>"`). What lets an author revise
        items they wrote without being a member of `project`."""
        return {}

    # Whether a reviewer grades each of an annotation's `review_questions` on its own
    # (authored questions) rather than the whole annotation at once.
    reviewed_by_question: bool = False

    def review_questions(self, value: dict) -> list[dict]:
        """The questions of an annotation a reviewer grades one by one, each a dict whose
        "question" is its text; read only where `reviewed_by_question`."""
        return []

    def review_questions_count(self):
        """A database expression over an Annotation row that counts its value's
        `review_questions`, so that the review queue picks the annotations still waiting
        in the database, a page at a time; required where `reviewed_by_question`."""
        raise NotImplementedError

    def review_payload(self, payload: dict) -> dict:
        """What a reviewer is shown of an item beside the annotation under review: by
        default the stored payload."""
        return payload

    def feedback_details(self, review) -> dict:
        """What the feedback inbox page shows of a graded question besides grade and
        comment: any of "question_text", "answer" (None: not answerable) and "paragraph"
        ({"before", "answer", "after"}); {} to show grade and comment alone."""
        return {}


class KindCore(KindSettings, KindRules, KindVoting):
    """What every kind must say: its settings, what annotating means, how votes decide."""


class Kind(KindCore, KindFormats, KindReports, KindQuality, KindRelease, KindWiring):
    name: str = ""
    # What the kind is, in a line (project creation, the settings page) and in a few words
    # (where a project's kind is shown beside its name); both translated.
    title: Any = ""
    short_title: Any = ""


@dataclass(frozen=True)
class ExportFacts:
    """What the export service gathered in bulk for one item, beside the item itself.

    `outcome` is the ConsensusOutcome of the item's current round, or None while that round
    is undecided. `annotations` are (pseudonymous annotator id, value) of the current round
    in the order they were stored; `author` is the author's pseudonymous id, if any.
    `aggregates` is {method: {"label", "confidence"}} of the current round for kinds with
    `labels` (annotation.services.aggregation), `aggregation` the project's
    chosen method (None for other kinds)."""

    outcome: Any = None
    annotations: tuple[tuple[str | None, dict], ...] = ()
    author: str | None = None
    # The item's adjudication, if an adjudicator decided it (`Kind.adjudicated_record`).
    adjudication: "AdjudicationFact | None" = None
    aggregates: Any = None
    aggregation: str | None = None
    # The effective Decision of the current round (services.decisions), or None; and, when
    # the export asked for it (`?history=1`), every decision of the item as exported dicts.
    decision: Any = None
    history: Any = None


class ExportSplits:
    """The splits a kind computes (`KindFormats.export_splits`): the split an export writes
    for an item, and the items of one split as a queryset filter (`?split=`)."""

    def of(self, item) -> str:
        raise NotImplementedError

    def filter(self, items, split: str):
        raise NotImplementedError


def release_texts_of(texts: dict[str, list]) -> dict[str, list[str]]:
    """`texts` by field (`KindRelease.release_texts`) with only the non-empty strings kept."""
    return {field: [text for text in values if isinstance(text, str) and text] for field, values in texts.items()}


@dataclass(frozen=True)
class ReleaseFile:
    """One file of a kind's published shape in a release (`KindRelease.release_files`)."""

    # The path inside the release folder, such as "lchaim/dev.json".
    path: str
    data: bytes
    # The dataset card's config listing the file for the Hub (its splits' data files), or ""
    # for a file the Hub cannot read beside the JSONL files: the Hub and the `datasets`
    # library read every config of a folder with the reader of the first config's files.
    config: str = ""


@dataclass(frozen=True)
class AdjudicationFact:
    """An adjudicated gold as exported: the label, the adjudicator's pseudonymous id, the
    time (ISO 8601) and the comment."""

    label: str
    by: str | None
    at: str
    comment: str


def _export_format_missing(fmt: str) -> str:
    return gettext("format “%(format)s” is not available for exporting this kind of project") % {"format": fmt}
