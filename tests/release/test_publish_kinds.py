"""A release of each kind's demo project (annotation/demo/): every kind's items, made finished
directly, release into JSONL and Parquet files per split with the same rows, the kind's own
format where it has one (SQuAD JSON for qa_authoring), and a card whose configs name the
splits' files."""

import io
import json
from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parents[2] / "annotation" / "demo"
KINDS = {
    "nli_relabel": "nli_he.jsonl",
    "label_test": "nli_he.jsonl",
    "qa_authoring": "qa_he.jsonl",
    "translation_rating": "translation_he.jsonl",
    "phrase_pair": "phrase_he.jsonl",
    "summary_rating": "summaries_he.jsonl",
}


@pytest.mark.django_db
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_kind_releases_its_finished_items(kind, make_user, settings, tmp_path):
    import pyarrow.parquet as pq

    from annotation.kinds.registry import get_kind
    from annotation.models import Item, Job, Membership, Release
    from annotation.release.publish import release_request
    from annotation.services.imports import items_import
    from annotation.services.projects import project_create
    from annotation.tasks import run_job

    settings.MASHOV_RELEASE_ROOT = str(tmp_path)
    admin, sup = make_user("k-admin", staff=True), make_user("k-sup")
    project = project_create(actor=admin, slug="k-demo", name="Demo", kind=kind, language="he")
    Membership.objects.create(project=project, user=sup, role="supervisor", status="active")
    items_import(project=project, data=(DEMO / KINDS[kind]).read_bytes(), fmt="jsonl", filename=KINDS[kind], user=admin)
    finished = get_kind(kind).default_export_status
    Item.objects.filter(project=project, probe_of__isnull=True).update(status=finished)
    release = release_request(user=sup, slug="k-demo", body={"version": "0.1"})
    run_job(release.job_id)
    assert Job.objects.get(pk=release.job_id).status == "done", Job.objects.get(pk=release.job_id).error
    release = Release.objects.get(pk=release.pk)
    names = [f["name"] for f in release.files]
    splits = sorted(release.counts)
    assert splits and sum(sum(c.values()) for c in release.counts.values()) == len(release.manifest)
    for split in splits:
        lines = (tmp_path / "k-demo" / "0.1" / "data" / f"{split}.jsonl").read_bytes().decode().splitlines()
        table = pq.read_table(io.BytesIO((tmp_path / "k-demo" / "0.1" / "data" / f"{split}.parquet").read_bytes()))
        assert table.num_rows == len(lines) > 0
        assert f'- split: "{split}"\n    path: "data/{split}.jsonl"' in release.card
        first = json.loads(lines[0])
        assert table.column("id").to_pylist()[0] == first["id"]
    if kind == "qa_authoring":
        assert any(name.startswith("squad/") for name in names)


def assert_release_loads(path: Path, splits: list[str], tmp_path: Path, monkeypatch) -> None:
    """`datasets.load_dataset(<folder>)` gives the release's named splits with the JSONL's rows;
    its Parquet files load with one set of typed features (objects as structs, lists as
    lists: no column of JSON text) and the same rows."""
    from datasets import Value, load_dataset

    from tests.api.test_export_datasets import empty_structs, filled

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    records = {
        split: [json.loads(line) for line in (path / "data" / f"{split}.jsonl").read_text().splitlines()]
        for split in splits
    }
    loaded = load_dataset(str(path), cache_dir=str(tmp_path / "cache"))
    assert sorted(loaded) == splits
    for split in splits:
        assert loaded[split].to_list() == [filled(r, loaded[split].features) for r in records[split]]
    parquet = load_dataset(
        "parquet",
        data_files={split: str(path / "data" / f"{split}.parquet") for split in splits},
        cache_dir=str(tmp_path / "cache-parquet"),
    )
    features = parquet[splits[0]].features
    assert all(parquet[split].features == features for split in splits)
    assert empty_structs(dict(features)) == []
    nested = {
        key for rows in records.values() for r in rows for key, value in r.items() if isinstance(value, (dict, list))
    }
    assert nested and not [key for key in nested if features[key] == Value("string")], features
    for split in splits:
        assert parquet[split].to_list() == [filled(r, features) for r in records[split]]
        # Where one split's JSONL already shows every member, the two readers agree.
        for key in nested:
            if loaded[split].features[key] == features[key]:
                assert loaded[split][key] == parquet[split][key]


