"""Stratified sampling (LCHAIM §2.2): N items drawn at random keeping each stratum's share,
repeatable by seed, only sampled items reach raters, refused once rating started; the
supervisor's form page does the same."""

import io
import json
from collections import Counter

import pytest

pytestmark = pytest.mark.django_db


def jsonl(rows) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()


@pytest.fixture
def setup(make_user, client_for):
    from annotation.models import Membership
    from annotation.services.imports import items_import
    from annotation.services.projects import project_create

    admin = make_user("root", staff=True)
    project = project_create(actor=admin, slug="mt", name="MT", kind="translation_rating", language="he")
    # LCHAIM's split sizes scaled down: train 6,692 : dev 837 : test 836 ≈ 160 : 20 : 20 of 200.
    rows = []
    for split, n in (("train", 669), ("dev", 84), ("test", 83)):
        rows += [
            {
                "id": f"{split}-{i}",
                "split": split,
                "source": {"premise": "p", "hypothesis": "h", "label": "n"},
                "candidates": [{"system": "a", "premise": "x", "hypothesis": "y"}],
            }
            for i in range(n)
        ]
    items_import(project=project, data=jsonl(rows), fmt="jsonl", user=admin)
    rater = make_user("rater")
    Membership.objects.create(project=project, user=rater, role="annotator", status="active")
    sup = make_user("sup")
    Membership.objects.create(project=project, user=sup, role="supervisor", status="active")
    return {
        "project": project,
        "root": client_for(admin),
        "rater": client_for(rater),
        "sup": sup,
        "sup_api": client_for(sup),
    }


def sampled(project):
    from annotation.models import Item

    return sorted(Item.objects.filter(project=project, in_sample=True).values_list("external_id", flat=True))


