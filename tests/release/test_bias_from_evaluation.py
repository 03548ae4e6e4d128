"""The bias analysis takes its hypothesis-only hard flags from an uploaded evaluation's
predictions (a model trained elsewhere, FarsTail's fine-tuned mBERT), on the shipped Val (as
train) and Test samples; an evaluation of another project or an unknown id is a 400
naming `evaluation`, nothing stored."""

import json

import pytest

from tests.release.bias_setup import farstail_release, upload
from tests.release.test_bias_api import URL, read_rows, run, sup  # noqa: F401 (sup: the fixture)
from tests.release.test_evaluation_data import run_latest_job, supervisor_client

pytestmark = pytest.mark.django_db
WRONG = {"entailment": "neutral", "neutral": "contradiction", "contradiction": "entailment"}


def evaluate(client, slug: str, predictions: dict) -> int:
    body = "\n".join(json.dumps({"id": key, "prediction": value}) for key, value in predictions.items())
    response = client.post(
        f"/api/projects/{slug}/evaluations/",
        {"file": upload("p.jsonl", body.encode()), "name": "mbert"},
        format="multipart",
    )
    assert response.status_code == 202, response.content
    run_latest_job()
    return response.json()["id"]


def test_flags_from_a_model_that_reproduces_the_published_column(sup):
    release = farstail_release(sup, "fa-nli")
    items = release["test"]
    published = [row[3] == "1" for row in read_rows("Test-word.csv")]
    # A model wrong exactly where the file says the hypothesis-only model was.
    evaluation = evaluate(
        sup,
        "fa-nli",
        {i.external_id: WRONG[i.gold_label] if hard else i.gold_label for i, hard in zip(items, published)},
    )
    ours = run(sup)
    theirs = run(sup, {"evaluation": evaluation})
    assert ours["flags"]["hard(hypothesis)"]["agreement_with_imported"] < 1.0
    flags = theirs["flags"]["hard(hypothesis)"]
    assert flags["agreement_with_imported"] == 1.0
    assert flags["hard"] == sum(published) and flags["items"] == 61
    assert flags["evaluation"] == {"id": evaluation, "name": "mbert"}
    # The overlap model's flags are still Mashov's; the crosstab of computed flags is now
    # the one of the file's columns wherever the overlap flags agree too.
    assert theirs["flags"]["hard(overlap)"] == ours["flags"]["hard(overlap)"]
    for item, hard in zip(items, published):
        item.refresh_from_db()
        assert item.computed["computed_hard(hypothesis)"] is hard
        assert item.payload["extra"]["hard(hypothesis)"] == ("1" if hard else "0")


@pytest.mark.parametrize("value", [999_999, 0, -1, True, "1", 1.5, 2**63, [1]])
def test_an_unknown_or_malformed_evaluation_is_400_naming_it(sup, value):
    from annotation.models import Job

    farstail_release(sup, "fa-nli")
    response = sup.post(URL, {"evaluation": value}, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["errors"][0]["field"] == "evaluation"
    assert not Job.objects.filter(kind="bias").exists()


def test_an_evaluation_of_another_project_is_400_naming_it(sup, make_user, client_for):
    from annotation.models import Item, Job

    farstail_release(sup, "fa-nli")
    other, client = supervisor_client("other-nli", "nli_relabel", "fa", make_user, client_for)
    Item.objects.create(
        project=other,
        external_id="x1",
        position=0,
        split="test",
        status="accepted",
        gold_label="entailment",
        payload={"premise": "a", "hypothesis": "b"},
    )
    foreign = evaluate(client, "other-nli", {"x1": "entailment"})
    response = sup.post(URL, {"evaluation": foreign}, format="json")
    assert response.status_code == 400 and response.json()["errors"][0]["field"] == "evaluation"
    assert not Job.objects.filter(kind="bias").exists()


def test_an_evaluation_still_queued_is_400_naming_it(sup):
    from annotation.models import Job

    release = farstail_release(sup, "fa-nli")
    body = "\n".join(json.dumps({"id": i.external_id, "prediction": i.gold_label}) for i in release["test"])
    queued = sup.post(
        "/api/projects/fa-nli/evaluations/", {"file": upload("p.jsonl", body.encode()), "name": "m"}, format="multipart"
    )
    assert queued.status_code == 202
    response = sup.post(URL, {"evaluation": queued.json()["id"]}, format="json")
    assert response.status_code == 400 and response.json()["errors"][0]["field"] == "evaluation"
    assert not Job.objects.filter(kind="bias").exists()
