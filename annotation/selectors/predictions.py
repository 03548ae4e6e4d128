"""Reads of a project's prediction sets (docs/kinds.md "Model in the loop"): the list of
sets, and the latest set's prediction of given items for the supervisor's pages."""

from __future__ import annotations

from django.db.models import Subquery

from annotation.access import access_project_for_supervisor
from annotation.models import Prediction, PredictionSet


def prediction_set_summary(prediction_set: PredictionSet) -> dict:
    return {
        "id": prediction_set.pk,
        "name": prediction_set.name,
        "version": prediction_set.version,
        "source": prediction_set.source,
        "created_at": prediction_set.created_at,
        "items": prediction_set.items,
        "job": prediction_set.job_id,
        "trained_on": prediction_set.trained_on,
        "figures": prediction_set.figures,
    }


def prediction_sets_for_project(*, user, slug: str) -> list[dict]:
    """Every set of the project, latest first (supervisors only)."""
    project = access_project_for_supervisor(user, slug)
    return [prediction_set_summary(s) for s in PredictionSet.objects.filter(project=project).order_by("-id")]


def latest_prediction_set(project) -> PredictionSet | None:
    return PredictionSet.objects.filter(project=project).order_by("-id").first()


def latest_predictions_of_items(project, item_ids: list[int]) -> tuple[PredictionSet | None, dict[int, Prediction]]:
    """The project's latest set and its predictions of `item_ids` (two queries)."""
    latest = latest_prediction_set(project)
    if latest is None or not item_ids:
        return latest, {}
    found = Prediction.objects.filter(prediction_set=latest, item_id__in=item_ids)
    return latest, {prediction.item_id: prediction for prediction in found}


def suggestion_for_item(project, settings: dict, item_id: int) -> dict | None:
    """The suggestion an annotator of the item sees where the project's `suggestions`
    setting is on: the latest set's label and its probability (null without scores), or
    None (setting off, no set, or the latest set does not predict the item). One statement
    on the (item, set) index, whatever the number of sets or predictions."""
    if not settings.get("suggestions"):
        return None
    latest = PredictionSet.objects.filter(project=project).order_by("-id").values("id")[:1]
    found = (
        Prediction.objects.filter(item_id=item_id, prediction_set_id=Subquery(latest))
        .values_list("label", "scores")
        .first()
    )
    if found is None:
        return None
    label, scores = found
    probability = scores.get(label) if isinstance(scores, dict) else None
    return {"label": label, "probability": probability}
