"""The adjudication queue and decisions through the HTTP contract (docs/api.md
"Aggregation, annotator quality, adjudication"): a failed k-of-n round, methods that
disagree and a reversed-pair probe answered incoherently put items in the queue; an
adjudicator decides; the decision is the item's gold, leaves the queue, is exported with a
flag, and agreement is reported with and without the adjudicated items."""

import json
from pathlib import Path

import pytest

from tests.api.test_import import jsonl, upload
from tests.api.test_quality import label_everything, project_with_members

pytestmark = pytest.mark.django_db

SLUG = "he-nli"
PHRASIS = Path(__file__).resolve().parents[3] / "shared" / "data" / "phrasis" / "PhrasIS.train.headlines.positives.txt"
# Three annotators, 2 of 3 decide (no author label). n1 fails (a three-way split), n2 and
# n3 are accepted.
VOTES = {
    "n1": {"a1": "entailment", "a2": "neutral", "a3": "contradiction"},
    "n2": {"a1": "neutral", "a2": "neutral", "a3": "neutral"},
    "n3": {"a1": "entailment", "a2": "entailment", "a3": "contradiction"},
}


@pytest.fixture
def nli(make_user, client_for):
    from django.utils import timezone

    from annotation.models import Item, ItemAggregate
    from annotation.services.consensus import consensus_compute_for_item

    project, people, clients = project_with_members(
        make_user, client_for, slug=SLUG, name="הסקה", kind="nli_relabel", settings={"consensus_k": 2, "consensus_n": 3}
    )
    rows = [{"id": key, "premise": f"הנחה {key}", "hypothesis": f"השערה {key}"} for key in VOTES]
    assert (
        clients["sup"]
        .post(f"/api/projects/{SLUG}/import/", {"file": upload("n.jsonl", jsonl(*rows)), "format": "jsonl"})
        .status_code
        == 201
    )
    label_everything(clients, SLUG, VOTES)
    items = {item.external_id: item for item in Item.objects.filter(project=project)}
    for item in items.values():
        consensus_compute_for_item(item.pk)  # what the consensus task runs on the worker
    # n3: the aggregation job found Dawid-Skene disagreeing with k-of-n.
    now = timezone.now()
    ItemAggregate.objects.create(
        item=items["n3"], round=1, method="k_of_n", label="entailment", confidence=2 / 3, computed_at=now
    )
    ItemAggregate.objects.create(
        item=items["n3"], round=1, method="dawid_skene", label="contradiction", confidence=0.7, computed_at=now
    )
    ItemAggregate.objects.create(
        item=items["n2"], round=1, method="dawid_skene", label="neutral", confidence=0.99, computed_at=now
    )
    items = {item.external_id: item for item in Item.objects.filter(project=project)}
    return project, people, clients, items


def queue(client, slug=SLUG):
    response = client.get(f"/api/projects/{slug}/adjudication/")
    assert response.status_code == 200, response.content
    return response.json()


def export_records(client, slug=SLUG) -> dict[str, dict]:
    response = client.get(f"/api/projects/{slug}/export/?format=jsonl&status=all")
    assert response.status_code == 200
    return {
        record["id"]: record for record in map(json.loads, b"".join(response.streaming_content).decode().splitlines())
    }


def test_failed_and_disagreeing_items_wait_with_every_vote(nli):
    _project, _people, clients, items = nli
    assert items["n1"].status == "removed" and items["n3"].status == "accepted"
    body = queue(clients["sup"])
    assert body["count"] == 2
    listed = {row["external_id"]: row for row in body["results"]}
    assert listed["n1"]["reasons"] == ["failed"]
    assert listed["n3"]["reasons"] == ["methods_disagree"]
    assert sorted((v["annotator"], v["label"]) for v in listed["n1"]["votes"]) == sorted(VOTES["n1"].items())
    assert all(v["competence"] == {"dawid_skene": None, "mace": None} for v in listed["n1"]["votes"])
    assert listed["n3"]["aggregates"]["dawid_skene"] == {"label": "contradiction", "confidence": 0.7}
    assert listed["n1"]["payload"] == {"premise": "הנחה n1", "hypothesis": "השערה n1"}


