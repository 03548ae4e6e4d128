"""Model evaluation, the generic part (docs/api.md "Dataset release"; FarsTail Table 5's shape): read a
predictions file, validate it all or nothing against the project's gold, score it on the
worker, store it, compare two evaluations.

What a prediction is and which figures a kind has belong to the kind
(`Kind.evaluation_scorer`, kinds/<kind>/evaluation.py); the bootstrap is
annotation/metrics/evaluation.py. Here:

- Files: JSONL `{"id", "prediction"}` (kinds may take more fields: `reversed` for phrase
  pairs), CSV with a header naming `id` and `prediction`, or for QA SQuAD's predictions
  dict `{question id: answer text}` ("" for no answer). Rows are numbered as imports number
  them: JSONL by line, CSV from 1 after the header, a SQuAD dict by entry.
- Validation before anything is stored: unknown, missing and duplicate ids, what the kind
  refuses (unknown labels, non-string answers), NaN and unstorable text; an empty or
  oversize file. One 400 lists every bad row by row and field.
- One evaluation at a time per project (409 while one is queued or running); the job
  scores with a seeded bootstrap (the same file gives the same figures), and stores the
  per-item arrays with the figures, so a paired comparison resamples the same items.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import PurePath

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import Q

from annotation import safe_json
from annotation.access import access_evaluation_for_staff, access_project_for_staff, access_project_for_supervisor
from annotation.errors import Conflict, FieldError, InvalidInput
from annotation.kinds.base import EvaluationScorer
from annotation.kinds.registry import get_kind
from annotation.metrics import evaluation as metrics
from annotation.metrics.text import bidi_control, first_forbidden_string, forbidden_character
from annotation.models import Evaluation, Item, Job, Project
from annotation.release.curation_jobs import release_run_audit
from annotation.rows import read_csv_records, read_jsonl_records
from annotation.services.imports import decode_upload
from annotation.services.jobs import job_create, job_set_progress

JOB_KIND = "evaluation"
FORMATS = ("jsonl", "csv", "squad")
ALL_SPLITS = "all"
DEFAULT_SPLIT = "test"
MAX_LISTED_ERRORS = 1000
MAX_NAME_LENGTH = 200
SPLIT_NAME = re.compile(r"^[\w-]{1,32}$")


# --- the kind's scorer ----------------------------------------------------------------------


def scorer_for(project: Project) -> EvaluationScorer:
    scorer = get_kind(project.kind).evaluation_scorer()
    if scorer is None:
        raise InvalidInput(f"models cannot be evaluated on {project.kind} projects", field="kind")
    return scorer


class ClassificationScorer(EvaluationScorer):
    """A scorer for kinds whose gold is one label of a closed set (the NLI kinds, phrase
    pairs): gold from the items of the split, a prediction is one of the labels (the kind's
    `canonical` spelling), figures from metrics.classification_statistic. Subclasses add
    strata or figures of their own through `strata`, `more_arrays` and `more_statistics`."""

    primary = "accuracy"

    def __init__(self, labels: tuple[str, ...], canonical, gold_fields: tuple[str, ...] = ("gold_label",)):
        self.labels = tuple(labels)
        self.canonical = canonical
        # Item fields holding the gold, first non-empty one wins.
        self.gold_fields = tuple(gold_fields)

    # Item columns read with the gold, passed to `gold_extra`.
    gold_columns: tuple[str, ...] = ()

    def items(self, project, split: str | None):
        """The items scored: not removed, with a gold, of `split` (None: all)."""
        has_gold = Q()
        for field in self.gold_fields:
            has_gold |= ~Q(**{field: ""})
        items = Item.objects.filter(project=project).exclude(status=Item.Status.REMOVED).filter(has_gold)
        return items.filter(split=split) if split else items

    def gold(self, project, split: str | None) -> dict:
        index = {label: i for i, label in enumerate(self.labels)}
        out = {}
        width = len(self.gold_fields)
        rows = (
            self.items(project, split)
            .order_by("position", "id")
            .values_list("external_id", *self.gold_fields, *self.gold_columns)
        )
        for external_id, *columns in rows.iterator(chunk_size=5000):
            label = next((value for value in columns[:width] if value), "")
            if label in index:
                out[external_id] = (index[label], *self.gold_extra(*columns[width:]))
        return out

    def gold_extra(self, *columns) -> tuple:
        return ()

    # Distinct label spellings remembered (a file has a handful; a bad one may have many).
    MEMO_SIZE = 1024

    def label_of(self, value, field: str, row: int, required: bool = True) -> tuple[int | None, list[FieldError]]:
        if value is None and not required:
            return None, []
        if type(value) is str:
            memo = self.__dict__.setdefault("_memo", {})
            index = memo.get(value)
            if index is None:
                label = self.canonical(value)
                index = self.labels.index(label) if label in self.labels else -1
                if len(memo) < self.MEMO_SIZE:
                    memo[value] = index
            if index >= 0:
                return index, []
        label = self.canonical(value)
        if label not in self.labels:
            shown = (
                "a missing value"
                if value is None
                else repr(value)
                if isinstance(value, str)
                else f"a {type(value).__name__}"
            )
            return None, [FieldError(field, f"must be one of {', '.join(self.labels)}, not {shown}", row)]
        return self.labels.index(label), []

    def clean(self, record: dict, row: int):
        return self.label_of(record.get("prediction"), "prediction", row)

    def arrays(self, project, gold: dict, predictions: dict) -> dict:
        keys = list(gold)
        return {
            "gold": np.array([gold[key][0] for key in keys], dtype=np.int64),
            "predicted": np.array([self.prediction_label(predictions[key]) for key in keys], dtype=np.int64),
            **self.more_arrays(keys, gold, predictions),
        }

    def prediction_label(self, prediction) -> int:
        return prediction

    def more_arrays(self, keys: list, gold: dict, predictions: dict) -> dict:
        return {}

    def strata(self, arrays: dict) -> dict:
        return {}

    def more_statistics(self, arrays: dict) -> list:
        return []

    def statistic(self, arrays: dict):
        base = metrics.classification_statistic(arrays["gold"], arrays["predicted"], self.labels, self.strata(arrays))
        return metrics.combine(base, *self.more_statistics(arrays))

    def extras(self, arrays: dict) -> dict:
        point = metrics.classification_point(arrays["gold"], arrays["predicted"], self.labels)
        return {
            "confusion": {
                "labels": list(self.labels),
                "rows": "gold",
                "columns": "predicted",
                "matrix": point["confusion"],
            },
            "per_class": {label: {"support": figures["support"]} for label, figures in point["per_class"].items()},
        }


# --- reading and validating a predictions file ---------------------------------------------


def _format_of(text: str, filename: str, fmt: str, scorer: EvaluationScorer) -> str:
    if fmt:
        if fmt not in FORMATS or (fmt == "squad" and not scorer.accepts_squad_dict):
            allowed = [f for f in FORMATS if f != "squad" or scorer.accepts_squad_dict]
            raise InvalidInput(f"must be one of {', '.join(allowed)}", field="format")
        return fmt
    suffix = PurePath(filename or "").suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix == ".json" and scorer.accepts_squad_dict:
        return "squad"
    first = text.lstrip().split("\n", 1)[0]
    if first.startswith("id,") or first.startswith('"id",'):
        return "csv"
    if (
        scorer.accepts_squad_dict
        and "\n" in text.strip()
        and text.lstrip().startswith("{")
        and not first.rstrip().endswith("}")
    ):
        return "squad"  # one JSON object over several lines: not JSONL
    if scorer.accepts_squad_dict and text.strip().count("\n") == 0:
        try:
            whole = json.loads(text)
        except (ValueError, RecursionError):
            return "jsonl"
        if isinstance(whole, dict) and not ({"id", "prediction"} <= set(whole)):
            return "squad"
    return "jsonl"


class _NotFinite:
    def __init__(self, text: str):
        self.text = text


def _squad_records(text: str) -> Iterator[tuple[int, dict]]:
    """SQuAD's predictions dict, one record per entry in file order (duplicate keys kept, to
    be refused as duplicates)."""
    try:
        pairs = json.loads(text, object_pairs_hook=lambda pairs: pairs, parse_constant=_NotFinite)
    except RecursionError:
        raise InvalidInput("the file nests too deep", field="file") from None
    except ValueError as exc:
        raise InvalidInput(f"the file is not a JSON object of question id → answer text: {exc}", field="file") from None
    if not isinstance(pairs, list) or not all(isinstance(pair, tuple) for pair in pairs):
        raise InvalidInput("a SQuAD predictions file is one JSON object {question id: answer text}", field="file")
    for number, (key, value) in enumerate(pairs, start=1):
        if isinstance(value, _NotFinite):
            yield number, {"id": key, "_error": f"{value.text} is not a JSON number", "_field": "prediction"}
        elif isinstance(value, float) and not np.isfinite(value):
            yield number, {"id": key, "_error": "is beyond the range of a float", "_field": "prediction"}
        else:
            yield number, {"id": key, "prediction": value}


def _csv_records(text: str, scorer: EvaluationScorer) -> Iterator[tuple[int, dict]]:
    for number, record in read_csv_records(
        text, ("id", "prediction"), "a CSV predictions file needs a header row naming id and prediction"
    ):
        # An empty optional cell is no value (a reversed pair not predicted).
        for name in scorer.fields[1:]:
            if record.get(name) == "":
                record.pop(name)
        yield number, record


def _jsonl_records(text: str) -> Iterable[tuple[int, dict]]:
    """JSONL rows as objects. The whole file is first parsed as one JSON array of its
    non-blank lines (one C-level parse instead of 100,000): when that gives one object per
    line — a line holding anything else, or a fault, breaks the array — the rows are those
    objects; otherwise every line is read on its own (read_jsonl_records) to name the bad ones."""
    numbered = [
        (number, line.removesuffix("\r")) for number, line in enumerate(text.split("\n"), start=1) if line.strip()
    ]
    try:
        values = json.loads(
            "[" + ",".join(line for _number, line in numbered) + "]",
            parse_constant=safe_json._refuse_constant,
            parse_float=safe_json._finite_float,
        )
    except (ValueError, RecursionError):
        values = None
    if values is not None and len(values) == len(numbered) and all(type(value) is dict for value in values):
        return zip((number for number, _line in numbered), values)
    return read_jsonl_records(text)


def read_predictions(data: bytes, filename: str, fmt: str, scorer: EvaluationScorer) -> Iterable[tuple[int, dict]]:
    """(row, record) of every prediction in the file; whole-file faults (empty, too large,
    not UTF-8, not the format) are a 400 naming the file."""
    if len(data) > settings.MASHOV_MAX_IMPORT_BYTES:
        raise InvalidInput(f"the file is larger than {settings.MASHOV_MAX_IMPORT_BYTES} bytes", field="file")
    text = decode_upload(data)
    if not text.strip():
        raise InvalidInput("the file is empty", field="file")
    fmt = _format_of(text, filename, fmt, scorer)
    if fmt == "squad":
        return _squad_records(text)
    if fmt == "csv":
        return _csv_records(text, scorer)
    return _jsonl_records(text)


def may_hold_unstorable_text(data: bytes) -> bool:
    """Whether a parsed string of the file may hold a NUL or a lone surrogate: only through a
    NUL byte or a JSON \\u escape (valid UTF-8 encodes no surrogate)."""
    return b"\x00" in data or b"\\u" in data


def _record_id(record: dict, row: int) -> tuple[str | None, FieldError | None]:
    value = record.get("id")
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value:
        return None, FieldError("id", "is required: the item's id (a string)", row)
    return value, None


def validate_predictions(
    records: Iterable[tuple[int, dict]],
    gold: dict,
    scorer: EvaluationScorer,
    split_label: str,
    *,
    check_strings: bool = True,
) -> dict:
    """{key: prediction} for every key of `gold`, or InvalidInput listing every bad row (at
    most MAX_LISTED_ERRORS, then how many more) and every gold key left without one.
    `check_strings=False` skips looking for NUL and lone surrogates in every record: right
    only for a file that cannot hold them (`may_hold_unstorable_text`)."""
    errors: list[FieldError] = []
    predictions: dict = {}
    first_row: dict[str, int] = {}
    for row, record in records:
        if "_error" in record:
            field = record.get("_field")
            errors.append(
                FieldError(field or "file", record["_error"] if field else f"row {row} {record['_error']}", row)
            )
            continue
        found = first_forbidden_string(record) if check_strings else None
        if found:
            errors.append(FieldError(found[0] or "file", found[1], row))
            continue
        key, problem = _record_id(record, row)
        if problem:
            errors.append(problem)
            continue
        if key not in gold:
            errors.append(
                FieldError("id", f"unknown id {key[:200]!r}: no gold item with this id in {split_label}", row)
            )
            continue
        if key in first_row:
            errors.append(FieldError("id", f"duplicate id {key[:200]!r} (first in row {first_row[key]})", row))
            continue
        first_row[key] = row
        value, problems = scorer.clean(record, row)
        if problems:
            errors.extend(problems)
            continue
        predictions[key] = value
    missing = [key for key in gold if key not in first_row]
    errors.extend(FieldError("id", f"no prediction for id {key!r}") for key in missing[:MAX_LISTED_ERRORS])
    if errors:
        listed = errors[:MAX_LISTED_ERRORS]
        if len(errors) > MAX_LISTED_ERRORS:
            listed.append(FieldError("file", f"and {len(errors) - MAX_LISTED_ERRORS} more errors"))
        raise InvalidInput(f"{len(errors)} problems in the predictions file; nothing was stored", errors=listed)
    return predictions


def _split_of(project: Project, split) -> str | None:
    """The split to score: `split` as given ("all": every split), DEFAULT_SPLIT when left
    out. None stands for every split."""
    if split in (None, ""):
        split = DEFAULT_SPLIT
    if not isinstance(split, str) or not SPLIT_NAME.match(split):
        raise InvalidInput("must be a split name (train, dev, test …) or all", field="split")
    return None if split == ALL_SPLITS else split


def _split_label(split: str | None) -> str:
    return f"split {split!r}" if split else "the project"


def _clean_name(name) -> str:
    if not isinstance(name, str) or not name.strip():
        raise InvalidInput("is required: the model's name", field="name")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidInput(f"is longer than {MAX_NAME_LENGTH} characters", field="name")
    reason = forbidden_character(name) or bidi_control(name)
    if reason:
        raise InvalidInput(reason, field="name")
    return name


def predictions_template(project: Project, scorer: EvaluationScorer, split) -> bytes:
    """A predictions file to fill in: one JSONL line per gold id of `split` (as an upload
    names it: DEFAULT_SPLIT when left out, "all"), in scoring order, with an empty
    prediction ("") and the scorer's other fields null."""
    gold = gold_for(project, scorer, _split_of(project, split))
    empty = {field: "" if field == "prediction" else None for field in scorer.fields}
    return "".join(json.dumps({"id": key, **empty}, ensure_ascii=False) + "\n" for key in gold).encode("utf-8")


