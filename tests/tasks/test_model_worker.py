"""The built-in model on a real worker (docs/kinds.md "Model in the loop"): trained on the
project's decided items, its predictions of the undecided ones stored as a new version of
its set, scored on the dev split and listed beside the evaluations; retrained after
`retrain_every` new decisions; the job run twice stores one set."""

import pytest

from tests.conftest import wait_until

URL = "/api/projects/fa-nli/predictions/"
# The hypothesis says which label: a pattern the character n-grams pick up.
CUE = {"entailment": "بله درست است", "neutral": "شاید باشد", "contradiction": "هرگز نبود"}
LABELS = tuple(CUE)


def _item(project, key, label, *, split="", status="accepted", position=0):
    from annotation.models import Item

    return Item.objects.create(
        project=project,
        external_id=key,
        position=position,
        split=split,
        status=status,
        gold_label=label if status == "accepted" else "",
        payload={"premise": f"جمله شماره {key} درباره شهر", "hypothesis": f"{CUE[label]} {key}"},
    )


def _world(project):
    position = 0
    for i in range(30):
        _item(project, f"tr{i}", LABELS[i % 3], position=(position := position + 1))
    for i in range(9):
        _item(project, f"dev{i}", LABELS[i % 3], split="dev", position=(position := position + 1))
    for i in range(6):
        _item(project, f"open{i}", LABELS[i % 3], status="open", position=(position := position + 1))


def _decide(item_key, label):
    from django.db import transaction

    from annotation.models import Item
    from annotation.services.decisions import RANK_ADJUDICATION, decision_record

    with transaction.atomic():
        item = Item.objects.select_for_update().get(external_id=item_key)
        decision_record(item=item, method="adjudication", rank=RANK_ADJUDICATION, value=label, status="accepted")


@pytest.mark.worker
@pytest.mark.postgres
def test_the_model_trains_predicts_scores_and_retrains_on_a_real_worker(
    transactional_db, celery_worker, nli_project, client_for
):
    from django.contrib.auth import get_user_model

    from annotation.models import Item, Job, Prediction, PredictionSet
    from annotation.release.baseline_model import model_train_job

    _world(nli_project)
    client = client_for(get_user_model().objects.get(username="sup"))
    response = client.post(f"{URL}train/")
    assert response.status_code == 202, response.content
    job_id = response.json()["job"]
    final = wait_until(
        lambda: (body := client.get(f"/api/jobs/{job_id}/").json())["status"] in ("done", "failed") and body,
        timeout=120,
    )
    assert final["status"] == "done", final
    sets = client.get(URL).json()
    assert [(s["name"], s["version"], s["source"], s["items"], s["trained_on"]) for s in sets] == [
        ("built-in baseline", 1, "built_in", 6, 30)
    ]
    # Undecided items only, each with its probabilities; the cue is learnt.
    predictions = {p.item.external_id: p for p in Prediction.objects.select_related("item")}
    assert sorted(predictions) == [f"open{i}" for i in range(6)]
    right = sum(p.label == LABELS[int(key[-1]) % 3] for key, p in predictions.items())
    assert right >= 5, {key: p.label for key, p in predictions.items()}
    assert all(abs(sum(p.scores.values()) - 1) < 1e-3 and 0 <= p.margin <= 1 for p in predictions.values())
    # Scored on the dev split, and on the leaderboard by itself.
    assert sets[0]["figures"]["split"] == "dev" and sets[0]["figures"]["items"] == 9
    assert sets[0]["figures"]["accuracy"] >= 0.8
    board = client.get("/api/projects/fa-nli/evaluations/").json()
    assert [(e["name"], e["split"], e["status"]) for e in board] == [("built-in baseline v1", "dev", "done")]
    # Run again (a redelivered message): the same set, nothing more stored.
    again = model_train_job(Job.objects.get(pk=job_id))
    assert again["prediction_set"] == sets[0]["id"] and PredictionSet.objects.count() == 1

    # retrain_every: the third new decision queues the next version.
    patched = client.patch("/api/projects/fa-nli/", {"settings": {"retrain_every": 3}}, format="json")
    assert patched.status_code == 200, patched.content
    _decide("open0", "entailment")
    _decide("open1", "neutral")
    assert not Job.objects.filter(kind="model_train").exclude(pk=job_id).exists()
    _decide("open2", "contradiction")
    second = wait_until(lambda: PredictionSet.objects.filter(source="built_in", version=2).first(), timeout=120)
    assert second.trained_on == 33 and second.items == 3
    assert set(Prediction.objects.filter(prediction_set=second).values_list("item__external_id", flat=True)) == {
        "open3",
        "open4",
        "open5",
    }
    assert Item.objects.filter(status="accepted").count() == 42  # the model never decides anything


@pytest.mark.django_db
def test_training_is_refused_where_there_is_no_model(make_user, client_for, nli_project):
    from annotation.models import Job, Membership
    from annotation.services.projects import project_create

    sup = make_user("s")
    project = project_create(
        actor=make_user("admin", staff=True), slug="sums", name="S", kind="summary_rating", language="he"
    )
    Membership.objects.create(project=project, user=sup, role="supervisor", status="active")
    response = client_for(sup).post("/api/projects/sums/predictions/train/")
    assert response.status_code == 400 and response.json()["errors"][0]["field"] == "kind"
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_a_second_training_run_waits_for_the_first(nli_project, client_for, settings):
    from django.contrib.auth import get_user_model

    from annotation.models import Job

    settings.CELERY_TASK_ALWAYS_EAGER = False
    client = client_for(get_user_model().objects.get(username="sup"))
    Job.objects.create(kind="model_train", project=nli_project, status="running")
    response = client.post(f"{URL}train/")
    assert response.status_code == 409, response.content
    assert Job.objects.filter(kind="model_train").count() == 1


@pytest.mark.django_db
def test_too_few_decided_items_fail_the_job_saying_why(nli_project):
    from annotation.models import PredictionSet
    from annotation.release.baseline_model import model_train_job, model_train_start

    _item(nli_project, "only", "entailment")
    _item(nli_project, "open", "neutral", status="open")
    result = model_train_job(model_train_start(nli_project))
    assert result["errors"][0]["field"] == "project"
    assert not PredictionSet.objects.exists()
