"""The release stage's curation through HTTP on the real stack (docs/api.md "Dataset release"):
import fields for published datasets, near-duplicates with keep / remove / restore, leak-free
splits and the leak check; bad input is a 400 naming the field and stores nothing, a second
run while one is queued is a 409, a re-run gives the same result."""

import csv
import io
import json
from pathlib import Path

import pytest

FARSTAIL = Path(__file__).resolve().parents[3] / "shared" / "data" / "farstail"
SLUG = "fa-nli"


def upload(name: str, data: str | bytes):
    handle = io.BytesIO(data.encode("utf-8") if isinstance(data, str) else data)
    handle.name = name
    return handle


def jsonl(rows) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def farstail_rows(name: str) -> list[list[str]]:
    with open(FARSTAIL / name, encoding="utf-8", newline="") as handle:
        return list(csv.reader(handle, delimiter="\t"))[1:]


@pytest.fixture
def sup(nli_project, client_for, django_user_model):
    return client_for(django_user_model.objects.get(username="sup"))


@pytest.fixture
def rev(nli_project, client_for, django_user_model):
    return client_for(django_user_model.objects.get(username="rev"))


def import_file(client, name, data, fmt="farstail", **fields):
    return client.post(f"/api/projects/{SLUG}/import/", {"file": upload(name, data), "format": fmt, **fields})


def run(client, path: str, body: dict | None = None) -> dict:
    """Start a curation job over HTTP and run it as the worker would; its result."""
    from annotation.models import Job
    from annotation.tasks import run_job

    response = client.post(f"/api/projects/{SLUG}/{path}/", body or {}, format="json")
    assert response.status_code == 202, response.content[:500]
    run_job(response.json()["job"])
    job = Job.objects.get(pk=response.json()["job"])
    assert job.status == "done", job.error
    return job.result


def items():
    from annotation.models import Item

    return Item.objects.order_by("position", "pk")


# --- import fields -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_farstail_file_names_give_the_split_and_final_labels_arrive_as_gold(sup):
    test_rows, val_rows = farstail_rows("Test-word.csv"), farstail_rows("Val-word.csv")
    assert (
        import_file(sup, "Test-word.csv", (FARSTAIL / "Test-word.csv").read_bytes(), labels_final="true").status_code
        == 201
    )
    assert import_file(sup, "Val-word.csv", (FARSTAIL / "Val-word.csv").read_bytes()).status_code == 201
    labels = {"e": "entailment", "c": "contradiction", "n": "neutral"}
    stored = list(items())
    assert [item.split for item in stored] == ["test"] * len(test_rows) + ["dev"] * len(val_rows)
    test_items, val_items = stored[: len(test_rows)], stored[len(test_rows) :]
    assert [(item.status, item.gold_label) for item in test_items] == [
        ("accepted", labels[row[2]]) for row in test_rows
    ]
    assert {(item.status, item.gold_label) for item in val_items} == {("open", "")}
    # Decided items are not handed out for relabeling: an annotator gets only the Val items.
    from django.contrib.auth import get_user_model

    from annotation.services.assignments import assignment_next_for_annotator

    ann = get_user_model().objects.get(username="ann1")
    assert assignment_next_for_annotator(user=ann, slug=SLUG).item.split == "dev"
    # The default (accepted) export has the published test file's labels.
    exported = sup.get(f"/api/projects/{SLUG}/export/?format=jsonl&split=test")
    records = [json.loads(line) for line in b"".join(exported.streaming_content).decode().splitlines()]
    assert [record["gold_label"] for record in records] == [labels[row[2]] for row in test_rows]