def gold_for(project: Project, scorer: EvaluationScorer, split: str | None) -> dict:
    gold = scorer.gold(project, split)
    if not gold:
        raise InvalidInput(f"no gold-labelled items to score in {_split_label(split)}", field="split")
    return gold


# --- requests and the job ------------------------------------------------------------------


def evaluation_request(
    *, user, slug: str, data: bytes, filename: str = "", name, split=None, fmt: str = ""
) -> Evaluation:
    """Validate a predictions file against the gold of `split` and queue its scoring.
    Supervisors only. 400 listing every bad row, nothing stored; 409 while another
    evaluation of the project is queued or running."""
    project = access_project_for_supervisor(user, slug)
    return evaluation_start(project=project, user=user, data=data, filename=filename, name=name, split=split, fmt=fmt)


def evaluation_start(
    *, project: Project, user, data: bytes, filename: str = "", name, split=None, fmt: str = ""
) -> Evaluation:
    """`evaluation_request` once the caller may evaluate `project` (the command line's
    operator may: `manage.py evaluate`)."""
    scorer = scorer_for(project)
    name = _clean_name(name)
    split = _split_of(project, split)
    if fmt is not None and not isinstance(fmt, str):
        raise InvalidInput("must be a string", field="format")
    gold = gold_for(project, scorer, split)
    validate_predictions(
        read_predictions(data, filename, fmt or "", scorer),
        gold,
        scorer,
        _split_label(split),
        check_strings=may_hold_unstorable_text(data),
    )
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).first()
        running = Job.objects.filter(project=project, kind=JOB_KIND, status__in=(Job.Status.QUEUED, Job.Status.RUNNING))
        if running.exists():
            raise Conflict("another evaluation of this project is running; wait until it is done", field="file")
        evaluation = Evaluation.objects.create(
            project=project, name=name, split=split or "", created_by=user, digest=hashlib.sha256(data).hexdigest()
        )
        evaluation.job = job_create(
            kind=JOB_KIND,
            project=project,
            user=user,
            input_data=data,
            params={"evaluation": evaluation.pk, "filename": filename[:200], "format": fmt or ""},
        )
        evaluation.save(update_fields=["job"])
        release_run_audit(user, project, evaluation.job)
    return evaluation


