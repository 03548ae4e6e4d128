"""Model evaluation through HTTP (docs/api.md "Dataset release"): NLI figures in Table 5's shape,
every bad input a 400 naming row and field with nothing stored, 409 while one runs, the same
file giving the same figures, and the paired comparison. Jobs run in-process here
(`run_job`); test_evaluation_worker.py runs them on a real worker."""

import json

import pytest

from tests.kinds.qa.test_api import jsonl, upload

pytestmark = pytest.mark.django_db

URL = "/api/projects/fa-nli/evaluations/"
# id, gold, split, computed hard(overlap), imported hard(overlap), imported hard(hypothesis)
ITEMS = [
    ("t1", "entailment", "test", None, "1", "0"),
    ("t2", "entailment", "test", False, "1", "0"),  # by default the file's column wins
    ("t3", "neutral", "test", True, "0", "1"),
    ("t4", "neutral", "test", None, "0", "1"),
    ("t5", "contradiction", "test", None, "", ""),  # no flag: in neither subset
    ("t6", "contradiction", "test", None, "1", "0"),
    ("d1", "entailment", "dev", None, "", ""),
]
# A model's answers on the six test items: t1, t3, t5, t6 right; t2, t4 wrong.
PREDICTIONS = {
    "t1": "entailment",
    "t2": "neutral",
    "t3": "neutral",
    "t4": "contradiction",
    "t5": "contradiction",
    "t6": "contradiction",
}


def prediction_rows(predictions=PREDICTIONS):
    return [{"id": key, "prediction": value} for key, value in predictions.items()]


@pytest.fixture
def nli(nli_project, make_user, client_for):
    from django.contrib.auth import get_user_model

    from annotation.models import Item

    for position, (key, gold, split, computed, overlap, hypothesis) in enumerate(ITEMS):
        extra = {name: value for name, value in (("hard(overlap)", overlap), ("hard(hypothesis)", hypothesis)) if value}
        Item.objects.create(
            project=nli_project,
            external_id=key,
            position=position,
            split=split,
            status="accepted",
            gold_label=gold,
            payload={"premise": f"پیش‌فرض {key}", "hypothesis": "فرضیه", **({"extra": extra} if extra else {})},
            computed={} if computed is None else {"computed_hard(overlap)": computed},
        )
    # An undecided test item has no gold and is not scored; a removed one neither.
    Item.objects.create(
        project=nli_project, external_id="open", split="test", payload={"premise": "p", "hypothesis": "h"}
    )
    Item.objects.create(
        project=nli_project,
        external_id="gone",
        split="test",
        status="removed",
        gold_label="neutral",
        payload={"premise": "p", "hypothesis": "h"},
    )
    users = get_user_model().objects
    return {
        "sup": client_for(users.get(username="sup")),
        "rev": client_for(users.get(username="rev")),
        "ann": client_for(users.get(username="ann1")),
    }


def post(client, text, *, name="model-a", filename="predictions.jsonl", **fields):
    return client.post(URL, {"file": upload(filename, text), "name": name, **fields}, format="multipart")


def run_latest_job():
    from annotation.models import Job
    from annotation.tasks import run_job

    job = Job.objects.filter(kind="evaluation").latest("id")
    run_job(job.pk)
    job.refresh_from_db()
    return job


def stored() -> tuple[int, int]:
    from annotation.models import Evaluation, Job

    return Evaluation.objects.count(), Job.objects.count()