@pytest.mark.django_db
def test_the_split_field_overrides_the_file_name_and_a_disagreeing_row_is_400(sup):
    assert (
        import_file(sup, "Test-word.csv", (FARSTAIL / "Test-word.csv").read_bytes(), split="heldout").status_code == 201
    )
    assert set(items().values_list("split", flat=True)) == {"heldout"}
    rows = [
        {"id": "x1", "premise": "p", "hypothesis": "h", "split": "train"},
        {"id": "x2", "premise": "p", "hypothesis": "h"},
    ]
    response = import_file(sup, "more.jsonl", jsonl(rows), fmt="jsonl", split="test")
    assert response.status_code == 400
    assert response.json()["errors"] == [
        {"field": "split", "message": "the row says “train”, the form says “test”", "row": 1}
    ]
    assert items().count() == len(farstail_rows("Test-word.csv"))


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"split": "x" * 33}, "split"),
        ({"split": "a\u202eb"}, "split"),
        ({"split": "a\x00"}, "split"),
        ({"labels_final": "maybe"}, "labels_final"),
    ],
)
def test_bad_import_fields_are_400_naming_them(sup, fields, field):
    response = import_file(sup, "Test-word.csv", (FARSTAIL / "Test-word.csv").read_bytes(), **fields)
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == field
    assert not items().exists()


@pytest.mark.django_db
def test_final_labels_need_a_label_on_every_row(sup):
    rows = [
        {"id": "a", "premise": "p", "hypothesis": "h", "label": "e"},
        {"id": "b", "premise": "p", "hypothesis": "h"},
    ]
    response = import_file(sup, "x.jsonl", jsonl(rows), fmt="jsonl", labels_final="true")
    assert response.status_code == 400
    assert response.json()["errors"] == [
        {
            "field": "label",
            "message": "is required: with “labels are final” every row's label becomes its gold label",
            "row": 2,
        }
    ]
    assert not items().exists()


@pytest.mark.django_db
def test_a_large_file_takes_the_job_path_with_its_split_and_final_labels(sup, settings):
    from annotation.tasks import run_job

    settings.MASHOV_IMPORT_JOB_ROWS = 5
    response = import_file(sup, "Test-word.csv", (FARSTAIL / "Test-word.csv").read_bytes(), labels_final="1")
    assert response.status_code == 202
    run_job(response.json()["job"])
    stored = list(items())
    assert len(stored) == len(farstail_rows("Test-word.csv"))
    assert {(item.split, item.status) for item in stored} == {("test", "accepted")}
    assert all(item.gold_label for item in stored)


# --- near-duplicates -----------------------------------------------------------------------------


def planted_rows():
    """Val's first rows, each premise group a group, and a near-copy of one row in a group
    of its own (one word of the premise dropped, the hypothesis as it is)."""
    rows = farstail_rows("Val-word.csv")[:9]
    out = [
        {"id": f"v{k}", "premise": p, "hypothesis": h, "label": label, "group": f"g{k // 3}"}
        for k, (p, h, label) in enumerate(rows)
    ]
    premise, hypothesis = rows[4][0], rows[4][1]
    words = premise.split()
    copy = " ".join(words[:3] + words[4:])
    out.append({"id": "copy", "premise": copy, "hypothesis": hypothesis, "label": rows[4][2], "group": "g-copy"})
    return out