def _pack(keys: list[str], arrays: dict) -> bytes:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, __keys__=np.array(keys, dtype=str), **arrays)
    return buffer.getvalue()


def _unpack(blob) -> tuple[list[str], dict]:
    with np.load(io.BytesIO(bytes(blob)), allow_pickle=False) as stored:
        keys = stored["__keys__"].tolist()
        return keys, {name: stored[name] for name in stored.files if name != "__keys__"}


def nest(flat: dict) -> dict:
    """{"a.b.c": x} → {"a": {"b": {"c": x}}}."""
    tree: dict = {}
    for path, value in flat.items():
        *parents, last = path.split(".")
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return tree


def merge(tree: dict, extra: dict) -> dict:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(tree.get(key), dict):
            merge(tree[key], value)
        else:
            tree[key] = value
    return tree


def plain(tree):
    """Figures without their intervals: each {"value", "ci_low", "ci_high"} becomes its value."""
    if isinstance(tree, dict):
        if set(tree) == {"value", "ci_low", "ci_high"}:
            return tree["value"]
        return {key: plain(value) for key, value in tree.items()}
    return tree


def figure_at(tree: dict | None, path: str):
    """The figure at a dotted path of nested figures, or None."""
    node = tree
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def flatten_figures(tree: dict, prefix: str = "") -> list[tuple[str, object]]:
    """(dotted name, figure) for every figure of a nested tree: a figure is a leaf or a
    dict of value and interval ({"value", "ci_low", "ci_high"} or a Difference's); the
    confusion matrix is one figure."""
    out = []
    for key, value in tree.items():
        name = f"{prefix}.{key}" if prefix else key
        if (
            isinstance(value, dict)
            and key != "confusion"
            and not ({"value", "ci_low"} <= set(value) or {"difference", "ci_low"} <= set(value))
        ):
            out.extend(flatten_figures(value, name))
        else:
            out.append((name, value))
    return out


