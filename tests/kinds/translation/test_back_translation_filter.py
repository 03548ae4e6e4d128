"""The back-translation filter as LCHAIM §2.2 applies it: similarities per system; the items
whose *released* system's premise or hypothesis back-translation scores below the threshold
(0.75) leave the rating queue and the default exports, with the reason and the scores on
record, until a supervisor restores them; the report gives mean ± sd and the count below the
threshold for premises and for hypotheses. The encoder is a stub here;
test_back_translation_model.py runs the real model on the worker."""

import json

import numpy as np
import pytest

from tests.kinds.translation.test_api import import_rows, row, stub_encoder

pytestmark = pytest.mark.django_db

GOOD = "good"


def with_backs(i, amazon=GOOD, dicta=GOOD):
    """Row i; each system's back-translation equals the source (GOOD) or is unrelated in
    the named part ("premise" or "hypothesis")."""
    record = row(i)
    source = record["source"]
    for candidate, which in zip(record["candidates"], (amazon, dicta)):
        back = {"premise": source["premise"], "hypothesis": source["hypothesis"]}
        if which != GOOD:
            back[which] = "Completely unrelated words about stock markets."
        candidate["back_translation"] = back
    return record


@pytest.fixture
def filtered(make_user, client_for, monkeypatch, settings, django_capture_on_commit_callbacks):
    from annotation.kinds.translation import back_translation

    settings.CELERY_TASK_ALWAYS_EAGER = True
    monkeypatch.setattr(back_translation, "embeddings_installed", lambda: True)
    monkeypatch.setattr(back_translation, "load_encoder", lambda: stub_encoder)
    root = client_for(make_user("root", staff=True))
    made = root.post(
        "/api/projects/",
        {
            "slug": "bt",
            "name": "BT",
            "kind": "translation_rating",
            "language": "he",
            "settings": {"released_system": "amazon"},
        },
        format="json",
    )
    assert made.status_code == 201, made.content
    users = {}
    for name in ("r1", "r2", "sup"):
        users[name] = make_user(name)
        role = "supervisor" if name == "sup" else "annotator"
        assert (
            root.post(
                "/api/projects/bt/members/", {"username": name, "role": role, "status": "active"}, format="json"
            ).status_code
            == 201
        )
    rows = [
        with_backs(1),
        with_backs(2, dicta="premise"),
        with_backs(3, amazon="hypothesis"),
        with_backs(4, amazon="premise"),
        row(5),
    ]
    import_rows(root, rows, slug="bt")
    with django_capture_on_commit_callbacks(execute=True):
        started = client_for(users["sup"]).post("/api/projects/bt/back-translation/")
    assert started.status_code == 202, started.content
    job = root.get(f"/api/jobs/{started.json()['job']}/").json()
    assert job["status"] == "done", job
    return {"root": root, "sup": client_for(users["sup"]), "client": lambda n: client_for(users[n]), "job": job}


def rate_everything(client):
    seen = []
    while (response := client.get("/api/projects/bt/next/")).status_code == 200:
        body = response.json()
        seen.append(body["item"]["external_id"])
        n = len(body["item"]["payload"]["candidates"])
        value = {
            "ratings": {str(d): {"accuracy": 4, "fluency": 4, "cultural_fit": 4, "label_valid": True} for d in range(n)}
        }
        assert (
            client.post(f"/api/assignments/{body['assignment']}/submit/", {"value": value}, format="json").status_code
            == 201
        )
    return sorted(seen)


def export_ids(client, query):
    response = client.get(query)
    assert response.status_code == 200, response.content
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return sorted({json.loads(line)["id"] for line in body.decode().splitlines() if line})


def test_released_system_below_threshold_leaves_queue_and_default_exports_with_reason(filtered):
    from annotation.models import Item

    items = {item.external_id: item for item in Item.objects.filter(project__slug="bt")}
    assert {k for k, v in items.items() if v.status == "removed"} == {"x3", "x4"}
    removal = items["x3"].computed["back_translation"]["removed"]
    assert removal["system"] == "amazon" and removal["threshold"] == 0.75
    assert removal["hypothesis"] < 0.75 <= removal["premise"] and "0.75" in removal["reason"]
    assert items["x4"].computed["back_translation"]["removed"]["premise"] < 0.75
    # A low score of another system is on record (flag and scores) but removes nothing.
    assert items["x2"].status == "open" and items["x2"].flags == ["low_back_translation"]
    assert filtered["job"]["result"]["removed"] == 2
    # The queue: only the kept items reach raters.
    assert rate_everything(filtered["client"]("r1")) == ["x1", "x2", "x5"]
    assert rate_everything(filtered["client"]("r2")) == ["x1", "x2", "x5"]
    sup = filtered["sup"]
    assert export_ids(sup, "/api/projects/bt/export/?format=jsonl") == ["x1", "x2", "x5"]
    assert export_ids(sup, "/api/projects/bt/ratings-export/?format=jsonl") == ["x1", "x2", "x5"]
    # Asked for, the removed items are still there.
    assert export_ids(sup, "/api/projects/bt/ratings-export/?format=jsonl&status=removed") == ["x3", "x4"]
    assert export_ids(sup, "/api/projects/bt/export/?format=jsonl&status=removed") == ["x3", "x4"]


