"""Model predictions as a project resource (docs/kinds.md "Model in the loop"): a named,
versioned set of predictions per item, uploaded by a supervisor or stored by the built-in
model (release/baseline_model.py). The latest set is what the item pages show supervisors
and what the `uncertainty` order reads.

Files are read and validated as model evaluation's are (release/predictions.py): JSONL
`{"id", "label", "scores"}` (`scores` optional: {label: probability}) or CSV with a header
naming `id` and `label` and, optionally, a `scores.<label>` column per label. All or
nothing: one 400 lists every bad row by row and field, and nothing is stored. Unlike an
evaluation, a set may predict only some of the items, and any item of the project may be
predicted, decided or not."""

from __future__ import annotations

import hashlib
import math

from django.db import transaction
from django.db.models import Max
from django.utils.translation import gettext
from django.utils.translation import gettext as _

from annotation.access import access_project_for_supervisor
from annotation.errors import FieldError, InvalidInput
from annotation.kinds.registry import kind_title
from annotation.metrics.text import may_hold_unstorable_text
from annotation.metrics.uncertainty import margin_of
from annotation.models import Item, Prediction, PredictionSet, Project
from annotation.release.evaluation import clean_name
from annotation.release.evaluation_scorers import ClassificationScorer, scorer_for
from annotation.release.predictions import read_predictions, validate_predictions
from annotation.services.priorities import item_priorities_refresh

# Probabilities of one prediction may miss 1 by this much (rounding in the file).
SUM_TOLERANCE = 0.01
WRITE_BATCH = 2_000
SCORES_PREFIX = "scores."


class LabelReader:
    """What release/predictions.py asks of a scorer, for a predictions set: a record is a
    label of the kind's closed set and optional probabilities per label."""

    accepts_squad_dict = False
    fields = ("label",)

    def __init__(self, scorer: ClassificationScorer):
        self.scorer = scorer

    def clean(self, record: dict, row: int):
        index, problems = self.scorer.label_of(record.get("label"), "label", row)
        if problems:
            return None, problems
        scores = record.get("scores")
        from_columns = {
            key[len(SCORES_PREFIX) :]: value for key, value in record.items() if key.startswith(SCORES_PREFIX)
        }
        if from_columns:  # CSV: one column per label; an empty cell is no score
            scores = _numbers_of_cells({key: value for key, value in from_columns.items() if value != ""}, row)
            if isinstance(scores, list):
                return None, scores
            scores = scores or None
        if scores is None:
            return (self.scorer.labels[index], None, None), []
        cleaned, problems = self.clean_scores(scores, row)
        if problems:
            return None, problems
        return (self.scorer.labels[index], cleaned, margin_of(cleaned.values())), []

    def clean_scores(self, scores, row: int) -> tuple[dict | None, list[FieldError]]:
        if not isinstance(scores, dict) or not scores:
            return None, [FieldError("scores", gettext("must be an object of label → probability"), row)]
        cleaned: dict[str, float] = {}
        for key, value in scores.items():
            index, problems = self.scorer.label_of(key, "scores", row)
            if problems:
                return None, problems
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                return None, [
                    FieldError(
                        "scores", gettext("the probability of “%(label)s” must be a number") % {"label": key}, row
                    )
                ]
            if not 0.0 <= value <= 1.0:
                return None, [
                    FieldError(
                        "scores",
                        gettext("the probability of “%(label)s” must be between 0 and 1") % {"label": key},
                        row,
                    )
                ]
            label = self.scorer.labels[index]
            if label in cleaned:
                return None, [FieldError("scores", gettext("“%(label)s” is given twice") % {"label": label}, row)]
            cleaned[label] = float(value)
        if abs(sum(cleaned.values()) - 1.0) > SUM_TOLERANCE:
            return None, [FieldError("scores", gettext("the probabilities must add up to 1"), row)]
        return cleaned, []


def _numbers_of_cells(cells: dict, row: int) -> dict | list[FieldError]:
    numbers = {}
    for key, text in cells.items():
        try:
            numbers[key] = float(text)
        except (TypeError, ValueError):
            return [
                FieldError("scores", gettext("the probability of “%(label)s” must be a number") % {"label": key}, row)
            ]
    return numbers


def label_reader_for(project: Project) -> LabelReader:
    scorer = scorer_for(project)
    if not isinstance(scorer, ClassificationScorer):
        raise InvalidInput(
            _("predictions are stored for kinds with a closed label set, not for “%(kind)s”")
            % {"kind": kind_title(project.kind)},
            field="kind",
        )
    return LabelReader(scorer)


def prediction_set_upload(*, user, slug: str, data: bytes, filename: str = "", name) -> PredictionSet:
    """Validate a predictions file against the project's items and store it as the next
    version of the set `name`. Supervisors only; a 400 listing every bad row stores nothing."""
    project = access_project_for_supervisor(user, slug)
    reader = label_reader_for(project)
    name = clean_name(name)
    known = dict(Item.objects.filter(project=project, probe_of__isnull=True).values_list("external_id", "pk"))
    cleaned = validate_predictions(
        read_predictions(data, filename, "", reader, columns=("id", "label")),
        known,
        reader,
        "the project",
        check_strings=may_hold_unstorable_text(data),
        complete=False,
        unknown=_("no item with this id in {where}"),
    )
    if not cleaned:
        raise InvalidInput(gettext("the file holds no prediction"), field="file")
    rows = {known[key]: value for key, value in cleaned.items()}
    return prediction_set_store(
        project=project, name=name, rows=rows, user=user, digest=hashlib.sha256(data).hexdigest()
    )


def prediction_set_store(
    *, project: Project, name: str, rows: dict, user=None, digest: str = "", source=PredictionSet.Source.UPLOAD, **facts
) -> PredictionSet:
    """Store {item id: (label, scores or None, margin or None)} as the next version of `name`
    in one transaction, and move the project's items in uncertainty order."""
    with transaction.atomic():
        # Versions of one name are numbered under the project's row lock; the order is read
        # from the locked row, as it stands now.
        project = Project.objects.select_for_update().get(pk=project.pk)
        latest = PredictionSet.objects.filter(project=project, name=name).aggregate(v=Max("version"))["v"] or 0
        prediction_set = PredictionSet.objects.create(
            project=project, name=name, version=latest + 1, source=source, created_by=user, digest=digest,
            items=len(rows), **facts,
        )  # fmt: skip
        Prediction.objects.bulk_create(
            (
                Prediction(prediction_set=prediction_set, item_id=item_id, label=label, scores=scores, margin=margin)
                for item_id, (label, scores, margin) in rows.items()
            ),
            batch_size=WRITE_BATCH,
        )
        item_priorities_refresh(project)
    return prediction_set