def score(
    scorer: EvaluationScorer, project: Project, gold: dict, predictions: dict, progress=None
) -> tuple[dict, dict]:
    """(nested figures with intervals, per-item arrays) of `predictions` on `gold`."""
    arrays = scorer.arrays(project, gold, predictions)
    estimates = metrics.bootstrap(scorer.statistic(arrays), len(gold), progress=progress)
    figures = nest({name: estimate.as_dict() for name, estimate in estimates.items()})
    merge(figures, scorer.extras(arrays))
    figures["items"] = len(gold)
    return figures, arrays


def evaluation_run_job(job: Job) -> dict:
    """The "evaluation" job: score the uploaded file and store the figures. Idempotent: a
    rerun computes the same figures (seeded) and overwrites them."""
    evaluation = Evaluation.objects.select_related("project").get(pk=job.params["evaluation"])
    project = evaluation.project
    scorer = scorer_for(project)
    split = evaluation.split or None
    try:
        gold = gold_for(project, scorer, split)
        data = bytes(job.input_data or b"")
        records = read_predictions(data, job.params.get("filename", ""), job.params.get("format", ""), scorer)
        predictions = validate_predictions(
            records, gold, scorer, _split_label(split), check_strings=may_hold_unstorable_text(data)
        )
    except InvalidInput as exc:  # the gold changed since the upload was checked
        return {"errors": [error.as_dict() for error in exc.errors]}
    job_set_progress(job.pk, 0.05)
    figures, arrays = score(
        scorer, project, gold, predictions, progress=lambda share: job_set_progress(job.pk, 0.05 + 0.9 * share)
    )
    evaluation.figures = figures
    evaluation.items = len(gold)
    evaluation.bootstrap = {"n_resamples": metrics.N_RESAMPLES, "confidence": metrics.CONFIDENCE, "seed": metrics.SEED}
    evaluation.per_item = _pack(list(gold), arrays)
    evaluation.save(update_fields=["figures", "items", "bootstrap", "per_item"])
    return {"evaluation": evaluation.pk, "items": len(gold), "figures": plain(figures)}