@pytest.mark.django_db
def test_near_duplicates_are_found_kept_removed_and_restored(sup, rev):
    from annotation.models import Item

    assert import_file(sup, "v.jsonl", jsonl(planted_rows()), fmt="jsonl").status_code == 201
    result = run(sup, "duplicates")
    assert result["pairs"] == 1 and result["threshold"] == 0.8 and result["representation"] == "bow"
    listed = rev.get(f"/api/projects/{SLUG}/duplicates/").json()
    assert listed["count"] == 1
    pair = listed["results"][0]
    assert (pair["a"]["external_id"], pair["b"]["external_id"], pair["decision"]) == ("v4", "copy", None)
    assert pair["premise_similarity"] > 0.8 and pair["hypothesis_similarity"] == 1.0
    # Reviewers read, supervisors decide.
    assert (
        rev.post(f"/api/projects/{SLUG}/duplicates/{pair['id']}/", {"decision": "remove"}, format="json").status_code
        == 403
    )
    removed = sup.post(f"/api/projects/{SLUG}/duplicates/{pair['id']}/", {"decision": "remove"}, format="json")
    assert removed.status_code == 200 and removed.json()["decision"] == "remove"
    copy = Item.objects.get(external_id="copy")
    assert copy.status == "removed" and "near-duplicate of v4" in copy.computed["duplicate"]["removed"]["reason"]
    # The reason is stored in English and shown in the reader's language in the item's history.
    from django.contrib.auth import get_user_model
    from django.test import Client

    for language, words in (("he", "כמעט כפיל של v4"), ("fa", "تقریباً تکراریِ v4"), ("en", "near-duplicate of v4")):
        page = Client(HTTP_ACCEPT_LANGUAGE=language)
        page.force_login(get_user_model().objects.get(username="sup"))
        html = page.get(f"/console/p/{SLUG}/items/{copy.pk}/").content.decode()
        assert words in html, language
    exported = b"".join(sup.get(f"/api/projects/{SLUG}/export/?format=jsonl&status=open").streaming_content).decode()
    assert '"copy"' not in exported and '"v4"' in exported
    # A re-run finds the same pair and keeps its decision.
    assert run(sup, "duplicates")["pairs"] == 1
    assert sup.get(f"/api/projects/{SLUG}/duplicates/").json()["results"][0]["decision"] == "remove"
    # Restore puts the earlier status back and marks the pair kept.
    restored = sup.post(f"/api/projects/{SLUG}/duplicates/restore/", {"items": [copy.pk]}, format="json")
    assert restored.json() == {"restored": 1}
    copy.refresh_from_db()
    assert copy.status == "open" and "restored" in copy.computed["duplicate"]
    assert sup.get(f"/api/projects/{SLUG}/duplicates/").json()["results"][0]["decision"] == "keep"
    # Remove all: only undecided pairs; none left.
    assert sup.post(f"/api/projects/{SLUG}/duplicates/remove-all/").json() == {"pairs": 0, "removed": 0}


@pytest.mark.django_db
def test_remove_all_removes_the_later_item_of_each_undecided_pair(sup):
    from annotation.models import Item

    rows = planted_rows()
    rows.append({**rows[-1], "id": "copy2", "group": "g-copy2"})
    assert import_file(sup, "v.jsonl", jsonl(rows), fmt="jsonl").status_code == 201
    assert run(sup, "duplicates", {"representation": "tfidf"})["pairs"] == 3
    answer = sup.post(f"/api/projects/{SLUG}/duplicates/remove-all/").json()
    assert answer == {"pairs": 3, "removed": 2}
    assert set(Item.objects.filter(status="removed").values_list("external_id", flat=True)) == {"copy", "copy2"}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("duplicates", {"threshold": 1.5}, "threshold"),
        ("duplicates", {"threshold": 0}, "threshold"),
        ("duplicates", {"threshold": "0.8"}, "threshold"),
        ("duplicates", {"threshold": True}, "threshold"),
        ("duplicates", {"representation": "words"}, "representation"),
        ("duplicates", {"other": 1}, "body"),
        ("splits", {"shares": {"train": 0.5, "test": 0.4}}, "shares"),
        ("splits", {"shares": {"train": 1.5, "test": -0.5}}, "shares.train"),
        ("splits", {"shares": {}}, "shares"),
        ("splits", {"shares": {"x" * 33: 1}}, "shares.<key>"),
        ("splits", {"shares": []}, "shares"),
        ("splits", {"seed": 2**64}, "seed"),
        ("splits", {"seed": 1.5}, "seed"),
        ("splits", {"leak_threshold": 2}, "leak_threshold"),
        ("leaks", {"threshold": -0.1}, "threshold"),
        ("leaks", {"seed": 1}, "body"),
    ],
)
def test_bad_parameters_are_400_naming_the_field_and_start_nothing(sup, path, body, field):
    from annotation.models import Job

    response = sup.post(f"/api/projects/{SLUG}/{path}/", body, format="json")
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == field
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_embeddings_without_the_package_is_400_saying_what_to_install(sup, monkeypatch):
    from annotation.release import curation_jobs

    monkeypatch.setattr(curation_jobs, "embeddings_installed", lambda: False)
    response = sup.post(f"/api/projects/{SLUG}/duplicates/", {"representation": "embedding"}, format="json")
    assert response.status_code == 400
    assert "requirements-embeddings.txt" in response.json()["errors"][0]["message"]