def test_sample_keeps_split_proportions_and_is_repeatable(setup):
    from annotation.models import Item, Job

    api = setup["sup_api"]
    response = api.post("/api/projects/mt/sample/", {"n": 20, "seed": 11}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["strata"] == {
        "dev": {"population": 84, "sampled": 2},
        "test": {"population": 83, "sampled": 2},
        "train": {"population": 669, "sampled": 16},
    }
    first = sampled(setup["project"])
    assert len(first) == 20 and Counter(x.split("-")[0] for x in first) == {"train": 16, "dev": 2, "test": 2}
    assert Job.objects.get(pk=body["job"]).params == {"n": 20, "stratum": "split", "seed": 11}
    # Same seed, same sample; another seed, another sample.
    assert api.post("/api/projects/mt/sample/", {"n": 20, "seed": 11}, format="json").status_code == 200
    assert sampled(setup["project"]) == first
    api.post("/api/projects/mt/sample/", {"n": 20, "seed": 12}, format="json")
    assert sampled(setup["project"]) != first
    # No seed: a fresh one is returned and reproduces the draw.
    body = api.post("/api/projects/mt/sample/", {"n": 200}, format="json").json()
    drawn = sampled(setup["project"])
    assert Counter(x.split("-")[0] for x in drawn) == {"train": 160, "dev": 20, "test": 20}
    api.post("/api/projects/mt/sample/", {"n": 200, "seed": body["seed"]}, format="json")
    assert sampled(setup["project"]) == drawn
    assert Item.objects.filter(project=setup["project"], in_sample=False).count() == 836 - 200


def test_only_sampled_items_go_to_raters_and_sampling_stops_once_rating_starts(setup):
    api, rater = setup["sup_api"], setup["rater"]
    api.post("/api/projects/mt/sample/", {"n": 3, "seed": 5}, format="json")
    chosen = set(sampled(setup["project"]))
    got = set()
    while True:
        response = rater.get("/api/projects/mt/next/")
        if response.status_code == 204:
            break
        body = response.json()
        got.add(body["item"]["external_id"])
        value = {"ratings": {"0": {"accuracy": 3, "fluency": 3, "cultural_fit": 3, "label_valid": True}}}
        assert (
            rater.post(f"/api/assignments/{body['assignment']}/submit/", {"value": value}, format="json").status_code
            == 201
        )
    assert got == chosen
    again = api.post("/api/projects/mt/sample/", {"n": 3, "seed": 6}, format="json")
    assert again.status_code == 409
    assert set(sampled(setup["project"])) == chosen


@pytest.mark.parametrize(
    "body, field",
    [
        ({"n": 0}, "n"),
        ({"n": 837}, "n"),
        ({"n": "5"}, "n"),
        ({"n": True}, "n"),
        ({"n": 1.5}, "n"),
        ({"n": 5, "stratum": "payload"}, "stratum"),
        ({"n": 5, "seed": -1}, "seed"),
        ({"n": 5, "extra": 1}, "body"),
        ({"n": 5, "stratum": []}, "stratum"),
        ('{"n": 5, "stratum": "split\\ud800"}', "stratum"),
        ({"n": 5, "seed": [1]}, "seed"),
    ],
)
def test_bad_sample_requests_are_400_and_change_nothing(setup, body, field):
    if isinstance(body, str):  # raw JSON: a lone surrogate escape cannot be encoded by the client
        response = setup["sup_api"].post("/api/projects/mt/sample/", body, content_type="application/json")
    else:
        response = setup["sup_api"].post("/api/projects/mt/sample/", body, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["errors"][0]["field"] == field
    assert len(sampled(setup["project"])) == 836


def test_raters_may_not_sample_and_the_form_page_works(setup, client):
    assert setup["rater"].post("/api/projects/mt/sample/", {"n": 3}, format="json").status_code == 403
    client.force_login(setup["sup"])
    page = client.get("/p/mt/lchaim/")
    assert (
        page.status_code == 200
        and b'id="sample-form"' in page.content
        and b'<html lang="en" dir="ltr">' in page.content
    )  # the interface's language, not the project's
    response = client.post("/p/mt/lchaim/sample/", {"n": "10", "stratum": "split", "seed": "3"}, follow=True)
    assert response.status_code == 200
    assert len(sampled(setup["project"])) == 10
    assert "seed 3" in response.content.decode()
    assert b'placeholder="200"' in client.get("/p/mt/lchaim/").content
    client.post("/p/mt/lchaim/sample/", {"n": "", "stratum": "split", "seed": "3"})
    assert len(sampled(setup["project"])) == 200
    bad = client.post("/p/mt/lchaim/sample/", {"n": "abc"}, follow=True)
    assert "Items: must be an integer" in bad.content.decode()  # the field by its label
    assert len(sampled(setup["project"])) == 200


def test_sample_size_defaults_to_the_papers_200_keeping_split_shares(setup):
    """LCHAIM §2.2: 200 samples, the splits' shares kept; `n` omitted takes the project's
    `sample_size` setting (default 200)."""
    from annotation.models import Job

    api = setup["sup_api"]
    assert setup["root"].get("/api/projects/mt/").json()["settings"]["sample_size"] == 200
    response = api.post("/api/projects/mt/sample/", {"seed": 4}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["n"] == 200
    assert Counter(x.split("-")[0] for x in sampled(setup["project"])) == {"train": 160, "dev": 20, "test": 20}
    assert Job.objects.get(pk=response.json()["job"]).params == {"n": 200, "stratum": "split", "seed": 4}


def test_sample_size_setting_is_used_checked_and_capped_by_the_items(make_user, client_for):
    root = client_for(make_user("admin", staff=True))
    bad = root.post(
        "/api/projects/",
        {"slug": "mt0", "name": "MT", "kind": "translation_rating", "language": "he", "settings": {"sample_size": 0}},
        format="json",
    )
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "settings.sample_size"
    made = root.post(
        "/api/projects/",
        {"slug": "mt5", "name": "MT", "kind": "translation_rating", "language": "he", "settings": {"sample_size": 5}},
        format="json",
    )
    assert made.status_code == 201, made.content
    rows = [
        {
            "id": f"i{i}",
            "split": "dev",
            "source": {"premise": "p", "hypothesis": "h", "label": "n"},
            "candidates": [{"system": "a", "premise": "x", "hypothesis": "y"}],
        }
        for i in range(8)
    ]
    for slug in ("mt5", "mt200"):
        if slug == "mt200":
            assert (
                root.post(
                    "/api/projects/",
                    {"slug": slug, "name": "MT", "kind": "translation_rating", "language": "he"},
                    format="json",
                ).status_code
                == 201
            )
        upload = io.BytesIO(jsonl(rows))
        upload.name = "t.jsonl"
        assert root.post(f"/api/projects/{slug}/import/", {"file": upload, "format": "jsonl"}).status_code == 201
    assert root.post("/api/projects/mt5/sample/", {}, format="json").json()["n"] == 5
    # The default larger than the project draws every item; an explicit n larger is refused.
    assert root.post("/api/projects/mt200/sample/", {}, format="json").json()["n"] == 8
    assert root.post("/api/projects/mt200/sample/", {"n": 9}, format="json").status_code == 400