# --- reads ---------------------------------------------------------------------------------


def evaluation_summary(evaluation: Evaluation) -> dict:
    return {
        "id": evaluation.pk,
        "name": evaluation.name,
        "split": evaluation.split or ALL_SPLITS,
        "created_at": evaluation.created_at,
        "status": evaluation.status,
        "job": evaluation.job_id,
        "items": evaluation.items,
        "figures": plain(evaluation.figures) if evaluation.figures is not None else None,
    }


def evaluations_for_project(*, user, slug: str) -> list[dict]:
    project = access_project_for_staff(user, slug)
    rows = Evaluation.objects.filter(project=project).select_related("job").defer("per_item").order_by("-id")
    return [evaluation_summary(evaluation) for evaluation in rows]


def evaluation_detail(*, user, slug: str, evaluation_id: int) -> dict:
    return evaluation_describe(access_evaluation_for_staff(user, slug, evaluation_id))


def evaluation_describe(evaluation: Evaluation) -> dict:
    """Everything stored of an evaluation: its figures with intervals, how they were
    resampled, its job's error when it failed."""
    error = evaluation.job.error if evaluation.job_id and evaluation.job.status == Job.Status.FAILED else None
    return {
        **evaluation_summary(evaluation),
        "figures": evaluation.figures,
        "bootstrap": evaluation.bootstrap,
        "primary": scorer_for(evaluation.project).primary,
        "error": error,
    }


