"""Releases through HTTP on the real stack (docs/api.md "Releases"): a release freezes the
project's decided items into files per split (JSONL, Parquet, FarsTail TSV), a dataset card
and SHA256SUMS; later decisions never change it; a version is used once; two releases diff
by split with the decisions that relabelled items; the zip holds the same bytes; bad input is
a 400 naming the field with nothing stored."""

import hashlib
import io
import json
import zipfile
from pathlib import Path

import pytest

FARSTAIL = Path(__file__).resolve().parents[3] / "shared" / "data" / "farstail"
SLUG = "fa-nli"


@pytest.fixture
def release_root(settings, tmp_path):
    settings.MASHOV_RELEASE_ROOT = str(tmp_path / "releases")
    return tmp_path / "releases"


@pytest.fixture
def sup(nli_project, client_for, django_user_model):
    return client_for(django_user_model.objects.get(username="sup"))


def upload(name: str, data: bytes):
    handle = io.BytesIO(data)
    handle.name = name
    return handle


@pytest.fixture
def published(sup, release_root):
    """The shipped FarsTail samples imported as published gold: Test → test, Val → dev."""
    for name in ("Test-word.csv", "Val-word.csv"):
        response = sup.post(
            f"/api/projects/{SLUG}/import/",
            {"file": upload(name, (FARSTAIL / name).read_bytes()), "format": "farstail", "labels_final": "true"},
        )
        assert response.status_code == 201, response.content
    return sup


def make_release(client, version: str, **fields) -> dict:
    from annotation.models import Job
    from annotation.tasks import run_job

    response = client.post(f"/api/projects/{SLUG}/releases/", {"version": version, **fields}, format="json")
    assert response.status_code == 202, response.content
    run_job(response.json()["job"])
    job = Job.objects.get(pk=response.json()["job"])
    assert job.status == "done", job.error
    return job.result


def stored(release_root: Path, version: str, name: str) -> bytes:
    return (release_root / SLUG / version / name).read_bytes()


def relabel(external_id: str, label: str):
    """An adjudicator's decision through the ledger: the item's gold changes."""
    from django.db import transaction

    from annotation.models import Item
    from annotation.services.decisions import ADJUDICATION, RANK_ADJUDICATION, decision_record

    with transaction.atomic():
        item = Item.objects.select_for_update().get(project__slug=SLUG, external_id=external_id)
        return decision_record(item=item, method=ADJUDICATION, rank=RANK_ADJUDICATION, value=label, status=item.status)


@pytest.mark.django_db
def test_a_release_freezes_files_per_split_with_card_and_checksums(published, release_root):
    from annotation.models import Item

    result = make_release(published, "1.0", license="cc-by-nc-4.0", description="نمونهٔ آزمایشی")
    names = [f["name"] for f in result["files"]]
    for split in ("dev", "test"):
        assert {f"data/{split}.jsonl", f"data/{split}.parquet", f"farstail/{split}.tsv"} <= set(names)
    assert {"README.md", "SHA256SUMS"} <= set(names)
    # Every file's size and checksum are those of the stored bytes; SHA256SUMS lists the others.
    for entry in result["files"]:
        data = stored(release_root, "1.0", entry["name"])
        assert (len(data), hashlib.sha256(data).hexdigest()) == (entry["bytes"], entry["sha256"])
    sums = stored(release_root, "1.0", "SHA256SUMS").decode()
    assert sums == "".join(f"{f['sha256']}  {f['name']}\n" for f in result["files"] if f["name"] != "SHA256SUMS")
    # The JSONL file is the project's export of the split, byte for byte.
    export = published.get(f"/api/projects/{SLUG}/export/?format=jsonl&split=test")
    assert stored(release_root, "1.0", "data/test.jsonl") == b"".join(export.streaming_content)
    test_count = Item.objects.filter(project__slug=SLUG, split="test").count()
    assert result["counts"]["test"] and sum(result["counts"]["test"].values()) == test_count

    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(stored(release_root, "1.0", "data/test.parquet")))
    lines = stored(release_root, "1.0", "data/test.jsonl").decode().splitlines()
    assert table.num_rows == len(lines) == test_count
    assert table.column("premise").to_pylist() == [json.loads(line)["premise"] for line in lines]

    card = stored(release_root, "1.0", "README.md").decode()
    header = card.split("---\n")[1]
    for line in ('- "fa"', 'license: "cc-by-nc-4.0"', '- "text-classification"', '- "n<1K"', "configs:"):
        assert line in header, line
    assert '- split: "test"\n    path: "data/test.jsonl"' in header
    for section in (
        "## Protocol",
        "## Counts per split and label",
        "## Agreement",
        "## Removals",
        "## Decision methods",
    ):
        assert section in card
    assert "نمونهٔ آزمایشی" in card
    assert "| import |" in card  # the decision method of every imported gold label

    detail = published.get(f"/api/projects/{SLUG}/releases/1.0/").json()
    assert detail["card"] == card and detail["files"] == result["files"] and detail["status"] == "ready"
    listed = published.get(f"/api/projects/{SLUG}/releases/").json()
    assert [r["version"] for r in listed] == ["1.0"]