def test_a_decision_is_gold_leaves_the_queue_and_is_exported_with_its_flag(nli):
    from annotation.models import Adjudication, Item

    _project, people, clients, items = nli
    before = queue(clients["sup"])["agreement"]
    assert before["adjudicated"] == 0
    assert before["with_adjudicated"] == before["without_adjudicated"]
    decided = clients["sup"].post(
        f"/api/items/{items['n1'].pk}/adjudicate/", {"label": "neutral", "comment": "ההנחה אינה מכריעה"}, format="json"
    )
    assert decided.status_code == 201, decided.content
    body = decided.json()
    assert (
        body["item"],
        body["label"],
        body["comment"],
        body["adjudicator"],
        body["reasons"],
        body["adjudicated"],
    ) == (items["n1"].pk, "neutral", "ההנחה אינה מכריעה", "sup", ["failed"], True)
    item = Item.objects.get(pk=items["n1"].pk)
    assert (item.status, item.gold_label) == ("accepted", "neutral")
    stored = Adjudication.objects.get(item=item)
    assert (stored.adjudicator, stored.round) == (people["sup"], 1)
    assert [row["external_id"] for row in queue(clients["sup"])["results"]] == ["n3"]

    records = export_records(clients["sup"])
    assert records["n1"]["gold_label"] == "neutral" and records["n1"]["adjudicated"] is True
    assert records["n1"]["adjudication"]["comment"] == "ההנחה אינה מכריעה"
    assert records["n1"]["adjudication"]["by"] not in ("sup", str(people["sup"].pk))  # pseudonymous
    assert "adjudicated" not in records["n2"] and "adjudication" not in records["n2"]
    # FarsTail's layout carries the adjudicated gold as its letter.
    farstail = clients["sup"].get(f"/api/projects/{SLUG}/export/?format=farstail&status=all")
    assert "הנחה n1\tהשערה n1\tn" in b"".join(farstail.streaming_content).decode()

    # Agreement with and without the adjudicated item.
    after = queue(clients["sup"])["agreement"]
    assert after["adjudicated"] == 1
    assert after["with_adjudicated"]["items"] == 3 and after["without_adjudicated"]["items"] == 2
    # With: n1 (1 of 3 votes is neutral) n2 (3/3) n3 (2/3) → 6 of 9; without: 5 of 6.
    assert after["with_adjudicated"]["agreement_with_consensus"] == pytest.approx(6 / 9)
    assert after["without_adjudicated"]["agreement_with_consensus"] == pytest.approx(5 / 6)
    assert after["with_adjudicated"]["alpha"] != after["without_adjudicated"]["alpha"]
    rows = {row["annotator"]: row for row in clients["sup"].get(f"/api/projects/{SLUG}/annotators/").json()}
    assert rows["a2"]["agreement_with_consensus"] == pytest.approx(1.0)  # neutral on n1 and n2, entailment on n3
    assert rows["a2"]["agreement_with_gold"] == pytest.approx(1.0)  # n1 is the only gold
    assert rows["a2"]["agreement_without_adjudicated"] == pytest.approx(1.0)
    assert rows["a1"]["agreement_with_consensus"] == pytest.approx(2 / 3)
    assert rows["a1"]["agreement_with_gold"] == 0.0


def test_a_second_decision_is_a_conflict_and_changes_nothing(nli):
    from annotation.models import Adjudication

    _project, _people, clients, items = nli
    url = f"/api/items/{items['n1'].pk}/adjudicate/"
    assert clients["sup"].post(url, {"label": "neutral"}, format="json").status_code == 201
    again = clients["root"].post(url, {"label": "entailment"}, format="json")
    assert again.status_code == 409
    assert again.json()["errors"][0]["field"] == "item"
    assert list(Adjudication.objects.values_list("label", flat=True)) == ["neutral"]


def test_bad_decisions_are_refused_naming_the_field_and_store_nothing(nli):
    from annotation.models import Adjudication, Item

    _project, _people, clients, items = nli
    url = f"/api/items/{items['n1'].pk}/adjudicate/"
    for body, fields in (
        ({"label": "EQUIVALENT"}, ["label"]),
        ({}, ["label"]),
        ({"label": None}, ["label"]),
        ({"label": "neutral", "comment": 3}, ["comment"]),
        ({"label": "neutral", "comment": "a\x00b"}, ["comment"]),
        ({"label": "neutral", "comment": "x" * 5001}, ["comment"]),
        ({"label": "neutral", "gold": "x"}, ["gold"]),
        ({"label": ["neutral"], "comment": []}, ["label", "comment"]),
    ):
        response = clients["sup"].post(url, body, format="json")
        assert response.status_code == 400, (body, response.content)
        assert sorted(e["field"] for e in response.json()["errors"]) == sorted(fields), body
    assert clients["sup"].post(url, ["neutral"], format="json").status_code == 400
    assert not Adjudication.objects.exists()
    assert Item.objects.get(pk=items["n1"].pk).status == "removed"