def _evaluation_id(value, field: str) -> int:
    if isinstance(value, str) and value.isdigit() and len(value) <= 18:
        return int(value)
    raise InvalidInput("must be the id of an evaluation of this project", field=field)


def evaluation_compare(*, user, slug: str, a, b) -> dict:
    """Paired bootstrap of A − B over the items both were scored on: for every figure the
    difference, its 95 % interval and the share of resamples in which A scored higher; the
    verdict reads the kind's primary figure (A better when the whole interval is above 0)."""
    project = access_project_for_staff(user, slug)
    ids = {"a": _evaluation_id(a, "a"), "b": _evaluation_id(b, "b")}
    found = {}
    for field, pk in ids.items():
        evaluation = Evaluation.objects.select_related("job").filter(project=project, pk=pk).first()
        if evaluation is None:
            raise InvalidInput("must be the id of an evaluation of this project", field=field)
        found[field] = evaluation
    for field, evaluation in found.items():
        if evaluation.per_item is None:
            raise Conflict(
                f"evaluation {evaluation.pk} is {evaluation.status}: it has no figures to compare yet", field=field
            )
    if found["a"].split != found["b"].split:
        raise InvalidInput("a and b were scored on different splits", field="b")
    scorer = scorer_for(project)
    keys_a, arrays_a = _unpack(found["a"].per_item)
    keys_b, arrays_b = _unpack(found["b"].per_item)
    position_b = {key: i for i, key in enumerate(keys_b)}
    common = [(i, position_b[key]) for i, key in enumerate(keys_a) if key in position_b]
    if not common:
        raise InvalidInput("a and b share no items", field="b")
    take_a = np.array([i for i, _ in common], dtype=np.int64)
    take_b = np.array([j for _, j in common], dtype=np.int64)
    statistic_a = scorer.statistic({name: array[take_a] for name, array in arrays_a.items()})
    statistic_b = scorer.statistic({name: array[take_b] for name, array in arrays_b.items()})
    differences = metrics.paired_bootstrap(statistic_a, statistic_b, len(common))
    primary = differences.get(scorer.primary)
    verdict = "undecided"
    if primary is not None and primary.ci_low is not None:
        verdict = "a_better" if primary.ci_low > 0 else "b_better" if primary.ci_high < 0 else "no_clear_difference"
    return {
        "a": evaluation_summary(found["a"]),
        "b": evaluation_summary(found["b"]),
        "split": found["a"].split or ALL_SPLITS,
        "items": len(common),
        "primary": scorer.primary,
        "verdict": verdict,
        "figures": nest({name: difference.as_dict() for name, difference in differences.items()}),
        "bootstrap": {
            "n_resamples": metrics.N_RESAMPLES,
            "confidence": metrics.CONFIDENCE,
            "seed": metrics.SEED,
            "paired": True,
        },
    }
