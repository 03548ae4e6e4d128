"""Model evaluation on the real stack: the upload committed, its job scored by a real Celery
worker with progress, the figures read back; and `manage.py evaluate` from the shell."""

import pytest

from tests.conftest import wait_until
from tests.kinds.qa.test_api import jsonl, upload
from tests.release.test_evaluation_api import ITEMS, PREDICTIONS, URL


def _items(project):
    from annotation.models import Item

    for position, (key, gold, split, _computed, overlap, _hypothesis) in enumerate(ITEMS):
        Item.objects.create(
            project=project,
            external_id=key,
            position=position,
            split=split,
            status="accepted",
            gold_label=gold,
            payload={"premise": "پیش‌فرض", "hypothesis": "فرضیه", "extra": {"hard(overlap)": overlap}},
        )


@pytest.mark.worker
@pytest.mark.postgres
def test_the_evaluation_job_runs_on_a_real_worker(transactional_db, celery_worker, nli_project, client_for):
    from django.contrib.auth import get_user_model

    _items(nli_project)
    client = client_for(get_user_model().objects.get(username="sup"))
    text = jsonl({"id": key, "prediction": value} for key, value in PREDICTIONS.items())
    response = client.post(URL, {"file": upload("p.jsonl", text), "name": "worker-model"}, format="multipart")
    assert response.status_code == 202, response.content
    job_id, evaluation_id = response.json()["job"], response.json()["id"]
    final = wait_until(
        lambda: (body := client.get(f"/api/jobs/{job_id}/").json())["status"] in ("done", "failed") and body, timeout=90
    )
    assert final["status"] == "done" and final["progress"] == 1.0, final
    assert final["result"]["figures"]["accuracy"] == pytest.approx(4 / 6)
    detail = client.get(f"{URL}{evaluation_id}/").json()
    assert detail["status"] == "done"
    assert detail["figures"]["subsets"]["hard(overlap)"]["hard"]["value"] == pytest.approx(2 / 3)  # t1, t2 wrong, t6
    # Done: another run may start, and the same file gives the same figures.
    again = client.post(URL, {"file": upload("p.jsonl", text), "name": "again"}, format="multipart")
    assert again.status_code == 202, again.content
    wait_until(lambda: client.get(f"/api/jobs/{again.json()['job']}/").json()["status"] == "done", timeout=90)
    assert client.get(f"{URL}{again.json()['id']}/").json()["figures"] == detail["figures"]


@pytest.mark.django_db
def test_manage_py_evaluate_prints_every_figure_with_its_interval(nli_project, tmp_path):
    from io import StringIO

    from django.core.management import CommandError, call_command

    _items(nli_project)
    path = tmp_path / "model.jsonl"
    path.write_text(jsonl({"id": key, "prediction": value} for key, value in PREDICTIONS.items()), encoding="utf-8")
    out = StringIO()
    call_command("evaluate", "fa-nli", str(path), "--name", "cli-model", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].endswith("cli-model · split test · 6 items")
    accuracy = next(line for line in lines if line.startswith("accuracy\t"))
    assert accuracy.split("\t")[1] == "0.6667" and accuracy.split("\t")[2].startswith("[")
    assert any(line.startswith("subsets.hard(overlap).easy\t") for line in lines)
    assert any(line.startswith("confusion\t") for line in lines)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(jsonl([{"id": "t1", "prediction": "maybe"}]), encoding="utf-8")
    err = StringIO()
    with pytest.raises(CommandError, match="nothing was stored"):
        call_command("evaluate", "fa-nli", str(bad), stderr=err)
    assert "row 1: prediction: must be one of entailment, neutral, contradiction" in err.getvalue()
