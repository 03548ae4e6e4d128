"""An evaluation's figures sliced by an item attribute (docs/api.md "Dataset release"):
HeQ Tables 6-7 by source on the shipped validation sample, FarsTail's test sample by its
published hard(overlap) column and by split; bad slice names are a 400 naming `slice`."""

import json
from collections import Counter

import pytest

from tests.release.bias_setup import farstail_release, upload
from tests.release.test_bias_api import read_rows, sup  # noqa: F401 (sup: the fixture)
from tests.release.test_evaluation_data import evaluate, heq_sample_project

pytestmark = pytest.mark.django_db
EVALUATIONS = "/api/projects/fa-nli/evaluations/"


def entailment_everywhere(items) -> str:
    return "\n".join(json.dumps({"id": item.external_id, "prediction": "entailment"}) for item in items)


def test_farstail_sliced_by_its_hard_overlap_column_and_by_split(sup):
    release = farstail_release(sup, "fa-nli")
    items = release["test"]
    detail = evaluate(sup, "fa-nli", "p.jsonl", entailment_everywhere(items))
    sliced = sup.get(f"{EVALUATIONS}{detail['id']}/?slice=hard(overlap)")
    assert sliced.status_code == 200, sliced.content
    body = sliced.json()
    assert body["slice"] == "hard(overlap)" and body["figures"] == detail["figures"]
    published = [row[4] for row in read_rows("Test-word.csv")]
    assert set(body["slices"]) == {"0", "1"}
    for value, row in body["slices"].items():
        mine = [item for item, flag in zip(items, published) if flag == value]
        assert row["items"] == len(mine)
        accuracy = sum(item.gold_label == "entailment" for item in mine) / len(mine)
        assert row["accuracy"] == pytest.approx(accuracy)
        # The slice's accuracy is the subset figure of Table 5 (easy = 0, hard = 1).
        subset = "hard" if value == "1" else "easy"
        assert row["accuracy"] == pytest.approx(detail["figures"]["subsets"]["hard(overlap)"][subset]["value"])
        assert set(row) >= {"items", "accuracy", "macro_f1", "weighted_f1", "ci"}
        for figure in ("accuracy", "macro_f1"):
            low, high = row["ci"][figure]
            assert low <= row[figure] <= high
    # Seeded: asking again gives the same intervals.
    assert sup.get(f"{EVALUATIONS}{detail['id']}/?slice=hard(overlap)").json()["slices"] == body["slices"]
    by_split = sup.get(f"{EVALUATIONS}{detail['id']}/?slice=split").json()["slices"]
    assert list(by_split) == ["test"] and by_split["test"]["items"] == 61
    assert by_split["test"]["accuracy"] == pytest.approx(detail["figures"]["accuracy"]["value"])


@pytest.mark.parametrize("value", ["nope", "", "hard(overlap) ", "x" * 300, "payload"])
def test_an_unknown_slice_is_400_naming_slice(sup, value):
    release = farstail_release(sup, "fa-nli")
    detail = evaluate(sup, "fa-nli", "p.jsonl", entailment_everywhere(release["test"]))
    response = sup.get(f"{EVALUATIONS}{detail['id']}/", {"slice": value})
    assert response.status_code == 400, response.content
    assert response.json()["errors"][0]["field"] == "slice"


def test_a_queued_evaluation_cannot_be_sliced_yet(sup):
    release = farstail_release(sup, "fa-nli")
    response = sup.post(
        EVALUATIONS,
        {"file": upload("p.jsonl", entailment_everywhere(release["test"]).encode()), "name": "m"},
        format="multipart",
    )
    assert response.status_code == 202
    sliced = sup.get(f"{EVALUATIONS}{response.json()['id']}/?slice=split")
    assert sliced.status_code == 409 and sliced.json()["errors"][0]["field"] == "slice"


def test_heq_scores_by_source_as_tables_6_and_7(make_user, client_for):
    _project, client, sample = heq_sample_project("heq-src", make_user, client_for)
    questions = [(article["source"], q) for article, _p, q in sample]
    # Right on every Wikipedia question, silent on every Geektime one.
    predictions = {
        q["id"]: ("" if q["is_impossible"] else q["answers"][0]["text"]) if source == "Wikipedia" else ""
        for source, q in questions
    }
    detail = evaluate(client, "heq-src", "p.json", json.dumps(predictions, ensure_ascii=False))
    slices = client.get(f"/api/projects/heq-src/evaluations/{detail['id']}/?slice=source").json()["slices"]
    counts = Counter(source for source, _ in questions)
    assert {value: row["items"] for value, row in slices.items()} == dict(counts)
    assert slices["Wikipedia"]["exact_match"] == 1.0 and slices["Wikipedia"]["ci"]["f1"] == [1.0, 1.0]
    geektime = [q for source, q in questions if source == "Geektime"]
    assert slices["Geektime"]["exact_match"] == pytest.approx(sum(q["is_impossible"] for q in geektime) / len(geektime))
    low, high = slices["Geektime"]["ci"]["exact_match"]
    assert low <= slices["Geektime"]["exact_match"] <= high
