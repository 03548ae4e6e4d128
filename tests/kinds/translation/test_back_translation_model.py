"""The back-translation filter with the real MiniLM model (requirements-embeddings.txt), run
by a real worker process: paraphrases of the English source score high, an unrelated
back-translation scores low, flags its item and, the system being the released one, removes
it from the queue; the report gives the paper's figures (LCHAIM §2.2, threshold 0.75)."""

import io
import json

import pytest

from tests.conftest import wait_for_worker_idle, wait_until

pytestmark = [pytest.mark.embeddings, pytest.mark.worker, pytest.mark.postgres]


def test_real_model_on_the_worker_flags_an_unrelated_back_translation(
    transactional_db, celery_worker, make_user, client_for
):
    from annotation.models import Item

    admin = client_for(make_user("root", staff=True))
    assert (
        admin.post(
            "/api/projects/",
            {
                "slug": "bt",
                "name": "bt",
                "kind": "translation_rating",
                "language": "he",
                "settings": {"released_system": "a"},
            },
            format="json",
        ).status_code
        == 201
    )
    source = {
        "premise": "The children played football in the park after school.",
        "hypothesis": "Kids played a game outside.",
        "label": "e",
    }
    rows = [
        {
            "id": "close",
            "source": source,
            "candidates": [
                {
                    "system": "a",
                    "premise": "הילדים שיחקו כדורגל בפארק אחרי בית הספר.",
                    "hypothesis": "ילדים שיחקו משחק בחוץ.",
                    "back_translation": {
                        "premise": "After school the children played soccer in the park.",
                        "hypothesis": "Children played a game outdoors.",
                    },
                }
            ],
        },
        {
            "id": "far",
            "source": source,
            "candidates": [
                {
                    "system": "a",
                    "premise": "מחירי המניות ירדו בחדות.",
                    "hypothesis": "ילדים שיחקו משחק בחוץ.",
                    "back_translation": {
                        "premise": "Stock prices fell sharply on Monday.",
                        "hypothesis": "Children played a game outdoors.",
                    },
                }
            ],
        },
    ]
    upload = io.BytesIO("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode())
    upload.name = "bt.jsonl"
    assert admin.post("/api/projects/bt/import/", {"file": upload, "format": "jsonl"}).status_code == 201
    started = admin.post("/api/projects/bt/back-translation/")
    assert started.status_code == 202, started.content
    job_id = started.json()["job"]
    job = wait_until(
        lambda: (j := admin.get(f"/api/jobs/{job_id}/").json())["status"] in ("done", "failed") and j, timeout=240
    )
    assert job["status"] == "done", job
    close, far = Item.objects.get(external_id="close"), Item.objects.get(external_id="far")
    close_sims = close.computed["back_translation"]["candidates"][0]
    far_sims = far.computed["back_translation"]["candidates"][0]
    assert close_sims["premise"] > 0.75 and close_sims["hypothesis"] > 0.75
    assert far_sims["premise"] < 0.5
    assert close.flags == [] and far.flags == ["low_back_translation"]
    assert close.status == "open" and far.status == "removed"
    assert far.computed["back_translation"]["removed"]["premise"] == far_sims["premise"]
    report = admin.get("/api/projects/bt/report/").json()["back_translation"]
    # Unique instances, as the paper counts them: the two premises' back-translations differ,
    # the hypotheses' are the same text.
    premise, hypothesis = report["systems"]["a"]["premise"], report["systems"]["a"]["hypothesis"]
    assert premise["n"] == 2 and premise["below"] == 1 and hypothesis["n"] == 1 and hypothesis["below"] == 0
    assert premise["mean"] == pytest.approx((close_sims["premise"] + far_sims["premise"]) / 2, abs=1e-6)
    assert report["removed"] == 1
    # The run asked for the report's figures to be read again: that job ends before the
    # teardown empties the tables.
    wait_for_worker_idle()