def test_who_may_adjudicate(nli, make_user, client_for):
    from annotation.models import Adjudication, Membership

    project, people, clients, items = nli
    url = f"/api/items/{items['n1'].pk}/adjudicate/"
    stranger = client_for(make_user("stranger"))
    assert stranger.post(url, {"label": "neutral"}, format="json").status_code == 404
    assert stranger.get(f"/api/projects/{SLUG}/adjudication/").status_code == 404
    assert clients["sup"].post("/api/items/987654/adjudicate/", {"label": "neutral"}, format="json").status_code == 404
    for name in ("rev", "a1"):
        assert clients[name].post(url, {"label": "neutral"}, format="json").status_code == 403
        assert clients[name].get(f"/api/projects/{SLUG}/adjudication/").status_code == 403
    # An item of another project the caller does not see is not found, whatever its id.
    other = client_for(people["root"]).post(
        "/api/projects/", {"slug": "other", "name": "o", "kind": "nli_relabel", "language": "he"}, format="json"
    )
    assert other.status_code == 201
    assert clients["sup"].get("/api/projects/other/adjudication/").status_code == 404

    # The supervisor marks the reviewer and an annotator as adjudicators.
    for name in ("rev", "a1"):
        marked = clients["sup"].patch(f"/api/projects/{SLUG}/members/{name}/", {"adjudicator": True}, format="json")
        assert marked.status_code == 200 and marked.json()["adjudicator"] is True
    refused = clients["sup"].patch(f"/api/projects/{SLUG}/members/rev/", {"adjudicator": "yes"}, format="json")
    assert refused.status_code == 400 and refused.json()["errors"][0]["field"] == "adjudicator"
    assert Membership.objects.get(project=project, user=people["rev"]).adjudicator is True
    # Adjudicators who do not supervise see the votes under the export's pseudonyms, and
    # not the items they voted on themselves.
    seen = queue(clients["rev"])["results"]
    assert {row["external_id"] for row in seen} == {"n1", "n3"}
    assert not {v["annotator"] for row in seen for v in row["votes"]} & {"a1", "a2", "a3"}
    assert queue(clients["a1"])["results"] == []
    assert clients["a1"].post(url, {"label": "neutral"}, format="json").status_code == 403
    assert not Adjudication.objects.exists()
    decided = clients["rev"].post(url, {"label": "contradiction"}, format="json")
    assert decided.status_code == 201 and decided.json()["adjudicator"] == "rev"
    # A disqualified adjudicator decides nothing: a disqualified reviewer sees the project as
    # an outsider does.
    clients["sup"].patch(f"/api/projects/{SLUG}/members/rev/", {"status": "disqualified"}, format="json")
    assert clients["rev"].get(f"/api/projects/{SLUG}/adjudication/").status_code == 404


def test_a_reversed_pair_answered_incoherently_waits_for_adjudication(make_user, client_for):
    """An annotator who answers FORWARD on (A, B) and FORWARD on its reversal (B, A) breaks
    soft coherence (coherence paper §3.1): the original pair goes to the queue with both
    of their labels; the PhrasIS file export keeps its bytes until a decision, then
    carries the adjudicated label's code."""
    from annotation.models import Item, Membership, Project

    root = make_user("root", staff=True)
    client = client_for(root)
    made = client.post(
        "/api/projects/",
        {"slug": "he-phrase", "name": "ביטויים", "kind": "phrase_pair", "language": "en",
         "settings": {"labels_per_item": 1, "probe_rate": 0.5, "probe_seed": 11, "probe_labels": ["FORWARD"]}},
        format="json",
    )  # fmt: skip
    assert made.status_code == 201, made.content
    project = Project.objects.get(slug="he-phrase")
    annotator = make_user("p1")
    Membership.objects.create(project=project, user=annotator, role="annotator", status="active")
    imported = client.post(
        "/api/projects/he-phrase/import/", {"file": upload(PHRASIS.name, PHRASIS.read_bytes()), "format": "phrasis"}
    )
    assert imported.status_code == 201, imported.content
    mine = client_for(annotator)
    while (got := mine.get("/api/projects/he-phrase/next/")).status_code == 200:
        body = got.json()
        item = Item.objects.get(pk=body["item"]["id"])
        # The imported label on every pair (so the golds stay the file's), and FORWARD on
        # the reversed copy of a FORWARD pair too.
        label = "FORWARD" if item.probe_of_id else item.reference_label
        assert (
            mine.post(
                f"/api/assignments/{body['assignment']}/submit/", {"value": {"label": label}}, format="json"
            ).status_code
            == 201
        )
    probed = set(Item.objects.filter(project=project, probe_of__isnull=False).values_list("probe_of_id", flat=True))
    assert probed, "no probe was served"
    listed = queue(client, "he-phrase")
    assert {row["id"] for row in listed["results"]} == probed
    row = listed["results"][0]
    assert row["reasons"] == ["incoherent_probe"]
    assert row["incoherent"] == [{"annotator": "p1", "label": "FORWARD", "reversed_label": "FORWARD"}]
    qualities = client.get("/api/projects/he-phrase/annotators/").json()
    assert qualities[0]["coherence"] == {"probes": len(probed), "soft": 0.0, "hard": 0.0}

    export = f"/api/projects/he-phrase/export/phrasis/?file={PHRASIS.name}"
    original = b"".join(client.get(export).streaming_content)
    assert original == PHRASIS.read_bytes()  # nothing adjudicated: the file as it came
    decided = client.post(f"/api/items/{row['id']}/adjudicate/", {"label": "EQUIVALENT"}, format="json")
    assert decided.status_code == 201, decided.content
    lines = b"".join(client.get(export).streaming_content).decode().split("\n")
    position = Item.objects.get(pk=row["id"]).external_id.rsplit("-", 1)[1]
    assert lines[int(position) - 1].split("\t")[1] == "EQUI"
    records = export_records(client, "he-phrase")
    adjudicated = [r for r in records.values() if r.get("adjudicated")]
    assert [(r["gold_label"], r["gold_source"]) for r in adjudicated] == [("EQUIVALENT", "adjudicated")]


