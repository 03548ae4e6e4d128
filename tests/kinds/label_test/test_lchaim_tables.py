"""LCHAIM §2 and §5 on the shipped LCHAIM dev sample, as a label_test project: the Jaccard
overlap of premise and hypothesis per class, and accuracy by TTR bin and by reasoning type
(an `extra` field, as the ConTRoL files carry it) — for the testers (GET /report/) and for
a model (an evaluation sliced through ?slice=)."""

import json
from pathlib import Path

import pytest

from annotation.metrics.lexical import jaccard, ttr_bin, type_token_ratio
from annotation.metrics.overlap import words
from tests.kinds.label_test.test_results import import_rows
from tests.kinds.qa.test_api import upload
from tests.release.test_evaluation_data import run_latest_job

pytestmark = pytest.mark.django_db

SAMPLE = Path(__file__).resolve().parents[4] / "shared" / "data" / "lchaim" / "aws_heb_dev_sample.json"
LONG = {"e": "entailment", "n": "neutral", "c": "contradiction"}
TYPES = ("temporal", "coreferential", "logical", "analytical")


def records() -> list[dict]:
    rows = json.loads(SAMPLE.read_text(encoding="utf-8"))
    # The sample has no reasoning type; one is given by uid so the slice can be checked.
    return [
        {
            "id": row["uid"],
            "premise": row["premise"],
            "hypothesis": row["hypothesis"],
            "label": LONG[row["label"]],
            "extra": {"type": TYPES[int(row["uid"].split("_")[1]) % 4]},
        }
        for row in rows
    ]


@pytest.fixture
def lchaim(make_user, client_for):
    from annotation.models import Membership
    from annotation.services.projects import project_create

    admin = make_user("root", staff=True)
    project = project_create(
        actor=admin, slug="lchaim", name="LCHAIM", kind="label_test", language="he", settings={"labels_per_item": 2}
    )
    rows = records()
    import_rows(project, rows, admin)
    testers = {}
    for name in ("h1", "h2"):
        tester = make_user(name)
        Membership.objects.create(project=project, user=tester, role="annotator", status="active")
        testers[name] = client_for(tester)
    sup = make_user("sup")
    Membership.objects.create(project=project, user=sup, role="supervisor", status="active")
    return {"rows": rows, "testers": testers, "sup": client_for(sup), "root": client_for(admin)}


def expected_bins(rows):
    return [ttr_bin(type_token_ratio(words(r["premise"]) + words(r["hypothesis"]))) for r in rows]


def test_testers_jaccard_per_class_and_accuracy_by_ttr_bin_and_reasoning_type(lchaim):
    rows = {r["id"]: r for r in lchaim["rows"]}
    # h1 is always right; h2 always answers entailment.
    for name, client in lchaim["testers"].items():
        while (response := client.get("/api/projects/lchaim/next/")).status_code == 200:
            body = response.json()
            gold = rows[body["item"]["external_id"]]["label"]
            label = gold if name == "h1" else "entailment"
            submitted = client.post(
                f"/api/assignments/{body['assignment']}/submit/", {"value": {"label": label}}, format="json"
            )
            assert submitted.status_code == 201
    report = lchaim["root"].get("/api/projects/lchaim/report/").json()["label_test"]
    # §2: mean Jaccard per class, recomputed here from the sample.
    for label, row in report["jaccard_by_class"].items():
        mine = [r for r in lchaim["rows"] if r["label"] == label]
        assert row["items"] == len(mine)
        assert row["jaccard"] == pytest.approx(
            sum(jaccard(words(r["premise"]), words(r["hypothesis"])) for r in mine) / len(mine)
        )
    assert set(report["jaccard_by_class"]) == {"entailment", "neutral", "contradiction"}
    # §5.1 and §5.2: an item's accuracy is 1 when gold is entailment (both right), else 0.5.
    ordered = lchaim["rows"]
    for attribute, values in (("ttr_bin", expected_bins(ordered)), ("type", [r["extra"]["type"] for r in ordered])):
        slices = report["slices"][attribute]
        assert sum(s["items"] for s in slices.values()) == 64
        for value, row in slices.items():
            mine = [r for r, v in zip(ordered, values) if v == value]
            assert row["items"] == len(mine), (attribute, value)
            assert row["accuracy"] == pytest.approx(
                sum(1.0 if r["label"] == "entailment" else 0.5 for r in mine) / len(mine)
            )
            low, high = row["ci"]["accuracy"]
            assert len(mine) == 1 or low <= row["accuracy"] <= high


def test_a_models_accuracy_by_ttr_bin_and_reasoning_type(lchaim):
    from annotation.models import Item

    Item.objects.filter(project__slug="lchaim").update(split="test")
    sup = lchaim["sup"]
    rows = lchaim["rows"]
    predictions = "".join(json.dumps({"id": r["id"], "prediction": "entailment"}) + "\n" for r in rows)
    response = sup.post(
        "/api/projects/lchaim/evaluations/", {"file": upload("p.jsonl", predictions), "name": "m"}, format="multipart"
    )
    assert response.status_code == 202, response.content
    run_latest_job()
    url = f"/api/projects/lchaim/evaluations/{response.json()['id']}/"
    for attribute, values in (("ttr_bin", expected_bins(rows)), ("type", [r["extra"]["type"] for r in rows])):
        slices = sup.get(url, {"slice": attribute}).json()["slices"]
        assert set(slices) == set(values)
        for value, row in slices.items():
            mine = [r for r, v in zip(rows, values) if v == value]
            assert row["items"] == len(mine)
            assert row["accuracy"] == pytest.approx(sum(r["label"] == "entailment" for r in mine) / len(mine))