def test_nli_figures_have_table_5_shape_with_intervals(nli):
    response = post(nli["sup"], jsonl(prediction_rows()))
    assert response.status_code == 202, response.content
    body = response.json()
    assert set(body) == {"job", "id"}
    job = run_latest_job()
    assert job.status == "done", job.error
    detail = nli["rev"].get(f"{URL}{body['id']}/").json()
    assert detail["status"] == "done" and detail["split"] == "test" and detail["items"] == 6
    figures = detail["figures"]
    assert figures["accuracy"]["value"] == pytest.approx(4 / 6)
    for figure in (figures["accuracy"], figures["macro_f1"], figures["per_class"]["neutral"]["recall"]):
        assert figure["ci_low"] <= figure["value"] <= figure["ci_high"]
    # gold rows e n c × predicted columns: e→(e, n), n→(n, c), c→(c, c)
    assert figures["confusion"] == {
        "labels": ["entailment", "neutral", "contradiction"],
        "rows": "gold",
        "columns": "predicted",
        "matrix": [[1, 1, 0], [0, 1, 1], [0, 0, 2]],
    }
    assert figures["per_class"]["contradiction"]["precision"]["value"] == pytest.approx(2 / 3)
    assert figures["per_class"]["entailment"]["support"] == 2
    # hard(overlap) from the file's column where present: hard {t1 right, t2 wrong, t6 right}
    # 2/3, easy {t3 right, t4 wrong} 1/2 (the computed flags of t2 and t3 are not read).
    assert figures["subsets"]["hard(overlap)"]["hard"]["value"] == pytest.approx(2 / 3)
    assert figures["subsets"]["hard(overlap)"]["easy"]["value"] == 0.5
    # hard(hypothesis) from the imported column alone: hard {t3, t4} 1/2, easy {t1, t2, t6} 2/3.
    assert figures["subsets"]["hard(hypothesis)"]["hard"]["value"] == 0.5
    assert figures["subsets"]["hard(hypothesis)"]["easy"]["value"] == pytest.approx(2 / 3)
    assert figures["subset_items"] == {
        "hard(overlap)": {"easy": 2, "hard": 3},
        "hard(hypothesis)": {"easy": 3, "hard": 2},
    }
    listed = nli["sup"].get(URL).json()
    assert [row["id"] for row in listed] == [body["id"]]
    assert listed[0]["figures"]["accuracy"] == pytest.approx(4 / 6)
    assert listed[0]["figures"]["subsets"]["hard(overlap)"] == {"easy": 0.5, "hard": pytest.approx(2 / 3)}
    assert set(listed[0]) >= {"id", "name", "split", "created_at", "figures"}


def test_csv_and_every_split_are_scored_too(nli):
    rows = {**PREDICTIONS, "d1": "entailment"}
    text = "id,prediction\n" + "".join(f"{key},{value[0]}\n" for key, value in rows.items())  # FarsTail's e/n/c codes
    response = post(nli["sup"], text, filename="p.csv", split="all")
    assert response.status_code == 202, response.content
    assert run_latest_job().status == "done"
    detail = nli["sup"].get(f"{URL}{response.json()['id']}/").json()
    assert detail["split"] == "all" and detail["items"] == 7
    assert detail["figures"]["accuracy"]["value"] == pytest.approx(5 / 7)


def errors_of(response) -> list[dict]:
    assert response.status_code == 400, response.content
    return response.json()["errors"]


def test_a_bad_file_lists_every_bad_row_by_row_and_field_and_stores_nothing(nli):
    before = stored()
    lines = [
        json.dumps({"id": "t1", "prediction": "entailment"}),
        json.dumps({"id": "t1", "prediction": "neutral"}),  # duplicate
        json.dumps({"id": "nope", "prediction": "neutral"}),  # unknown
        json.dumps({"id": "d1", "prediction": "neutral"}),  # not in the test split
        json.dumps({"id": "t3", "prediction": "maybe"}),  # unknown label
        '{"id": "t4", "prediction": NaN}',
        json.dumps({"id": "t5", "prediction": 1}),
        json.dumps({"id": "t6", "prediction": "neutral\u0000"}),
        "[1, 2]",
        json.dumps({"prediction": "neutral"}),
    ]
    errors = errors_of(post(nli["sup"], "\n".join(lines) + "\n"))
    by_row = {(error.get("row"), error["field"]) for error in errors}
    assert {
        (2, "id"),
        (3, "id"),
        (4, "id"),
        (5, "prediction"),
        (6, "prediction"),
        (7, "prediction"),
        (8, "prediction"),
        (9, "file"),
        (10, "id"),
    } <= by_row, errors
    assert any("duplicate" in e["message"] and e["row"] == 2 for e in errors)
    assert any("unknown id “nope”" in e["message"] for e in errors)
    # t2 has no row at all, and t4..t6 had only bad ones: each is missing, by id.
    missing = {e["message"] for e in errors if "row" not in e}
    assert {"no prediction for id “t2”", "no prediction for id “t4”"} <= missing
    assert stored() == before


