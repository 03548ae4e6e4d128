"""The bias analysis through HTTP on the real stack (docs/api.md "Dataset release"), on the shipped
FarsTail samples; the job runs through the worker's entry point, synchronously."""

import csv
import io
import json
import math

import pytest

from annotation.metrics import bias
from annotation.text_tools import text_tools
from tests.release.bias_setup import FARSTAIL_DIR, farstail_release, import_farstail

pytestmark = pytest.mark.django_db
URL = "/api/projects/fa-nli/bias/"


@pytest.fixture
def sup(nli_project, client_for, django_user_model):
    return client_for(django_user_model.objects.get(username="sup"))


@pytest.fixture
def release(sup):
    return farstail_release(sup, "fa-nli")


def run(client, body=None) -> dict:
    from annotation.models import Job
    from annotation.tasks import run_job

    response = client.post(URL, body if body is not None else {}, format="json")
    assert response.status_code == 202, response.content
    job_id = response.json()["job"]
    run_job(job_id)  # the worker's entry point
    job = Job.objects.get(pk=job_id)
    assert job.status == "done", job.error
    got = client.get(URL)
    assert got.status_code == 200
    return got.json()


def read_rows(name: str) -> list[list[str]]:
    with open(FARSTAIL_DIR / name, encoding="utf-8", newline="") as handle:
        return list(csv.reader(handle, delimiter="\t"))[1:]