@pytest.mark.django_db
def test_later_decisions_do_not_change_a_release_and_the_diff_names_them(published, release_root):
    from annotation.models import Item

    first = make_release(published, "1.0")
    before = {f["name"]: stored(release_root, "1.0", f["name"]) for f in first["files"]}
    item = Item.objects.filter(project__slug=SLUG, split="test").order_by("position", "pk").first()
    new_label = next(label for label in ("entailment", "contradiction", "neutral") if label != item.gold_label)
    old_label = item.gold_label
    decision = relabel(item.external_id, new_label)
    Item.objects.filter(project__slug=SLUG, split="dev").order_by("-position").first().delete()

    # Release 1.0 is as it was: same files, same bytes, same checksums, same answer.
    assert {f["name"]: stored(release_root, "1.0", f["name"]) for f in first["files"]} == before
    assert published.get(f"/api/projects/{SLUG}/releases/1.0/").json()["files"] == first["files"]
    second = make_release(published, "1.1")
    assert [f["sha256"] for f in second["files"] if f["name"] == "data/test.jsonl"] != [
        f["sha256"] for f in first["files"] if f["name"] == "data/test.jsonl"
    ]

    diff = published.get(f"/api/projects/{SLUG}/releases/1.0/diff/1.1/")
    assert diff.status_code == 200, diff.content
    body = diff.json()
    assert body["totals"] == {"added": 0, "removed": 1, "relabelled": 1, "moved": 0, "edited": 0}
    [change] = body["splits"]["test"]["relabelled"]
    assert (change["external_id"], change["from"], change["to"]) == (item.external_id, old_label, new_label)
    assert change["decisions"]["a"]["method"] == "import"
    assert change["decisions"]["b"] == {"id": decision.pk, "method": "adjudication", "round": decision.round}
    assert len(body["splits"]["dev"]["removed"]) == 1

    # The zip holds every file of the release with the same bytes.
    response = published.get(f"/api/projects/{SLUG}/releases/1.0/download/")
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    assert {name.split("/", 1)[1]: archive.read(name) for name in archive.namelist()} == before


