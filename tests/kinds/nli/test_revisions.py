"""Revision of failed items through HTTP (FarsTail §3.2; docs/api.md "Revisions"): an author's
pair that fails k-of-n consensus comes back to them with the labels cast (counts, never
voters), they revise it into a second round relabeled by fresh votes or withdraw it; a
second failure removes it. Also the revision page /p/<slug>/revisions/.

Consensus is run in-process here (CELERY_TASK_ALWAYS_EAGER) on commit, on both stacks: the
worker path has its own tests; these are about the revision rules."""

import io
import json

import pytest

from annotation.kinds.registry import get_kind

pytestmark = pytest.mark.django_db

ZWNJ = "\u200c"
VOTERS = ("bita", "cyrus")
ITEMS = [
    # id, premise, hypothesis, author's label, round-1 votes of the two voters
    ("fail-then-revise", "کتاب روی میز است.", "کتابی روی میز هست.", "entailment", ("neutral", "contradiction")),
    ("fail-then-withdraw", "هوا آفتابی است.", "باران می‌بارد.", "contradiction", ("neutral", "entailment")),
    ("accepted", "علی در تهران زندگی می‌کند.", "علی در ایران است.", "entailment", ("entailment", "neutral")),
    (
        "fail-then-pass",
        f"مریم کتاب{ZWNJ}خانه را ترک کرد.",
        "مریم در کتابخانه است.",
        "contradiction",
        ("entailment", "neutral"),
    ),
]


def upload(name: str, text: str):
    handle = io.BytesIO(text.encode("utf-8"))
    handle.name = name
    return handle