@pytest.mark.django_db
@pytest.mark.embeddings
def test_the_embedding_representation_finds_the_planted_copy(sup):
    """With requirements-embeddings.txt installed: sentence embeddings (all-MiniLM-L6-v2, an
    English model, so other Persian pairs may score high too; the copy must be among them)."""
    assert import_file(sup, "v.jsonl", jsonl(planted_rows()), fmt="jsonl").status_code == 201
    result = run(sup, "duplicates", {"representation": "embedding"})
    assert result["representation"] == "embedding"
    pairs = sup.get(f"/api/projects/{SLUG}/duplicates/?page_size=1000").json()["results"]
    assert ("v4", "copy") in {(p["a"]["external_id"], p["b"]["external_id"]) for p in pairs}


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["duplicates", "splits", "leaks"])
def test_a_second_run_while_one_is_queued_is_409(sup, path):
    first = sup.post(f"/api/projects/{SLUG}/{path}/", {}, format="json")
    assert first.status_code == 202
    second = sup.post(f"/api/projects/{SLUG}/{path}/", {}, format="json")
    assert second.status_code == 409
    assert second.json()["errors"][0]["field"] == "job"


@pytest.mark.django_db
def test_deciding_a_pair_of_another_project_or_a_bad_decision(sup):
    assert sup.post(f"/api/projects/{SLUG}/duplicates/987654/", {"decision": "keep"}, format="json").status_code == 404
    assert import_file(sup, "v.jsonl", jsonl(planted_rows()), fmt="jsonl").status_code == 201
    run(sup, "duplicates")
    pair = sup.get(f"/api/projects/{SLUG}/duplicates/").json()["results"][0]["id"]
    response = sup.post(f"/api/projects/{SLUG}/duplicates/{pair}/", {"decision": "delete"}, format="json")
    assert response.status_code == 400 and response.json()["errors"][0]["field"] == "decision"
    bad = sup.post(f"/api/projects/{SLUG}/duplicates/restore/", {"items": [items().first().pk]}, format="json")
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "items[0]"


# --- splits and leaks -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_splits_keep_groups_together_merge_leaks_and_rerun_the_same(sup):
    data = (FARSTAIL / "Val-word.csv").read_bytes()
    assert import_file(sup, "Val-word.csv", data, split="").status_code == 201
    before = sup.get(f"/api/projects/{SLUG}/splits/").json()
    assert before["shares"] == {"dev": 1.0} and before["seed"] is None
    result = run(sup, "splits", {"seed": 7})
    assert result["seed"] == 7 and result["leak_threshold"] == 0.9
    stored = list(items())
    by_group = {}
    for item in stored:
        by_group.setdefault(item.group, set()).add(item.split)
    assert all(len(splits) == 1 for splits in by_group.values())
    total = len(stored)
    for name, target in {"train": 0.7, "dev": 0.15, "test": 0.15}.items():
        assert abs(result["counts"][name] - target * total) <= result["largest_component"]
    report = sup.get(f"/api/projects/{SLUG}/splits/").json()
    assert {key: report[key] for key in ("shares", "components", "largest_component", "seed", "leak_threshold")} == {
        key: result[key] for key in ("shares", "components", "largest_component", "seed", "leak_threshold")
    }
    first = [item.split for item in stored]
    assert run(sup, "splits", {"seed": 7})["changed"] == 0
    assert [item.split for item in items()] == first
    # The leak check on these splits finds no cross-split pair above the threshold.
    leaks = run(sup, "leaks")
    assert (leaks["count"], leaks["groups_across_splits"]) == (0, 0)