def test_report_gives_mean_sd_and_count_below_per_part_as_the_paper(filtered):
    from annotation.models import Item

    report = filtered["sup"].get("/api/projects/bt/report/").json()["back_translation"]
    assert report["threshold"] == 0.75 and report["released_system"] == "amazon"
    assert report["removed"] == 2 and report["restored"] == 0
    stored = {
        item.external_id: item.computed.get("back_translation") for item in Item.objects.filter(project__slug="bt")
    }
    for index, system in enumerate(("amazon", "dicta")):
        for part in ("premise", "hypothesis"):
            values = [s["candidates"][index][part] for s in stored.values() if s]
            figure = report["systems"][system][part]
            assert figure["n"] == len(values) == 4
            assert figure["mean"] == pytest.approx(np.mean(values))
            assert figure["sd"] == pytest.approx(np.std(values, ddof=1))
            assert figure["below"] == sum(v < 0.75 for v in values)
    assert (
        report["systems"]["amazon"]["premise"]["below"] == 1 and report["systems"]["amazon"]["hypothesis"]["below"] == 1
    )
    assert (
        report["systems"]["dicta"]["premise"]["below"] == 1 and report["systems"]["dicta"]["hypothesis"]["below"] == 0
    )


@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "items"),
        ({"items": []}, "items"),
        ({"items": "x3"}, "items"),
        ({"items": ["x3"]}, "items[0]"),
        ({"items": [True]}, "items[0]"),
        ({"items": [987654321]}, "items[0]"),
        ({"items": [1], "extra": 1}, "body"),
    ],
)
def test_bad_restore_requests_are_400_naming_the_field_and_store_nothing(filtered, body, field):
    from annotation.models import Item

    before = list(Item.objects.order_by("pk").values_list("status", "computed"))
    response = filtered["sup"].post("/api/projects/bt/back-translation/restore/", body, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["errors"][0]["field"] == field
    assert list(Item.objects.order_by("pk").values_list("status", "computed")) == before


def test_a_supervisor_restores_and_a_recompute_keeps_the_restore(filtered, django_capture_on_commit_callbacks):
    from annotation.models import Item

    x1, x3, x4 = (Item.objects.get(external_id=k) for k in ("x1", "x3", "x4"))
    url = "/api/projects/bt/back-translation/restore/"
    # Not removed by the filter: refused, nothing changes.
    mixed = filtered["sup"].post(url, {"items": [x3.pk, x1.pk]}, format="json")
    assert mixed.status_code == 400 and mixed.json()["errors"][0]["field"] == "items[1]"
    assert Item.objects.get(pk=x3.pk).status == "removed"
    assert filtered["client"]("r1").post(url, {"items": [x3.pk]}, format="json").status_code == 403
    restored = filtered["sup"].post(url, {"items": [x3.pk]}, format="json")
    assert restored.status_code == 200, restored.content
    assert restored.json() == {"restored": 1}
    x3.refresh_from_db()
    assert x3.status == "open" and x3.computed["back_translation"]["restored"]["by"] == "sup"
    assert "removed" not in x3.computed["back_translation"]
    with django_capture_on_commit_callbacks(execute=True):
        assert filtered["sup"].post("/api/projects/bt/back-translation/").status_code == 202
    assert Item.objects.get(pk=x3.pk).status == "open" and Item.objects.get(pk=x4.pk).status == "removed"
    assert rate_everything(filtered["client"]("r1")) == ["x1", "x2", "x3", "x5"]
    report = filtered["sup"].get("/api/projects/bt/report/").json()["back_translation"]
    assert report["removed"] == 1 and report["restored"] == 1


def test_released_system_must_be_a_text(make_user, client_for):
    root = client_for(make_user("root", staff=True))
    bad = root.post(
        "/api/projects/",
        {
            "slug": "bt2",
            "name": "BT",
            "kind": "translation_rating",
            "language": "he",
            "settings": {"released_system": 3},
        },
        format="json",
    )
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "settings.released_system"
