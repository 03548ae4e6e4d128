"""Near-duplicate search in a `translation_rating` project through HTTP: the English
source pairs are compared (docs/api.md "Dataset release"), so a sample whose source is a near-copy
of another's is found whatever the systems' translations say, and a sample whose
translations alone look alike is not."""

import io
import json

import pytest

pytestmark = pytest.mark.django_db

SLUG = "he-mt-dup"


def jsonl(rows) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def sample(i, premise, hypothesis, candidates):
    return {
        "id": f"x{i}",
        "source": {"premise": premise, "hypothesis": hypothesis, "label": "e"},
        "candidates": [
            {"system": system, "premise": p, "hypothesis": h} for system, (p, h) in zip(("amazon", "dicta"), candidates)
        ],
    }


SOURCES = [
    ("The committee met on Tuesday to discuss the annual budget of the town.", "The committee met."),
    ("A storm closed the northern highway for two days last winter.", "The highway was closed."),
    ("Three students won the regional chess tournament in the spring.", "Students won a tournament."),
]


@pytest.fixture
def sup(make_user, client_for):
    root = client_for(make_user("root", staff=True))
    made = root.post(
        "/api/projects/", {"slug": SLUG, "name": "MT", "kind": "translation_rating", "language": "he"}, format="json"
    )
    assert made.status_code == 201, made.content
    return root


def run_duplicates(client, body=None) -> dict:
    from annotation.models import Job
    from annotation.tasks import run_job

    response = client.post(f"/api/projects/{SLUG}/duplicates/", body or {}, format="json")
    assert response.status_code == 202, response.content[:500]
    run_job(response.json()["job"])
    job = Job.objects.get(pk=response.json()["job"])
    assert job.status == "done", job.error
    return job.result


def test_the_source_pairs_are_compared_not_the_translations(sup):
    rows = [
        sample(k, p, h, [(f"תרגום {k} א", f"השערה {k} א"), (f"תרגום {k} ב", f"השערה {k} ב")])
        for k, (p, h) in enumerate(SOURCES)
    ]
    premise, hypothesis = SOURCES[0]
    # A near-copy of the first source (one word dropped) with wholly different translations.
    rows.append(sample(3, premise.replace(" annual", ""), hypothesis, [("אחר לגמרי", "שונה"), ("עוד נוסח", "כן")]))
    # The third sample's translations copied under a source of its own: not a near-duplicate.
    copied = [(c["premise"], c["hypothesis"]) for c in rows[2]["candidates"]]
    rows.append(sample(4, "Birds fly south when the days grow short.", "Birds migrate.", copied))
    handle = io.BytesIO(jsonl(rows).encode())
    handle.name = "t.jsonl"
    assert sup.post(f"/api/projects/{SLUG}/import/", {"file": handle, "format": "jsonl"}).status_code == 201
    result = run_duplicates(sup)
    assert (result["items"], result["pairs"]) == (5, 1)
    pair = sup.get(f"/api/projects/{SLUG}/duplicates/").json()["results"][0]
    assert (pair["a"]["external_id"], pair["b"]["external_id"]) == ("x0", "x3")
    assert pair["premise_similarity"] > 0.8 and pair["hypothesis_similarity"] == 1.0
    # The supervisor removes the copy through the ledger, as in NLI projects.
    removed = sup.post(f"/api/projects/{SLUG}/duplicates/{pair['id']}/", {"decision": "remove"}, format="json")
    assert removed.status_code == 200
    from annotation.models import Item

    assert Item.objects.get(external_id="x3").status == "removed"


def test_kinds_without_a_pair_are_still_refused(make_user, client_for):
    root = client_for(make_user("root", staff=True))
    made = root.post(
        "/api/projects/", {"slug": "qa-x", "name": "QA", "kind": "qa_authoring", "language": "he"}, format="json"
    )
    assert made.status_code == 201, made.content
    response = root.post("/api/projects/qa-x/duplicates/", {}, format="json")
    assert response.status_code == 400 and response.json()["errors"][0]["field"] == "kind"