@pytest.mark.parametrize(
    ("text", "filename", "field", "row"),
    [
        ("", "p.jsonl", "file", None),
        ("\n  \n", "p.jsonl", "file", None),
        ("id,label\nt1,e\n", "p.csv", "file", None),  # no prediction column
        ("id,prediction\nt1,e,extra\n", "p.csv", "file", 1),
        ("id,prediction\nt1,NaN\n", "p.csv", "prediction", 1),
        (b"\xff\xfe\x00", "p.jsonl", "file", None),
    ],
)
def test_an_empty_or_unreadable_file_is_400_naming_it(nli, text, filename, field, row):
    before = stored()
    errors = errors_of(post(nli["sup"], text, filename=filename))
    assert any(e["field"] == field and e.get("row") == row for e in errors), errors
    assert stored() == before


def test_an_oversize_file_is_400_naming_the_file(nli, settings):
    settings.MASHOV_MAX_IMPORT_BYTES = 100
    before = stored()
    errors = errors_of(post(nli["sup"], jsonl(prediction_rows())))
    assert errors[0]["field"] == "file" and "larger than 100 bytes" in errors[0]["message"]
    assert stored() == before


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"name": ""}, "name"),
        ({"name": "a\u202eb"}, "name"),
        ({"split": "no such/split"}, "split"),
        ({"split": "train"}, "split"),
        ({"format": "squad"}, "format"),
    ],
)
def test_bad_form_fields_are_400_naming_them(nli, fields, field):
    before = stored()
    errors = errors_of(post(nli["sup"], jsonl(prediction_rows()), **{"name": "m", **fields}))
    assert errors[0]["field"] == field, errors
    assert stored() == before


def test_only_supervisors_evaluate_and_kinds_without_a_scorer_are_refused(nli, make_user, client_for):
    from annotation.models import Membership
    from annotation.services.projects import project_create

    assert post(nli["rev"], jsonl(prediction_rows())).status_code == 403
    assert post(nli["ann"], jsonl(prediction_rows())).status_code == 403
    sup = Membership.objects.get(project__slug="fa-nli", user__username="sup").user
    summary = project_create(
        actor=make_user("root2", staff=True), slug="sums", name="S", kind="summary_rating", language="he"
    )
    Membership.objects.create(project=summary, user=sup, role="supervisor", status="active")
    response = nli["sup"].post(
        "/api/projects/sums/evaluations/", {"file": upload("p.jsonl", "{}\n"), "name": "m"}, format="multipart"
    )
    assert errors_of(response)[0]["field"] == "kind"


def test_a_second_run_while_one_is_queued_is_409_and_stores_nothing(nli):
    first = post(nli["sup"], jsonl(prediction_rows()))
    assert first.status_code == 202
    before = stored()
    second = post(nli["sup"], jsonl(prediction_rows()), name="model-b")
    assert second.status_code == 409, second.content
    assert stored() == before
    assert run_latest_job().status == "done"
    assert post(nli["sup"], jsonl(prediction_rows()), name="model-b").status_code == 202


def test_the_same_file_gives_the_same_figures(nli):
    ids = []
    for name in ("run-1", "run-2"):
        response = post(nli["sup"], jsonl(prediction_rows()), name=name)
        assert response.status_code == 202
        run_latest_job()
        ids.append(response.json()["id"])
    first, second = (nli["sup"].get(f"{URL}{pk}/").json() for pk in ids)
    assert first["figures"] == second["figures"]
    assert first["bootstrap"] == {"n_resamples": 1000, "confidence": 0.95, "seed": 20240601}
    # The job run again over the same upload changes nothing either.
    from annotation.models import Evaluation, Job
    from annotation.release.evaluation import evaluation_run_job

    evaluation = Evaluation.objects.get(pk=ids[1])
    job = Job.objects.get(pk=evaluation.job_id)
    job.input_data = jsonl(prediction_rows()).encode()
    evaluation_run_job(job)
    evaluation.refresh_from_db()
    assert evaluation.figures == second["figures"]