def test_the_analysis_has_api_md_shape_and_the_papers_figures(sup, release):
    result = run(sup)
    assert set(result) == {
        "split",
        "smoothing",
        "classes",
        "splits",
        "corpus",
        "tokenizer",
        "pmi",
        "baselines",
        "flags",
        "joint_hard",
    }
    assert (result["split"], result["smoothing"]) == ("train", 100.0)
    # Hazm where requirements-persian.txt is installed (a Persian project), else Mashov's own.
    tools = text_tools("fa")
    assert result["tokenizer"] == tools.name

    # Table 2 on the training split (the Val sample), recomputed here from the file.
    val = read_rows("Val-word.csv")
    letters = {"e": "entailment", "n": "neutral", "c": "contradiction"}
    assert {label: row["items"] for label, row in result["classes"].items()} == {
        letters[code]: sum(r[2] == code for r in val) for code in "enc"
    }

    def cut(text):
        return bias.tokens(text, fold_letters=True, tokenizer=tools.tokenizer)

    def processed(words):
        return {word for word in words if len(word) > 1 and word not in tools.stoplist}

    for label, row in result["classes"].items():
        mine = [r for r in val if letters[r[2]] == label]
        premises = [cut(r[0]) for r in mine]
        hypotheses = [cut(r[1]) for r in mine]
        assert row["premise_tokens"] == pytest.approx(sum(map(len, premises)) / len(mine))
        assert row["premise_processed_tokens"] == pytest.approx(sum(len(processed(p)) for p in premises) / len(mine))
        assert row["hypothesis_processed_tokens"] == pytest.approx(
            sum(len(processed(h)) for h in hypotheses) / len(mine)
        )
        overlaps = [len(set(h) & set(p)) / len(set(h)) for p, h in zip(premises, hypotheses)]
        assert row["overlap"] == pytest.approx(sum(overlaps) / len(overlaps))
        assert 0 <= row["processed_overlap"] <= 1
    # Table 2 whole: the training split as above with its total, and the test split.
    assert result["splits"]["train"] == {**result["classes"], "total": result["splits"]["train"]["total"]}
    assert result["splits"]["train"]["total"]["items"] == len(val) == 152
    test_rows = read_rows("Test-word.csv")
    assert result["splits"]["test"]["total"]["items"] == len(test_rows) == 61
    assert result["splits"]["test"]["total"]["hypothesis_processed_tokens"] == pytest.approx(
        sum(len(processed(cut(r[1]))) for r in test_rows) / 61
    )
    # The corpus line: distinct tokens of every premise and hypothesis of both files.
    vocabulary = {word for r in (*val, *test_rows) for text in r[:2] for word in cut(text)}
    assert result["corpus"] == {
        "tokens": len(vocabulary),
        "stopwords_or_one_character": len(vocabulary - processed(vocabulary)),
    }
    # As in the paper: entailment hypotheses overlap their premises most, neutral ones least.
    overlap = {label: row["overlap"] for label, row in result["classes"].items()}
    assert overlap["entailment"] > overlap["contradiction"] > overlap["neutral"]

    # Table 4: highest first, counts within totals, ten words per class at most.
    pmi = [row["pmi"] for row in result["pmi"]]
    assert pmi == sorted(pmi, reverse=True) and all(math.isfinite(v) for v in pmi)
    assert all(1 <= row["count"] <= row["total"] for row in result["pmi"])
    assert {row["label"] for row in result["pmi"]} == set(letters.values())

    # The biased models: fitted on train, applied to test (no dev items here).
    for model in ("hypothesis_only", "overlap"):
        baseline = result["baselines"][model]
        assert baseline["train_split"] == "train"
        assert baseline["dev"] == {
            "accuracy": None,
            "confusion": {
                "labels": ["entailment", "neutral", "contradiction"],
                "rows": "gold",
                "columns": "predicted",
                "matrix": [],
            },
        }
        matrix = baseline["test"]["confusion"]["matrix"]
        assert sum(map(sum, matrix)) == 61
        assert baseline["test"]["accuracy"] == pytest.approx(sum(matrix[i][i] for i in range(3)) / 61)

    # Flags: one per test item, stored where the model-evaluation reads them, and compared
    # with the published columns.
    test_items = release["test"]
    # Computed flags are kept apart from the file's columns, which stay as imported.
    published = read_rows("Test-word.csv")
    for item, row in zip(test_items, published):
        item.refresh_from_db()
        assert isinstance(item.computed["computed_hard(hypothesis)"], bool)
        assert isinstance(item.computed["computed_hard(overlap)"], bool)
        assert "hard(overlap)" not in item.computed
        assert item.payload["extra"] == {"hard(hypothesis)": row[3], "hard(overlap)": row[4]}
    for item in release["train"]:
        item.refresh_from_db()
        assert "computed_hard(overlap)" not in item.computed
    for column, index in (("hard(hypothesis)", 3), ("hard(overlap)", 4)):
        flags = result["flags"][column]
        computed = [item.computed[f"computed_{column}"] for item in test_items]
        assert flags["items"] == 61 and flags["hard"] == sum(computed)
        agreeing = sum(c == (row[index] == "1") for c, row in zip(computed, published))
        assert flags["agreement_with_imported"] == pytest.approx(agreeing / 61)
    # The overlap model reproduces the published column: 59 of the sample's 61 test items
    # (fitted on the Val sample only; FarsTail fitted on its full train file).
    assert result["flags"]["hard(overlap)"]["agreement_with_imported"] >= 0.9
    # §4.3's joint crosstab, of the computed flags and of the file's own columns.
    cells = {(True, True): "both", (True, False): "hypothesis_only", (False, True): "overlap_only"}
    for source, pairs in (
        (
            "computed",
            [
                (item.computed["computed_hard(hypothesis)"], item.computed["computed_hard(overlap)"])
                for item in test_items
            ],
        ),
        ("imported", [(row[3] == "1", row[4] == "1") for row in published]),
    ):
        expected = dict.fromkeys(("both", "hypothesis_only", "overlap_only", "neither"), 0)
        for pair in pairs:
            expected[cells.get(pair, "neither")] += 1
        assert result["joint_hard"][source] == expected, source
        assert sum(expected.values()) == 61
    # hard = the model got it wrong (§4.3): the overlap model's test confusion says how many.
    matrix = result["baselines"]["overlap"]["test"]["confusion"]["matrix"]
    assert result["flags"]["hard(overlap)"]["hard"] == 61 - sum(matrix[i][i] for i in range(3))


def test_the_same_inputs_give_the_same_result_and_flags(sup, release):
    from annotation.models import Item

    first = run(sup, {"split": "train", "smoothing": 100})
    flags = dict(Item.objects.filter(split="test").values_list("pk", "computed"))
    second = run(sup)
    assert first == second
    assert dict(Item.objects.filter(split="test").values_list("pk", "computed")) == flags