@pytest.mark.django_db
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_kinds_release_folder_loads_with_typed_features(kind, make_user, settings, tmp_path, monkeypatch):
    """The demo items with votes and ratings of two annotators, so that objects and lists
    of objects (votes per label or per system, annotators, aggregates) fill the records."""
    from annotation.kinds.registry import get_kind
    from annotation.models import Item, Membership
    from annotation.release.publish import release_request
    from annotation.services.imports import items_import
    from annotation.services.projects import project_create
    from annotation.tasks import run_job
    from tests.api.test_export_datasets import rate

    settings.MASHOV_RELEASE_ROOT = str(tmp_path / "releases")
    admin, sup = make_user("t-admin", staff=True), make_user("t-sup")
    project = project_create(actor=admin, slug="t-demo", name="Demo", kind=kind, language="he")
    Membership.objects.create(project=project, user=sup, role="supervisor", status="active")
    items_import(project=project, data=(DEMO / KINDS[kind]).read_bytes(), fmt="jsonl", filename=KINDS[kind], user=admin)
    rate(project, VALUES[kind])
    Item.objects.filter(project=project, probe_of__isnull=True).update(status=get_kind(kind).default_export_status)
    release = release_request(user=sup, slug="t-demo", body={"version": "0.1"})
    run_job(release.job_id)
    release.refresh_from_db()
    assert release.status == "ready", release.error
    assert_release_loads(tmp_path / "releases" / "t-demo" / "0.1", sorted(release.counts), tmp_path, monkeypatch)


def _summary_value(item, k):
    rating = {"coherence": 3 + k, "completeness": 2, "errors": [["repetition"], []][k]}
    return {"ratings": {str(d): rating for d in range(len(item.payload["summaries"]))}}


def _translation_value(item, k):
    scores = {"accuracy": 4, "fluency": 3 + k, "cultural_fit": 5, "label_valid": True}
    return {"ratings": {str(c): scores for c in range(len(item.payload["candidates"]))}}


VALUES = {
    "nli_relabel": lambda item, k: {"label": ("entailment", "neutral")[k]},
    "label_test": lambda item, k: {"label": ("entailment", "neutral")[k]},
    "qa_authoring": lambda item, k: {"questions": []},
    "translation_rating": _translation_value,
    "phrase_pair": lambda item, k: {"label": ("EQUIVALENT", "FORWARD")[k]},
    "summary_rating": _summary_value,
}


@pytest.mark.django_db
def test_a_member_only_later_items_have_is_a_typed_parquet_column(make_user, settings, tmp_path, monkeypatch):
    """Extra columns on one item of the middle of a split: the Parquet schema comes from
    every record of every split, not from the first one."""
    import pyarrow.parquet as pq
    from datasets import Value

    from annotation.models import Item, Membership
    from annotation.release.publish import release_request
    from annotation.tasks import run_job
    from tests.api.test_export_datasets import import_rows, new_project, nli_rows, rate

    settings.MASHOV_RELEASE_ROOT = str(tmp_path / "releases")
    admin, sup = make_user("x-admin", staff=True), make_user("x-sup")
    project = new_project(admin, "nli_relabel", "x-nli")
    Membership.objects.create(project=project, user=sup, role="supervisor", status="active")
    rows = nli_rows("entailment")
    rows[3]["extra"] = rows[0].pop("extra")  # the second item of train, and no other
    import_rows(project, rows)
    rate(project, lambda item, k: {"label": ("entailment", "neutral")[k]})
    Item.objects.filter(project=project).update(status="accepted")
    release = release_request(user=sup, slug="x-nli", body={"version": "1"})
    run_job(release.job_id)
    folder = tmp_path / "releases" / "x-nli" / "1"
    for split in ("train", "dev", "test"):
        schema = pq.read_schema(folder / "data" / f"{split}.parquet")
        assert str(schema.field("extra").type) == "struct<hard(overlap): string>", split
    assert_release_loads(folder, ["dev", "test", "train"], tmp_path, monkeypatch)
    from datasets import load_dataset

    train = load_dataset("parquet", data_files=str(folder / "data" / "train.parquet"), cache_dir=str(tmp_path / "c"))
    assert train["train"].features["extra"] == {"hard(overlap)": Value("string")}
    assert train["train"]["extra"] == [None, {"hard(overlap)": "1"}]