def test_compare_answers_whether_a_beats_b_on_the_same_items(nli):
    from annotation.models import Item

    # 60 more test items so that the difference can be told apart from chance.
    project = Item.objects.get(external_id="t1").project
    for i in range(60):
        Item.objects.create(
            project=project,
            external_id=f"x{i}",
            split="test",
            status="accepted",
            gold_label="neutral",
            payload={"premise": "p", "hypothesis": "h"},
            position=100 + i,
        )
    good = {**{key: value for key, value in PREDICTIONS.items()}, **{f"x{i}": "neutral" for i in range(60)}}
    poor = {**PREDICTIONS, **{f"x{i}": "neutral" if i % 3 == 0 else "entailment" for i in range(60)}}
    ids = {}
    for name, predictions in (("good", good), ("poor", poor)):
        response = post(nli["sup"], jsonl(prediction_rows(predictions)), name=name)
        run_latest_job()
        ids[name] = response.json()["id"]
    compared = nli["rev"].get(f"{URL}compare/?a={ids['good']}&b={ids['poor']}")
    assert compared.status_code == 200, compared.content
    body = compared.json()
    accuracy = body["figures"]["accuracy"]
    assert body["items"] == 66 and body["primary"] == "accuracy" and body["verdict"] == "a_better"
    assert accuracy["difference"] == pytest.approx(64 / 66 - 24 / 66)
    assert 0 < accuracy["ci_low"] <= accuracy["difference"] <= accuracy["ci_high"]
    assert accuracy["share_a_better"] == 1.0
    assert set(body["figures"]["subsets"]["hard(overlap)"]) == {"easy", "hard"}
    reverse = nli["sup"].get(f"{URL}compare/?a={ids['poor']}&b={ids['good']}").json()
    assert reverse["verdict"] == "b_better"
    assert reverse["figures"]["accuracy"]["difference"] == pytest.approx(-accuracy["difference"])
    assert (
        nli["sup"].get(f"{URL}compare/?a={ids['good']}&b={ids['good']}").json()["figures"]["accuracy"]["share_a_better"]
        == 0.0
    )


def test_compare_refuses_what_it_cannot_compare(nli):
    response = post(nli["sup"], jsonl(prediction_rows()))
    pending = response.json()["id"]
    assert errors_of(nli["sup"].get(f"{URL}compare/?a=x&b={pending}"))[0]["field"] == "a"
    assert errors_of(nli["sup"].get(f"{URL}compare/?a={pending}&b=987654"))[0]["field"] == "b"
    assert nli["sup"].get(f"{URL}compare/?a={pending}&b={pending}").status_code == 409  # not scored yet
    assert nli["ann"].get(f"{URL}compare/?a={pending}&b={pending}").status_code == 403


def test_an_evaluation_of_another_project_is_not_found(nli, make_user, client_for):
    from annotation.models import Membership
    from annotation.services.projects import project_create

    response = post(nli["sup"], jsonl(prediction_rows()))
    other_sup = make_user("other-sup")
    other = project_create(
        actor=make_user("root2", staff=True), slug="other", name="O", kind="nli_relabel", language="fa"
    )
    Membership.objects.create(project=other, user=other_sup, role="supervisor", status="active")
    hidden = client_for(other_sup).get(f"/api/projects/other/evaluations/{response.json()['id']}/")
    missing = client_for(other_sup).get("/api/projects/other/evaluations/987654/")
    assert hidden.status_code == missing.status_code == 404
    assert hidden.content == missing.content


def test_a_failed_run_keeps_no_figures_and_says_why(nli):
    from annotation.models import Item

    response = post(nli["sup"], jsonl(prediction_rows()))
    # The gold changed between the upload and the run: t1 is no longer scored.
    Item.objects.filter(external_id="t1").update(status="removed")
    job = run_latest_job()
    assert job.status == "failed"
    detail = nli["sup"].get(f"{URL}{response.json()['id']}/").json()
    assert detail["status"] == "failed" and detail["figures"] is None
    assert any(e["field"] == "id" and e["row"] == 1 for e in detail["error"]["errors"])