@pytest.fixture
def relabel(make_user, client_for, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    admin = make_user("root", staff=True)
    root = client_for(admin)
    made = root.post(
        "/api/projects/",
        {
            "slug": "fa-rev",
            "name": "Revisions",
            "kind": "nli_relabel",
            "language": "fa",
            "settings": {"consensus_n": 3, "consensus_k": 2, "revision_rounds": 1},
        },
        format="json",
    )
    assert made.status_code == 201, made.content
    users = {}
    for name in ("author-a", *VOTERS, "dara", "outsider"):
        users[name] = make_user(name)
        if name != "outsider":
            assert (
                root.post(
                    "/api/projects/fa-rev/members/",
                    {"username": name, "role": "annotator", "status": "active"},
                    format="json",
                ).status_code
                == 201
            )
    rows = [
        {"id": external_id, "premise": premise, "hypothesis": hypothesis, "label": label, "author": "author-a"}
        for external_id, premise, hypothesis, label, _votes in ITEMS
    ]
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    assert (
        root.post("/api/projects/fa-rev/import/", {"file": upload("r.jsonl", text), "format": "jsonl"}).status_code
        == 201
    )
    return {"users": users, "client": lambda name: client_for(users[name])}


def vote_all(client, choose, capture) -> list[str]:
    """Label everything the voter is offered, `choose(external_id)` deciding the label, with
    the on-commit callbacks (the consensus job) executed. Returns the external ids seen."""
    seen = []
    while True:
        response = client.get("/api/projects/fa-rev/next/")
        if response.status_code == 204:
            return seen
        assert response.status_code == 200, response.content
        body = response.json()
        seen.append(body["item"]["external_id"])
        with capture(execute=True):
            submitted = client.post(
                f"/api/assignments/{body['assignment']}/submit/",
                {"value": {"label": choose(body["item"]["external_id"])}},
                format="json",
            )
        assert submitted.status_code == 201, submitted.content


def statuses():
    from annotation.models import Item

    return dict(Item.objects.filter(project__slug="fa-rev").values_list("external_id", "status"))


def item_id(external_id):
    from annotation.models import Item

    return Item.objects.get(project__slug="fa-rev", external_id=external_id).pk


def test_revise_and_withdraw_through_http(relabel, django_capture_on_commit_callbacks):
    from annotation.models import Annotation, ConsensusOutcome, ItemRevision

    client = relabel["client"]
    first_votes = {external_id: votes for external_id, *_rest, votes in ITEMS}
    for index, voter in enumerate(VOTERS):
        seen = vote_all(client(voter), lambda eid, i=index: first_votes[eid][i], django_capture_on_commit_callbacks)
        assert sorted(seen) == sorted(first_votes)
    # Author's vote + two voters, 2 of 3 needed: only "accepted" reaches it.
    assert statuses() == {
        "fail-then-revise": "needs_revision",
        "fail-then-withdraw": "needs_revision",
        "accepted": "accepted",
        "fail-then-pass": "needs_revision",
    }

    author = client("author-a")
    listed = author.get("/api/projects/fa-rev/revisions/")
    assert listed.status_code == 200, listed.content
    rows = {row["external_id"]: row for row in listed.json()["results"]}
    assert set(rows) == {"fail-then-revise", "fail-then-withdraw", "fail-then-pass"}
    assert rows["fail-then-revise"]["labels_cast"] == {"contradiction": 1, "neutral": 1}
    assert rows["fail-then-pass"]["labels_cast"] == {"entailment": 1, "neutral": 1}
    assert rows["fail-then-pass"]["payload"]["premise"] == f"مریم کتاب{ZWNJ}خانه را ترک کرد."
    assert rows["fail-then-revise"]["intended_label"] == "entailment" and rows["fail-then-revise"]["round"] == 1
    text = listed.content.decode()
    for voter in VOTERS:
        assert voter not in text  # the labels cast, never who cast them
    # Voters and other members see nothing of the author's list.
    assert client("bita").get("/api/projects/fa-rev/revisions/").json()["results"] == []
    assert client("outsider").get("/api/projects/fa-rev/revisions/").status_code == 404

    revise_url = f"/api/items/{item_id('fail-then-revise')}/revise/"
    # Someone else's item: not found, and nothing changes.
    assert client("bita").post(revise_url, {"hypothesis": "x"}, format="json").status_code == 404
    assert client("outsider").post(revise_url, {"withdraw": True}, format="json").status_code == 404
    # A revision that changes nothing, or says nothing: 400.
    same = author.post(revise_url, {"premise": rows["fail-then-revise"]["payload"]["premise"]}, format="json")
    assert same.status_code == 400 and same.json()["errors"][0]["field"] == "premise"
    assert author.post(revise_url, {}, format="json").status_code == 400
    assert author.post(revise_url, {"hypothesis": "  "}, format="json").status_code == 400
    assert author.post(revise_url, {"hypothesis": "x", "withdraw": True}, format="json").status_code == 400
    assert not ItemRevision.objects.exists()
    assert statuses()["fail-then-revise"] == "needs_revision"

    new_hypothesis = f"کتابی روی میز نیست{ZWNJ}. "
    revised = author.post(revise_url, {"hypothesis": new_hypothesis}, format="json")
    assert revised.status_code == 200, revised.content
    assert revised.json()["round"] == 2 and revised.json()["status"] == "open"
    assert revised.json()["payload"] == {"premise": "کتاب روی میز است.", "hypothesis": new_hypothesis}
    revised_pass = author.post(
        f"/api/items/{item_id('fail-then-pass')}/revise/", {"premise": "مریم در کتابخانه نشسته است."}, format="json"
    )
    assert revised_pass.status_code == 200
    # A new premise is a new group for the assignment rule (the file gave none).
    from annotation.models import Item

    derived = dict(Item.objects.filter(project__slug="fa-rev").values_list("external_id", "derived_group"))
    assert (
        derived["fail-then-pass"]
        == get_kind("nli_relabel").derived_group({"premise": "مریم در کتابخانه نشسته است."})
        != ""
    )
    assert derived["fail-then-revise"] == get_kind("nli_relabel").derived_group({"premise": "کتاب روی میز است."})
    # Revising twice: the item is no longer waiting for a revision.
    assert author.post(revise_url, {"hypothesis": "again"}, format="json").status_code == 409

    withdrawn = author.post(f"/api/items/{item_id('fail-then-withdraw')}/revise/", {"withdraw": True}, format="json")
    assert withdrawn.status_code == 200 and withdrawn.json()["status"] == "removed"
    assert (
        author.post(f"/api/items/{item_id('accepted')}/revise/", {"hypothesis": "changed"}, format="json").status_code
        == 409
    )
    assert (
        author.post(f"/api/items/{item_id('accepted')}/revise/", {"withdraw": True}, format="json").status_code == 409
    )
    assert (
        author.post(
            f"/api/items/{item_id('fail-then-withdraw')}/revise/", {"withdraw": True}, format="json"
        ).status_code
        == 409
    )
    assert statuses()["accepted"] == "accepted"
    assert author.get("/api/projects/fa-rev/revisions/").json()["results"] == []

    # Round 2: fresh votes, by the same voters (their round-1 votes do not count).
    second_votes = {"fail-then-revise": ("neutral", "contradiction"), "fail-then-pass": ("neutral", "neutral")}
    for index, voter in enumerate(VOTERS):
        seen = vote_all(client(voter), lambda eid, i=index: second_votes[eid][i], django_capture_on_commit_callbacks)
        assert sorted(seen) == sorted(second_votes)
    assert client("author-a").get("/api/projects/fa-rev/next/").status_code == 204  # never their own items
    assert statuses() == {
        "fail-then-revise": "removed",  # failed twice
        "fail-then-withdraw": "removed",
        "accepted": "accepted",
        "fail-then-pass": "accepted",
    }
    outcomes = {
        (o.item.external_id, o.round): (o.outcome, o.votes) for o in ConsensusOutcome.objects.select_related("item")
    }
    assert outcomes[("fail-then-pass", 2)] == ("accepted", {"contradiction": 1, "neutral": 2})
    assert outcomes[("fail-then-revise", 2)][0] == "failed"
    assert Annotation.objects.filter(item__external_id="fail-then-pass", round=2).count() == 2
    assert author.post(revise_url, {"hypothesis": "third try"}, format="json").status_code == 409
    assert author.get("/api/projects/fa-rev/revisions/").json()["results"] == []


def test_revision_page_lists_the_authors_items(relabel, django_capture_on_commit_callbacks, client):
    first_votes = {external_id: votes for external_id, *_rest, votes in ITEMS}
    for index, voter in enumerate(VOTERS):
        vote_all(relabel["client"](voter), lambda eid, i=index: first_votes[eid][i], django_capture_on_commit_callbacks)

    client.force_login(relabel["users"]["author-a"])
    response = client.get("/p/fa-rev/revisions/")
    assert response.status_code == 200
    html = response.content.decode()
    # The page in the interface language (English here); the pairs' text boxes in Persian.
    assert '<html lang="en" dir="ltr">' in html and 'lang="fa"' in html
    assert " style=" not in html
    config = json.loads(
        html.split('<script id="revisions-config" type="application/json">', 1)[1].split("</script>", 1)[0]
    )
    assert {row["external_id"] for row in config["items"]} == {
        "fail-then-revise",
        "fail-then-withdraw",
        "fail-then-pass",
    }
    assert config["reviseUrl"] == "/api/items/{id}/revise/"
    for voter in VOTERS:
        assert voter not in html.replace(f"<bdi>{'author-a'}</bdi>", "")

    client.force_login(relabel["users"]["bita"])
    other = client.get("/p/fa-rev/revisions/")
    assert other.status_code == 200
    assert (
        json.loads(other.content.decode().split('type="application/json">', 1)[1].split("</script>", 1)[0])["items"]
        == []
    )

    client.force_login(relabel["users"]["outsider"])
    assert client.get("/p/fa-rev/revisions/").status_code == 404
    assert client.get("/p/no-such/revisions/").status_code == 404
    client.logout()
    assert client.get("/p/fa-rev/revisions/").status_code == 302  # to the login page