def test_probes_other_kinds_and_retries(nli, make_user, client_for):
    """A coherence probe is not an item of the dataset (404); a kind without labels has
    nothing to decide (400 naming the label); a retry with the same Idempotency-Key gives
    the first answer and stores one decision."""
    from annotation.models import Adjudication, Item, Membership
    from annotation.services.projects import project_create

    project, people, clients, items = nli
    probe = Item.objects.create(
        project=project, external_id="n1~rev~1", payload=items["n1"].payload, probe_of=items["n1"]
    )
    assert (
        clients["sup"].post(f"/api/items/{probe.pk}/adjudicate/", {"label": "neutral"}, format="json").status_code
        == 404
    )

    summaries = project_create(
        actor=people["root"], slug="he-sum", name="סיכומים", kind="summary_rating", language="he"
    )
    Membership.objects.create(project=summaries, user=people["sup"], role="supervisor", status="active")
    article = Item.objects.create(project=summaries, external_id="s1", payload={"article": "מאמר", "summaries": []})
    refused = clients["sup"].post(f"/api/items/{article.pk}/adjudicate/", {"label": "neutral"}, format="json")
    assert refused.status_code == 400 and refused.json()["errors"][0]["field"] == "label"
    assert queue(clients["sup"], "he-sum")["results"] == []

    url = f"/api/items/{items['n1'].pk}/adjudicate/"
    first = clients["sup"].post(url, {"label": "neutral"}, format="json", HTTP_IDEMPOTENCY_KEY="decide-n1")
    again = clients["sup"].post(url, {"label": "neutral"}, format="json", HTTP_IDEMPOTENCY_KEY="decide-n1")
    assert (first.status_code, again.status_code) == (201, 201) and first.json() == again.json()
    assert Adjudication.objects.count() == 1


def test_reads_take_a_bounded_number_of_queries(nli, django_assert_max_num_queries):
    """The queue and the figures read in bulk: the count does not grow with items or votes."""
    from annotation.models import Item

    project, _people, clients, items = nli

    def counted(url):
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(connection) as captured:
            assert clients["sup"].get(url).status_code == 200
        return len(captured.captured_queries)

    small = {url: counted(url) for url in (f"/api/projects/{SLUG}/adjudication/", f"/api/projects/{SLUG}/annotators/")}
    # Ten more failed pairs, each with three votes.
    more = {f"m{i}": {"a1": "entailment", "a2": "neutral", "a3": "contradiction"} for i in range(10)}
    rows = [{"id": key, "premise": f"הנחה {key}", "hypothesis": f"השערה {key}"} for key in more]
    assert (
        clients["sup"]
        .post(f"/api/projects/{SLUG}/import/", {"file": upload("m.jsonl", jsonl(*rows)), "format": "jsonl"})
        .status_code
        == 201
    )
    label_everything(clients, SLUG, more)
    from annotation.services.consensus import consensus_compute_for_item

    for item in Item.objects.filter(project=project, external_id__in=list(more)):
        consensus_compute_for_item(item.pk)
    assert queue(clients["sup"])["count"] == 12
    for url, before in small.items():
        assert counted(url) == before, url
        # A small project computes its figures per request: the report sections from
        # per-item counts take a few queries more than they did whole, a fixed number.
        with django_assert_max_num_queries(30):
            clients["sup"].get(url)
