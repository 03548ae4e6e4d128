"""LCHAIM Table 2 for label_test projects: each annotator's and the group's accuracy and
per-class P/R/F1 against the hidden gold, through GET /report/ and the results page,
checked against scikit-learn run here on the same labels."""

import csv
import io
import json
from collections import Counter

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, f1_score, precision_recall_fscore_support

pytestmark = pytest.mark.django_db

LABELS = ["entailment", "neutral", "contradiction"]


def import_rows(project, rows: list[dict], user) -> None:
    """Import `rows` as a JSONL file through the import service."""
    from annotation.services.imports import items_import

    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()
    items_import(project=project, data=data, fmt="jsonl", user=user)


@pytest.fixture
def setup(make_user, client_for):
    from annotation.models import Membership
    from annotation.services.projects import project_create

    admin = make_user("root", staff=True)
    project = project_create(
        actor=admin,
        slug="he-test",
        name="Human baseline",
        kind="label_test",
        language="he",
        settings={"labels_per_item": 4},
    )
    rng = np.random.default_rng(0)
    gold = {f"t{i}": LABELS[int(rng.integers(0, 3))] for i in range(30)}
    rows = [{"id": k, "premise": f"הנחה {k}", "hypothesis": f"השערה {k}", "label": v} for k, v in gold.items()]
    import_rows(project, rows, admin)
    users = {}
    for name in ("h1", "h2", "h3", "h4"):
        users[name] = make_user(name)
        Membership.objects.create(project=project, user=users[name], role="annotator", status="active")
    sup = make_user("sup")
    Membership.objects.create(project=project, user=sup, role="supervisor", status="active")
    return {"gold": gold, "users": users, "client_for": client_for, "sup": sup, "root": client_for(admin)}


def test_table2_matches_sklearn(setup, client):
    gold, rng = setup["gold"], np.random.default_rng(3)
    accuracy = {"h1": 0.9, "h2": 0.8, "h3": 0.6, "h4": 0.5}
    # Each tester's labels are drawn per item up front, so that they do not depend on the
    # order in which `next` happens to serve the items (and every figure below is fixed).
    planned = {
        name: {
            item_id: gold[item_id]
            if rng.random() < p
            else LABELS[(LABELS.index(gold[item_id]) + int(rng.integers(1, 3))) % 3]
            for item_id in sorted(gold)
        }
        for name, p in accuracy.items()
    }
    given: dict[str, dict[str, str]] = {name: {} for name in accuracy}
    for name in accuracy:
        client_ = setup["client_for"](setup["users"][name])
        while (response := client_.get("/api/projects/he-test/next/")).status_code == 200:
            body = response.json()
            assert "label" not in body["item"]["payload"]  # the gold stays hidden
            label = planned[name][body["item"]["external_id"]]
            given[name][body["item"]["external_id"]] = label
            assert (
                client_.post(
                    f"/api/assignments/{body['assignment']}/submit/", {"value": {"label": label}}, format="json"
                ).status_code
                == 201
            )
    report = setup["root"].get("/api/projects/he-test/report/").json()["label_test"]
    by_name = {row["annotator"]: row for row in report["annotators"]}
    assert set(by_name) == set(accuracy)
    for name, labels in given.items():
        ids = sorted(labels)
        y_true, y_pred = [gold[i] for i in ids], [labels[i] for i in ids]
        p, r, f, s = precision_recall_fscore_support(y_true, y_pred, labels=LABELS, zero_division=0)
        row = by_name[name]
        assert row["n"] == 30 and row["accuracy"] == pytest.approx(accuracy_score(y_true, y_pred))
        assert row["f1"] == pytest.approx(f1_score(y_true, y_pred, labels=LABELS, average="macro", zero_division=0))
        for k, label in enumerate(LABELS):
            assert row["per_class"][label] == pytest.approx(
                {"precision": p[k], "recall": r[k], "f1": f[k], "support": s[k]}
            )
    # The group (Table 2's "Human" row): the mean of the testers' own figures.
    group = report["group"]
    assert group["testers"] == 4 and group["n"] == 30
    assert group["accuracy"] == pytest.approx(np.mean([by_name[n]["accuracy"] for n in accuracy]))
    assert group["f1"] == pytest.approx(np.mean([by_name[n]["f1"] for n in accuracy]))
    for label in LABELS:
        for field in ("precision", "recall", "f1"):
            assert group["per_class"][label][field] == pytest.approx(
                np.mean([by_name[n]["per_class"][label][field] for n in accuracy])
            )
    # The majority label per item stays as an extra line; ties have no answer and count as wrong.
    y_true, y_pred, ties = [], [], 0
    for item_id in sorted(gold):
        top = Counter(given[n][item_id] for n in given).most_common()
        tie = len(top) > 1 and top[0][1] == top[1][1]
        ties += tie
        y_true.append(gold[item_id])
        y_pred.append("no answer" if tie else top[0][0])
    majority = report["majority"]
    assert majority["ties"] == ties and ties > 0
    assert majority["accuracy"] == pytest.approx(accuracy_score(y_true, y_pred))
    assert majority["accuracy"] != pytest.approx(group["accuracy"])
    p, r, f, _s = precision_recall_fscore_support(y_true, y_pred, labels=LABELS, zero_division=0)
    for k, label in enumerate(LABELS):
        assert majority["per_class"][label]["precision"] == pytest.approx(p[k])
        assert majority["per_class"][label]["recall"] == pytest.approx(r[k])
        assert majority["per_class"][label]["f1"] == pytest.approx(f[k])

    client.force_login(setup["sup"])
    page = client.get("/p/he-test/lchaim/")
    assert page.status_code == 200 and b'id="table2"' in page.content
    text = client.get("/p/he-test/lchaim/table2.csv").content.decode("utf-8")
    rows = list(csv.DictReader(io.StringIO(text.removeprefix("\ufeff"))))
    assert [r["annotator"] for r in rows] == ["h1", "h2", "h3", "h4", "(mean of testers)", "(majority)"]
    assert float(rows[0]["accuracy"]) == pytest.approx(by_name["h1"]["accuracy"])
    assert float(rows[4]["accuracy"]) == pytest.approx(group["accuracy"])
    assert float(rows[5]["accuracy"]) == pytest.approx(majority["accuracy"])
    assert json.loads(client.get("/p/he-test/lchaim/table2.json").content)["majority"]["ties"] == ties


def test_table2_is_empty_before_any_label_and_hidden_from_annotators(setup):
    report = setup["root"].get("/api/projects/he-test/report/").json()["label_test"]
    assert report["annotators"] == [] and report["group"]["n"] == 0 and report["items_with_gold"] == 30
    assert report["group"]["testers"] == 0 and report["group"]["accuracy"] is None and report["majority"]["n"] == 0
    rater = setup["client_for"](setup["users"]["h1"])
    assert rater.get("/api/projects/he-test/report/").status_code == 403


def test_label_test_defaults_to_four_testers_per_item(make_user, client_for):
    """LCHAIM §3.2: 4 testers each label every sampled item."""
    from annotation.models import Project

    root = client_for(make_user("admin", staff=True))
    made = root.post(
        "/api/projects/",
        {"slug": "baseline", "name": "Baseline", "kind": "label_test", "language": "he"},
        format="json",
    )
    assert made.status_code == 201, made.content
    assert made.json()["settings"]["labels_per_item"] == 4
    assert Project.objects.get(slug="baseline").settings["labels_per_item"] == 4