def test_smoothing_changes_the_pmi_as_the_formula_says(sup, release):
    smooth = run(sup, {"smoothing": 100})
    sharp = run(sup, {"smoothing": 0.5})
    assert sharp["smoothing"] == 0.5
    assert max(abs(r["pmi"]) for r in sharp["pmi"]) > max(abs(r["pmi"]) for r in smooth["pmi"])
    assert sharp["classes"] == smooth["classes"] and sharp["baselines"] == smooth["baselines"]


def test_fitting_on_dev_applies_to_test_and_flags_move_with_the_split(sup, release):
    from annotation.models import Item

    run(sup)
    Item.objects.filter(split="train").update(split="dev")
    moved = release["test"][0]
    Item.objects.filter(pk=moved.pk).update(split="dev")
    result = run(sup, {"split": "dev"})
    assert result["baselines"]["overlap"]["train_split"] == "dev"
    assert set(result["baselines"]["overlap"]) == {"train_split", "test"}
    assert result["flags"]["hard(overlap)"]["items"] == 60
    moved.refresh_from_db()
    assert "computed_hard(overlap)" not in moved.computed and "computed_hard(hypothesis)" not in moved.computed
    # Fitting on test leaves no test item flagged.
    result = run(sup, {"split": "test"})
    assert result["flags"]["hard(hypothesis)"] == {"hard": 0, "items": 0, "agreement_with_imported": None}
    assert not Item.objects.filter(computed__has_key="computed_hard(overlap)").exists()


def test_farstail_exports_give_each_file_back_and_keep_computed_flags_apart(sup, release):
    from annotation.models import Item
    from tests.api.test_export import export

    run(sup)
    # Each split comes back as its published file, byte for byte: the Test file with its
    # own hard columns, the Val file (train here) without any.
    for split, name in (("test", "Test-word.csv"), ("train", "Val-word.csv")):
        response, body = export(sup, "fa-nli", format="farstail", split=split, status="all")
        assert response.status_code == 200
        assert body == (FARSTAIL_DIR / name).read_bytes(), split
    # Val rows made the test split get computed flags; their TSV still gains no hard(...)
    # column the Val file lacks, and no empty one.
    Item.objects.filter(split="test").update(split="dev")
    moved = release["train"][:60]
    Item.objects.filter(pk__in=[item.pk for item in moved]).update(split="test")
    run(sup)
    _, body = export(sup, "fa-nli", format="farstail", split="test", status="all")
    rows = list(csv.reader(io.StringIO(body.decode("utf-8")), delimiter="\t"))
    assert rows[0] == ["premise", "hypothesis", "label"]
    assert rows[1:] == read_rows("Val-word.csv")[:60]
    _, body = export(sup, "fa-nli", format="farstail", split="train", status="all")
    assert body.decode("utf-8").splitlines()[0] == "premise\thypothesis\tlabel"
    # JSONL carries the computed flags under their own names, never as the file's columns.
    stored = [Item.objects.get(pk=item.pk).computed for item in moved]
    _, body = export(sup, "fa-nli", format="jsonl", split="test", status="all")
    records = [json.loads(line) for line in body.decode("utf-8").splitlines()]
    assert [record["extra"] for record in records] == [
        {
            "computed_hard(hypothesis)": "1" if c["computed_hard(hypothesis)"] else "0",
            "computed_hard(overlap)": "1" if c["computed_hard(overlap)"] else "0",
        }
        for c in stored
    ]
    # The former test items (dev now) kept their file's columns; their computed ones are gone.
    _, body = export(sup, "fa-nli", format="farstail", split="dev", status="all")
    assert body == (FARSTAIL_DIR / "Test-word.csv").read_bytes()