@pytest.mark.django_db
def test_bad_requests_are_400s_naming_the_field_and_store_nothing(published, sup, release_root):
    from annotation.models import AuditEntry, Job, Release

    make_release(published, "1.0")
    counts = (Release.objects.count(), Job.objects.count(), AuditEntry.objects.count())
    for body, field in (
        ({"version": "1.0"}, "version"),  # used already
        ({"version": ""}, "version"),
        ({"version": "../x"}, "version"),
        ({"version": "2.0", "license": "Not A License"}, "license"),
        ({"version": "2.0", "description": 5}, "description"),
        ({"version": "2.0", "colour": "red"}, "body"),
    ):
        response = sup.post(f"/api/projects/{SLUG}/releases/", body, format="json")
        assert response.status_code == 400, (body, response.content)
        assert field in [e["field"] for e in response.json()["errors"]], (body, response.json())
    assert (Release.objects.count(), Job.objects.count(), AuditEntry.objects.count()) == counts
    assert sup.get(f"/api/projects/{SLUG}/releases/9.9/").status_code == 404
    assert sup.get(f"/api/projects/{SLUG}/releases/1.0/diff/9.9/").status_code == 404
    assert sup.get(f"/api/projects/{SLUG}/releases/9.9/download/").status_code == 404


@pytest.mark.django_db
def test_a_project_with_no_decided_items_is_a_400(sup, release_root):
    from annotation.models import Release

    response = sup.post(f"/api/projects/{SLUG}/releases/", {"version": "1.0"}, format="json")
    assert response.status_code == 400
    assert [e["field"] for e in response.json()["errors"]] == ["project"]
    assert not Release.objects.exists()


@pytest.mark.django_db
def test_only_supervisors_make_and_read_releases(published, client_for, django_user_model, make_user):
    make_release(published, "1.0")
    for name in ("rev", "ann1"):
        client = client_for(django_user_model.objects.get(username=name))
        assert client.get(f"/api/projects/{SLUG}/releases/").status_code == 403
        assert client.post(f"/api/projects/{SLUG}/releases/", {"version": "2"}, format="json").status_code == 403
        assert client.get(f"/api/projects/{SLUG}/releases/1.0/download/").status_code == 403
    outsider = client_for(make_user("outsider"))
    assert outsider.get(f"/api/projects/{SLUG}/releases/1.0/").status_code == 404


@pytest.mark.django_db
def test_the_page_lists_releases_with_their_cards(published, client, django_user_model):
    make_release(published, "1.0", license="cc-by-4.0")
    client.force_login(django_user_model.objects.get(username="sup"))
    page = client.get(f"/p/{SLUG}/releases/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "<h2>Protocol</h2>" in html and "data/test.parquet" in html and "cc-by-4.0" in html
    assert f"/api/projects/{SLUG}/releases/1.0/download/" in html
    client.force_login(django_user_model.objects.get(username="rev"))
    assert client.get(f"/p/{SLUG}/releases/").status_code == 403


@pytest.mark.django_db
def test_running_the_job_again_changes_nothing(published, release_root):
    from annotation.models import Release
    from annotation.tasks import _handlers

    first = make_release(published, "1.0")
    release = Release.objects.get(version="1.0")
    assert _handlers()["release"](release.job) == first
    assert Release.objects.get(pk=release.pk).files == first["files"]


@pytest.mark.django_db
def test_items_without_a_split_beside_a_train_split_are_released_apart(sup, release_root):
    """Beside named splits, items of no split are their own "unassigned" split, never mixed
    into (or colliding with) the "train" file."""
    rows = [
        {"id": "t1", "premise": "הנחה אחת", "hypothesis": "השערה אחת", "label": "entailment", "split": "train"},
        {"id": "t2", "premise": "הנחה שתיים", "hypothesis": "השערה שתיים", "label": "neutral", "split": "train"},
        {"id": "u1", "premise": "הנחה שלוש", "hypothesis": "השערה שלוש", "label": "contradiction"},
    ]
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()
    response = sup.post(
        f"/api/projects/{SLUG}/import/",
        {"file": upload("mixed.jsonl", text), "format": "jsonl", "labels_final": "true"},
    )
    assert response.status_code == 201, response.content
    make_release(sup, "1.0")
    train = [json.loads(line)["id"] for line in stored(release_root, "1.0", "data/train.jsonl").splitlines()]
    unassigned = [json.loads(line)["id"] for line in stored(release_root, "1.0", "data/unassigned.jsonl").splitlines()]
    assert (train, unassigned) == (["t1", "t2"], ["u1"])
