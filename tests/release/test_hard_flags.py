"""FarsTail Table 5 on the published partition: the evaluation's easy/hard subsets read the
file's hard(...) columns by default and the bias analysis's computed flags on request, each
kept apart (docs/api.md "Dataset release"); on the shipped Val (as train) and Test samples."""

import json

import pytest

from tests.release.bias_setup import farstail_release, upload
from tests.release.test_bias_api import read_rows, sup  # noqa: F401 (sup: the fixture)
from tests.release.test_bias_api import run as run_bias
from tests.release.test_evaluation_data import run_latest_job

pytestmark = pytest.mark.django_db
EVALUATIONS = "/api/projects/fa-nli/evaluations/"


@pytest.fixture
def analysed(sup):
    release = farstail_release(sup, "fa-nli")
    run_bias(sup)
    for item in release["test"]:
        item.refresh_from_db()
    return release


def predictions_file(items) -> bytes:
    # A model that always answers entailment: right on exactly the entailment items.
    return "\n".join(json.dumps({"id": item.external_id, "prediction": "entailment"}) for item in items).encode()


def evaluate(client, items, **fields) -> dict:
    response = client.post(
        EVALUATIONS, {"file": upload("p.jsonl", predictions_file(items)), "name": "m", **fields}, format="multipart"
    )
    assert response.status_code == 202, response.content
    run_latest_job()
    return client.get(f"{EVALUATIONS}{response.json()['id']}/").json()


def subset_accuracy(items, flags) -> dict:
    out = {}
    for name, hard in (("easy", False), ("hard", True)):
        chosen = [item for item, flag in zip(items, flags) if flag is hard]
        out[name] = (len(chosen), sum(item.gold_label == "entailment" for item in chosen) / len(chosen))
    return out


@pytest.mark.parametrize("column", ["hard(overlap)", "hard(hypothesis)"])
def test_subsets_read_the_files_columns_by_default_and_the_computed_flags_on_request(sup, analysed, column):
    items = analysed["test"]
    published = [row[3 if column == "hard(hypothesis)" else 4] == "1" for row in read_rows("Test-word.csv")]
    computed = [item.computed[f"computed_{column}"] for item in items]
    # The two sources disagree on some items of the sample, so the choice shows.
    assert published != computed
    for fields, flags, source in (({}, published, "file"), ({"hard_flags": "computed"}, computed, "computed")):
        detail = evaluate(sup, items, **fields)
        assert detail["options"] == {"hard_flags": source}
        expected = subset_accuracy(items, flags)
        for subset, (count, accuracy) in expected.items():
            assert detail["figures"]["subset_items"][column][subset] == count, (source, subset)
            assert detail["figures"]["subsets"][column][subset]["value"] == pytest.approx(accuracy)


def test_the_file_choice_falls_back_to_computed_flags_where_the_file_has_none(sup, nli_project):
    from annotation.models import Item

    release = farstail_release(sup, "fa-nli")
    # The Val sample (no hard columns) becomes the test split, the Test sample the train.
    Item.objects.filter(pk__in=[item.pk for item in release["test"]]).update(split="train")
    Item.objects.filter(pk__in=[item.pk for item in release["train"]]).update(split="test")
    run_bias(sup)
    items = [Item.objects.get(pk=item.pk) for item in release["train"]]
    detail = evaluate(sup, items)
    computed = [item.computed["computed_hard(overlap)"] for item in items]
    assert detail["options"] == {"hard_flags": "file"}
    assert detail["figures"]["subset_items"]["hard(overlap)"]["hard"] == sum(computed)


@pytest.mark.parametrize("value", ["imported", "", "FILE"])
def test_an_unknown_hard_flags_choice_is_400_naming_it_and_stores_nothing(sup, analysed, value):
    from annotation.models import Evaluation, Job

    response = sup.post(
        EVALUATIONS,
        {"file": upload("p.jsonl", predictions_file(analysed["test"])), "name": "m", "hard_flags": value},
        format="multipart",
    )
    assert response.status_code == 400, response.content
    assert response.json()["errors"][0]["field"] == "hard_flags"
    assert not Evaluation.objects.exists() and not Job.objects.filter(kind="evaluation").exists()


def test_a_kind_without_hard_flags_refuses_the_choice(make_user, client_for):
    from tests.release.test_evaluation_data import supervisor_client

    _project, client = supervisor_client("heq-flags", "qa_authoring", "he", make_user, client_for)
    response = client.post(
        "/api/projects/heq-flags/evaluations/",
        {"file": upload("p.json", b"{}"), "name": "m", "hard_flags": "file"},
        format="multipart",
    )
    assert response.status_code == 400, response.content
    assert response.json()["errors"][0]["field"] == "hard_flags"