@pytest.mark.django_db
def test_leak_check_on_imported_splits_finds_the_planted_copy(sup):
    rows = planted_rows()
    for row in rows:
        row["split"] = "test" if row["id"] == "copy" else "train"
    assert import_file(sup, "v.jsonl", jsonl(rows), fmt="jsonl").status_code == 201
    run(sup, "leaks", {"threshold": 0.8})
    report = sup.get(f"/api/projects/{SLUG}/leaks/").json()
    # The copy's premise is the premise of v3, v4 and v5 with one word less (premise OR
    # hypothesis); v4's hypothesis is the copy's own, the most similar pair first.
    assert report["count"] == 3 and report["by_splits"] == {"test/train": 3}
    pairs = [{example["a"]["external_id"], example["b"]["external_id"]} for example in report["examples"]]
    assert pairs[0] == {"v4", "copy"} and sorted(map(sorted, pairs)) == [["copy", "v3"], ["copy", "v4"], ["copy", "v5"]]
    assert report["examples"][0]["similarity"] == 1.0
    # A split that merges leaks puts the copy with its original.
    run(sup, "splits", {"seed": 3, "leak_threshold": 0.8})
    from annotation.models import Item

    assert Item.objects.get(external_id="copy").split == Item.objects.get(external_id="v4").split


@pytest.mark.django_db
def test_qa_projects_split_by_article_ninety_five_five(make_user, client_for):
    from annotation.models import Item
    from annotation.services.projects import project_create
    from annotation.tasks import run_job

    admin = make_user("root", staff=True)
    project = project_create(actor=admin, slug="heq", name="HeQ", kind="qa_authoring", language="he")
    client = client_for(admin)
    rows = [{"id": f"p{k}", "context": f"פסקה מספר {k} " * 40, "title": f"מאמר {k // 2}"} for k in range(200)]
    assert (
        client.post(
            "/api/projects/heq/import/", {"file": upload("p.jsonl", jsonl(rows)), "format": "jsonl"}
        ).status_code
        == 201
    )
    response = client.post("/api/projects/heq/splits/", {"seed": 1}, format="json")
    assert response.status_code == 202
    run_job(response.json()["job"])
    report = client.get("/api/projects/heq/splits/").json()
    assert report["counts"] == {"train": 180, "dev": 10, "test": 10} and report["leak_threshold"] is None
    by_title = {}
    for item in Item.objects.filter(project=project):
        by_title.setdefault(item.payload["title"], set()).add(item.split)
    assert all(len(splits) == 1 for splits in by_title.values())


@pytest.mark.django_db
def test_the_supervisor_import_page_takes_the_split_and_final_labels(nli_project, client, django_user_model):
    client.force_login(django_user_model.objects.get(username="sup"))
    data = (FARSTAIL / "Test-word.csv").read_bytes()
    page = client.get(f"/p/{SLUG}/")
    assert b'name="labels_final"' in page.content and b'name="split"' in page.content and b"/release/" in page.content
    response = client.post(
        f"/p/{SLUG}/import/",
        {"file": upload("Test-word.csv", data), "format": "farstail", "split": "gold", "labels_final": "true"},
    )
    assert response.status_code == 302
    assert {(item.split, item.status) for item in items()} == {("gold", "accepted")}
    bad = client.post(
        f"/p/{SLUG}/import/",
        {"file": upload("x.csv", data), "format": "farstail", "labels_final": "perhaps"},
        follow=True,
    )
    assert "labels_final" in bad.content.decode()
    assert items().count() == len(farstail_rows("Test-word.csv"))


@pytest.mark.django_db
def test_import_items_command_takes_the_split_and_final_labels(nli_project, tmp_path):
    from django.core.management import call_command

    path = tmp_path / "Train-word.csv"
    path.write_bytes((FARSTAIL / "Val-word.csv").read_bytes())
    call_command("import_items", SLUG, str(path), "--format", "farstail", "--labels-final", stdout=io.StringIO())
    assert {(item.split, item.status) for item in items()} == {("train", "accepted")}
    assert all(item.gold_label == item.reference_label != "" for item in items())
