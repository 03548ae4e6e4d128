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