def test_a_second_analysis_while_one_is_queued_is_409(sup, release):
    from annotation.models import Job
    from annotation.tasks import run_job

    first = sup.post(URL, {}, format="json")
    assert first.status_code == 202
    second = sup.post(URL, {"smoothing": 5}, format="json")
    assert second.status_code == 409 and second.json()["errors"][0]["field"] == "job"
    assert Job.objects.filter(kind="bias").count() == 1
    run_job(first.json()["job"])
    assert sup.post(URL, {}, format="json").status_code == 202


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"split": "validation"}, "split"),
        ({"split": 3}, "split"),
        ({"split": None}, "split"),
        ({"smoothing": 0}, "smoothing"),
        ({"smoothing": -1}, "smoothing"),
        ({"smoothing": "100"}, "smoothing"),
        ({"smoothing": True}, "smoothing"),
        ({"smoothing": 1e300}, "smoothing"),
        ({"smoothing": 10**400}, "smoothing"),
        ({"seed": 1}, "body"),
        ({"split": "dev"}, "split"),  # no gold items there
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_stores_nothing(sup, release, body, field):
    from annotation.models import Item, Job

    before = (Job.objects.count(), list(Item.objects.order_by("pk").values_list("pk", "computed")))
    response = sup.post(URL, body, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["errors"][0]["field"] == field
    assert (Job.objects.count(), list(Item.objects.order_by("pk").values_list("pk", "computed"))) == before


def test_a_split_whose_first_items_share_a_label_is_accepted(sup, nli_project):
    from annotation.models import Item

    items = import_farstail(sup, "fa-nli", "Test-word.csv", split="train")
    for index, item in enumerate(items):
        Item.objects.filter(pk=item.pk).update(gold_label="entailment" if index < 50 else "neutral")
    assert sup.post(URL, {}, format="json").status_code == 202


def test_a_split_of_one_class_or_without_gold_is_refused(sup, nli_project):
    from annotation.models import Item

    items = import_farstail(sup, "fa-nli", "Test-word.csv", split="train")
    Item.objects.filter(pk__in=[i.pk for i in items]).update(gold_label="neutral")
    response = sup.post(URL, {}, format="json")
    assert response.status_code == 400 and response.json()["errors"][0]["field"] == "split"
    assert "one class" in response.json()["errors"][0]["message"]
    Item.objects.filter(pk__in=[i.pk for i in items]).update(gold_label="")
    assert sup.post(URL, {}, format="json").json()["errors"][0]["message"].endswith("has no gold-labelled items")


def test_before_any_analysis_get_is_404_and_the_page_says_so(sup, release, client, django_user_model):
    assert sup.get(URL).status_code == 404
    client.force_login(django_user_model.objects.get(username="sup"))
    page = client.get("/p/fa-nli/bias/")
    assert page.status_code == 200
    assert b'data-api="/api/projects/fa-nli/bias/"' in page.content and b'id="bias-form"' in page.content


def test_annotators_may_not_run_it_and_the_reviewer_may_only_read(release, client_for, django_user_model):
    annotator = client_for(django_user_model.objects.get(username="ann1"))
    reviewer = client_for(django_user_model.objects.get(username="rev"))
    assert annotator.post(URL, {}, format="json").status_code == 403
    assert annotator.get(URL).status_code == 403
    assert reviewer.post(URL, {}, format="json").status_code == 403
    assert reviewer.get(URL).status_code == 404  # staff may read; nothing ran yet


def test_projects_of_other_kinds_are_refused(make_user, client_for):
    from annotation.models import Membership
    from annotation.services.projects import project_create

    admin = make_user("root", staff=True)
    project = project_create(actor=admin, slug="he-phrase", name="Phrases", kind="phrase_pair", language="he")
    sup = make_user("sup")
    Membership.objects.create(project=project, user=sup, role="supervisor", status="active")
    response = client_for(sup).post("/api/projects/he-phrase/bias/", {}, format="json")
    assert response.status_code == 400 and response.json()["errors"][0]["field"] == "kind"


def test_a_split_emptied_before_the_job_runs_fails_the_job_naming_it_and_stores_nothing(sup, release):
    from annotation.models import Item, Job
    from annotation.tasks import run_job

    job_id = sup.post(URL, {}, format="json").json()["job"]
    Item.objects.filter(split="train").update(gold_label="neutral")
    run_job(job_id)
    job = Job.objects.get(pk=job_id)
    assert job.status == "failed" and job.error["errors"][0]["field"] == "split"
    assert not Item.objects.filter(computed__has_key="computed_hard(overlap)").exists()
    assert sup.get(URL).status_code == 404


def test_the_job_reads_and_writes_in_a_constant_number_of_queries(sup, release):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotation.tasks import run_job

    run(sup)  # flags on the test items: the second run also takes them off and on again
    job_id = sup.post(URL, {}, format="json").json()["job"]
    with CaptureQueriesContext(connection) as queries:
        run_job(job_id)
    assert len(queries.captured_queries) < 25, [q["sql"][:120] for q in queries.captured_queries]
