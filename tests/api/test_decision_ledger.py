"""The decision ledger through the HTTP contract (docs/api.md "Aggregation, annotator quality,
adjudication"): one writer of gold with precedence (adjudication > the chosen method >
the round's rule), an append-only history, reopen and override, edits refused once a
round is decided, the chosen pool method deciding rounds, an adjudicator who also
annotates kept from what the queue showed them, and aggregation runs only on change.

Every scenario here changed a decided gold silently before the ledger. Texts are our own."""

import json

import pytest

from tests.api.test_import import jsonl, upload
from tests.api.test_quality import label_everything, project_with_members

pytestmark = pytest.mark.django_db

SLUG = "he-ledger"


def import_rows(client, slug: str, rows: list[dict], **form):
    response = client.post(
        f"/api/projects/{slug}/import/", {"file": upload("rows.jsonl", jsonl(*rows)), "format": "jsonl", **form}
    )
    assert response.status_code == 201, response.content


def two_of_three(make_user, client_for, name: str):
    """An nli_relabel project deciding 2 of 3 votes, with its members (test_quality's)."""
    return project_with_members(
        make_user, client_for, slug=SLUG, name=name, kind="nli_relabel", settings={"consensus_k": 2, "consensus_n": 3}
    )


def pairs(keys) -> list[dict]:
    return [{"id": key, "premise": f"הנחה על {key}", "hypothesis": f"השערה על {key}"} for key in keys]


def run_aggregation(project):
    """What the aggregation job runs on the worker."""
    from annotation.services.aggregation import aggregation_compute_for_project

    project.refresh_from_db()
    return aggregation_compute_for_project(project)


def decide_consensus(project):
    """What the consensus task runs on the worker for each item whose last vote came in."""
    from annotation.models import Item
    from annotation.services.consensus import consensus_compute_for_item

    for pk in Item.objects.filter(project=project, status="complete").values_list("pk", flat=True):
        consensus_compute_for_item(pk)


def item(external_id: str):
    from annotation.models import Item

    return Item.objects.get(project__slug=SLUG, external_id=external_id)


def label_only(client, wanted: dict[str, str]) -> None:
    """Label the items named in `wanted` as the annotator is served them, skipping others."""
    while (got := client.get(f"/api/projects/{SLUG}/next/")).status_code == 200:
        body = got.json()
        label = wanted.get(body["item"]["external_id"])
        if label is None:
            assert client.post(f"/api/assignments/{body['assignment']}/skip/").status_code == 204
        else:
            sent = client.post(
                f"/api/assignments/{body['assignment']}/submit/", {"value": {"label": label}}, format="json"
            )
            assert sent.status_code == 201, sent.content


def history(client, external_id: str) -> list[dict]:
    response = client.get(f"/api/items/{item(external_id).pk}/decisions/")
    assert response.status_code == 200, response.content
    return response.json()


def export_records(client, fmt: str = "jsonl", **params) -> dict[str, dict]:
    response = client.get(f"/api/projects/{SLUG}/export/", {"format": fmt, "status": "all", **params})
    assert response.status_code == 200, response.content
    return {
        record["id"]: record for record in map(json.loads, b"".join(response.streaming_content).decode().splitlines())
    }


# Three annotators, each wrong on four items of their own (both ways round): with
# unanimity required (3 of 3), those twelve fail k-of-n, while Dawid-Skene, having learnt
# each annotator from the rest, is confident of the label the other two agree on.
LABELS = ("entailment", "neutral", "contradiction")
TRUTH = {f"p{n:02d}": LABELS[n % 3] for n in range(30)}
SPLIT = [key for n, key in enumerate(TRUTH) if n < 12]
# A three-way split no method can be confident of.
TORN = ["t1"]
TARGET = 0.8  # the least confident split item's posterior is about 0.88


def votes_with_slips() -> dict[str, dict[str, str]]:
    ahead = dict(zip(LABELS, LABELS[1:] + LABELS[:1]))
    behind = {after: before for before, after in ahead.items()}
    votes = {}
    for n, (key, label) in enumerate(TRUTH.items()):
        slip = (ahead if n % 2 else behind)[label]
        votes[key] = {name: slip if n // 4 == position else label for position, name in enumerate(("a1", "a2", "a3"))}
    return votes | {key: dict(zip(("a1", "a2", "a3"), LABELS)) for key in TORN}


@pytest.fixture
def ds_project(make_user, client_for):
    project, people, clients = project_with_members(
        make_user, client_for, slug=SLUG, name="ספר החלטות", kind="nli_relabel",
        settings={"consensus_k": 3, "consensus_n": 3, "aggregation": "dawid_skene", "confidence_target": TARGET},
    )  # fmt: skip
    import_rows(clients["sup"], SLUG, pairs([*TRUTH, *TORN]))
    return project, people, clients


# ---------------------------------------------------------------- the chosen method decides


def test_dawid_skene_decides_rounds_that_k_of_n_would_fail(ds_project):
    from annotation.models import ConsensusOutcome, Item

    project, _people, clients = ds_project
    label_everything(clients, SLUG, votes_with_slips())
    decide_consensus(project)
    # Between the last vote and the job: visibly waiting, no gold yet, nothing removed.
    assert set(Item.objects.filter(project=project).values_list("status", flat=True)) == {"deciding"}
    assert clients["sup"].get(f"/api/projects/{SLUG}/").json()["counts"]["deciding"] == len(TRUTH) + len(TORN)
    report = run_aggregation(project)
    assert report["decided"] == len(TRUTH) + len(TORN)
    for key, label in TRUTH.items():
        decided = item(key)
        assert (decided.status, decided.gold_label) == ("accepted", label), key
        (decision,) = history(clients["sup"], key)
        assert decision["method"] == "dawid_skene" and decision["rank"] == 2 and decision["confidence"] >= TARGET
    # The round's record, as the consensus step keeps one, for the split items too.
    outcome = ConsensusOutcome.objects.get(item=item("p00"))
    assert (outcome.outcome, outcome.gold, outcome.n_votes) == ("accepted", TRUTH["p00"], 3)
    assert export_records(clients["sup"])["p00"]["decided_by"] == "dawid_skene"
    # Not confident: the failure path (no author: removed, into the adjudication queue).
    for key in TORN:
        assert (item(key).status, item(key).gold_label) == ("removed", ""), key
        assert history(clients["sup"], key)[0]["confidence"] < TARGET
    queued = {
        row["external_id"]: row["reasons"]
        for row in clients["sup"].get(f"/api/projects/{SLUG}/adjudication/").json()["results"]
    }
    assert set(TORN) <= set(queued) and all("failed" in queued[key] for key in TORN)
    # A second run on the same votes decides nothing new.
    assert run_aggregation(project)["gold_changed"] == 0
    assert all(len(history(clients["sup"], key)) == 1 for key in [*SPLIT, *TORN])
    assert_exports_agree_with_the_database(clients["sup"])


def assert_exports_agree_with_the_database(client) -> None:
    """JSONL, CSV and FarsTail's TSV carry every item's stored gold."""
    import csv
    import io

    from annotation.models import Item

    stored = {item.external_id: item for item in Item.objects.filter(project__slug=SLUG)}
    records = export_records(client)
    raw = b"".join(client.get(f"/api/projects/{SLUG}/export/", {"format": "csv", "status": "all"}).streaming_content)
    rows = {row["id"]: row for row in csv.DictReader(io.StringIO(raw.decode("utf-8-sig"), newline=""))}
    tsv = b"".join(
        client.get(f"/api/projects/{SLUG}/export/", {"format": "farstail", "status": "all"}).streaming_content
    ).decode()
    letters = {line.split("\t")[0]: line.split("\t")[2] for line in tsv.splitlines()[1:]}
    for key, item in stored.items():
        assert (records[key]["gold_label"] or "") == item.gold_label, key
        assert rows[key]["gold_label"] == item.gold_label, key
        if item.status == "accepted":
            assert letters[item.payload["premise"]] == item.gold_label[0], key


# ---------------------------------------------------------------- precedence


def test_no_aggregation_run_changes_an_adjudicated_item(ds_project):
    project, _people, clients = ds_project
    label_everything(clients, SLUG, votes_with_slips())
    run_aggregation(project)
    target = TORN[0]
    assert item(target).status == "removed"
    decided = clients["sup"].post(
        f"/api/items/{item(target).pk}/adjudicate/", {"label": "entailment", "comment": "הכרעה"}, format="json"
    )
    assert decided.status_code == 201, decided.content
    # With the target this low the method's own label (not entailment) would do: it still
    # may not change the adjudicated gold.
    project.settings = {**project.settings, "confidence_target": 0.01}
    project.save(update_fields=["settings"])
    run_aggregation(project)
    from annotation.models import ItemAggregate

    assert ItemAggregate.objects.get(item=item(target), method="dawid_skene").label not in (None, "", "entailment")
    assert (item(target).status, item(target).gold_label) == ("accepted", "entailment")
    records = export_records(clients["sup"])
    assert records[target]["gold_label"] == "entailment" and records[target]["decided_by"] == "adjudication"
    farstail = b"".join(
        clients["sup"].get(f"/api/projects/{SLUG}/export/", {"format": "farstail", "status": "all"}).streaming_content
    ).decode()
    assert f"הנחה על {target}\tהשערה על {target}\te" in farstail
    assert [row["method"] for row in history(clients["sup"], target)] == ["dawid_skene", "adjudication"]
    assert_exports_agree_with_the_database(clients["sup"])


def test_adjudication_outside_the_queue_needs_a_supervisors_override_with_a_comment(make_user, client_for):
    from annotation.models import AuditEntry, Membership

    project, people, clients = two_of_three(make_user, client_for, "עקיפה")
    Membership.objects.filter(user=people["a3"]).update(adjudicator=True)
    import_rows(clients["sup"], SLUG, pairs(["q1"]))
    label_everything(clients, SLUG, {"q1": {"a1": "neutral", "a2": "neutral", "a3": "neutral"}})
    decide_consensus(project)
    assert item("q1").status == "accepted"
    url = f"/api/items/{item('q1').pk}/adjudicate/"
    refused = clients["sup"].post(url, {"label": "entailment"}, format="json")
    assert refused.status_code == 409 and "queue" in refused.json()["errors"][0]["message"]
    no_reason = clients["sup"].post(url, {"label": "entailment", "override": True}, format="json")
    assert no_reason.status_code == 400 and no_reason.json()["errors"][0]["field"] == "comment"
    # An adjudicator who does not supervise never overrides (a3 also voted: 403 either way).
    assert (
        clients["a3"].post(url, {"label": "entailment", "override": True, "comment": "x"}, format="json").status_code
        == 403
    )
    assert item("q1").gold_label == "neutral"
    done = clients["sup"].post(
        url, {"label": "entailment", "override": True, "comment": "הזוג סומן בטעות"}, format="json"
    )
    assert done.status_code == 201, done.content
    assert item("q1").gold_label == "entailment"
    last = history(clients["sup"], "q1")[-1]
    assert (last["method"], last["override"], last["by"], last["comment"]) == (
        "adjudication",
        True,
        "sup",
        "הזוג סומן בטעות",
    )
    entry = AuditEntry.objects.get(project=project, action="override")
    assert (entry.actor, entry.before["gold"], entry.after["gold"]) == (people["sup"], "neutral", "entailment")


def test_an_open_item_nobody_labelled_is_not_adjudicated(make_user, client_for):
    from annotation.models import Membership

    project, people, clients = project_with_members(
        make_user, client_for, slug=SLUG, name="מבחן", kind="label_test", settings={"labels_per_item": 3}
    )
    Membership.objects.filter(user=people["a1"]).update(adjudicator=True)
    import_rows(clients["sup"], SLUG, [{**pairs(["t1"])[0], "label": "neutral"}])
    for who in ("a1", "sup"):
        response = clients[who].post(f"/api/items/{item('t1').pk}/adjudicate/", {"label": "entailment"}, format="json")
        assert response.status_code == 409, (who, response.content)
    assert (item("t1").status, item("t1").gold_label) == ("open", "")
    assert clients["a2"].get(f"/api/projects/{SLUG}/next/").status_code == 200  # still served


# ---------------------------------------------------------------- edits after a decision


@pytest.mark.parametrize(
    "kind, settings",
    [("label_test", {"labels_per_item": 1}), ("phrase_pair", {"labels_per_item": 1, "probe_rate": 0.0})],
)
def test_an_edit_after_the_round_is_decided_is_409_for_every_kind(make_user, client_for, kind, settings):
    from annotation.models import Annotation

    project, _people, clients = project_with_members(
        make_user, client_for, slug=SLUG, name="עריכה", kind=kind, settings=settings
    )
    if kind == "label_test":
        import_rows(clients["sup"], SLUG, [{**pairs(["e1"])[0], "label": "neutral"}])
        label, other = "neutral", "entailment"
    else:
        import_rows(clients["sup"], SLUG, [{"id": "e1", "left": "בית גדול", "right": "בית קטן"}])
        label, other = "OPPOSITION", "UNRELATED"
    label_everything(clients, SLUG, {"e1": {"a1": label}})
    annotation = Annotation.objects.get(item=item("e1"))
    before = (item("e1").status, item("e1").gold_label)
    response = clients["a1"].patch(f"/api/annotations/{annotation.pk}/", {"value": {"label": other}}, format="json")
    assert response.status_code == 409, response.content
    assert (item("e1").status, item("e1").gold_label) == before
    mine = clients["a1"].get(f"/api/projects/{SLUG}/mine/").json()["results"]
    assert [row["editable"] for row in mine] == [False]


# ---------------------------------------------------------------- reopen


def test_a_supervisor_reopens_a_decided_item_and_the_history_keeps_every_round(make_user, client_for):
    from annotation.models import AuditEntry

    project, people, clients = two_of_three(make_user, client_for, "פתיחה")
    import_rows(clients["sup"], SLUG, pairs(["r1"]))
    label_everything(clients, SLUG, {"r1": {"a1": "neutral", "a2": "neutral", "a3": "entailment"}})
    decide_consensus(project)
    url = f"/api/items/{item('r1').pk}/reopen/"
    assert clients["rev"].post(url, {"reason": "x"}, format="json").status_code == 403
    assert clients["a1"].post(url, {"reason": "x"}, format="json").status_code in (403, 404)
    missing = clients["sup"].post(url, {}, format="json")
    assert missing.status_code == 400 and missing.json()["errors"][0]["field"] == "reason"
    reopened = clients["sup"].post(url, {"reason": "ההשערה עמומה"}, format="json")
    assert reopened.status_code == 201, reopened.content
    assert (item("r1").status, item("r1").round, item("r1").gold_label) == ("open", 2, "")
    assert clients["sup"].post(url, {"reason": "again"}, format="json").status_code == 409  # nothing decided yet
    # A new round: everyone may label it again, and its rule decides it.
    label_everything(clients, SLUG, {"r1": {"a1": "contradiction", "a2": "contradiction", "a3": "contradiction"}})
    decide_consensus(project)
    assert (item("r1").status, item("r1").gold_label) == ("accepted", "contradiction")
    rows = history(clients["sup"], "r1")
    assert [(row["round"], row["method"], row["value"]) for row in rows] == [
        (1, "k_of_n", "neutral"), (2, "reopen", None), (2, "k_of_n", "contradiction"),
    ]  # fmt: skip
    assert rows[1]["comment"] == "ההשערה עמומה" and rows[1]["by"] == "sup"
    # Reviewers read the history with pseudonyms; annotators not at all.
    seen_by_reviewer = history(clients["rev"], "r1")
    assert seen_by_reviewer[1]["by"] not in ("sup", None)
    assert clients["a1"].get(f"/api/items/{item('r1').pk}/decisions/").status_code in (403, 404)
    assert AuditEntry.objects.filter(project=project, action="reopen", actor=people["sup"]).count() == 1
    records = export_records(clients["sup"], history="1")
    assert [row["method"] for row in records["r1"]["decisions"]] == ["k_of_n", "reopen", "k_of_n"]
    bad = clients["sup"].get(f"/api/projects/{SLUG}/export/", {"format": "csv", "history": "1"})
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "history"


# ---------------------------------------------------------------- an adjudicator who annotates


def test_an_adjudicator_who_annotates_sees_only_closed_items_and_is_never_served_them(make_user, client_for):
    from annotation.models import Membership

    project, people, clients = project_with_members(
        make_user, client_for, slug=SLUG, name="מבחן", kind="label_test", settings={"labels_per_item": 2}
    )
    Membership.objects.filter(user=people["a3"]).update(adjudicator=True)
    import_rows(clients["sup"], SLUG, [{**row, "label": "neutral"} for row in pairs(["s1", "s2"])])
    # s1 closes with a split (the methods disagree); s2 stays open with one vote.
    label_only(clients["a1"], {"s1": "entailment", "s2": "entailment"})
    label_only(clients["a2"], {"s1": "contradiction"})
    from django.utils import timezone

    from annotation.models import ItemAggregate

    now = timezone.now()
    for key in ("s1", "s2"):
        ItemAggregate.objects.create(
            item=item(key), round=1, method="majority", label="entailment", confidence=0.5, computed_at=now
        )
        ItemAggregate.objects.create(
            item=item(key), round=1, method="mace", label="contradiction", confidence=0.5, computed_at=now
        )
    assert item("s2").status == "open"
    body = clients["a3"].get(f"/api/projects/{SLUG}/adjudication/")
    assert body.status_code == 200
    listed = body.json()["results"]
    assert [row["external_id"] for row in listed] == ["s1"]  # never the open s2
    assert all(row["reference_label"] is None for row in listed)  # the hidden gold stays hidden
    assert "neutral" not in json.dumps(listed)
    # s2 can still be served to a3; s1, once reopened, never is.
    clients["sup"].post(f"/api/items/{item('s1').pk}/adjudicate/", {"label": "neutral"}, format="json")
    assert (
        clients["sup"].post(f"/api/items/{item('s1').pk}/reopen/", {"reason": "בדיקה"}, format="json").status_code
        == 201
    )
    served = []
    while (got := clients["a3"].get(f"/api/projects/{SLUG}/next/")).status_code == 200:
        served.append(got.json()["item"]["external_id"])
        clients["a3"].post(
            f"/api/assignments/{got.json()['assignment']}/submit/", {"value": {"label": "neutral"}}, format="json"
        )
    assert served == ["s2"]


# ---------------------------------------------------------------- imports and exports


def test_final_labels_from_an_import_are_import_decisions_and_exports_agree(make_user, client_for):
    from annotation.models import Item

    _project, _people, clients = two_of_three(make_user, client_for, "ייבוא")
    rows = [{**row, "label": label} for row, label in zip(pairs(["f1", "f2"]), ("neutral", "entailment"))]
    import_rows(clients["sup"], SLUG, rows, labels_final="true")
    for record_id, label in (("f1", "neutral"), ("f2", "entailment")):
        (decision,) = history(clients["sup"], record_id)
        assert (decision["method"], decision["value"], decision["status"]) == ("import", label, "accepted")
    records = export_records(clients["sup"])
    for stored in Item.objects.filter(project__slug=SLUG):
        assert records[stored.external_id]["gold_label"] == stored.gold_label
        assert records[stored.external_id]["decided_by"] == "import"


# ---------------------------------------------------------------- aggregation runs on change only


def test_the_sweep_queues_nothing_for_an_unchanged_project(make_user, client_for, settings):
    from annotation.models import Job
    from annotation.services.aggregation import aggregation_sweep

    settings.MASHOV_AGGREGATION_DEBOUNCE_SECONDS = 0
    project, people, clients = two_of_three(make_user, client_for, "שקט")
    import_rows(clients["sup"], SLUG, pairs(["z1", "z2", "z3"]))
    # Closed items that can have no aggregate: one removed before annotation, one
    # decided by a supervisor's override with no vote at all.
    from annotation.models import Item

    Item.objects.filter(pk=item("z1").pk).update(status="removed")
    assert (
        clients["sup"]
        .post(
            f"/api/items/{item('z2').pk}/adjudicate/",
            {"label": "neutral", "override": True, "comment": "ידוע"},
            format="json",
        )
        .status_code
        == 201
    )
    Job.objects.filter(project=project).delete()
    project.refresh_from_db()
    project.aggregation_done = project.aggregation_requested
    project.save(update_fields=["aggregation_done"])
    for _sweep in range(5):
        assert aggregation_sweep() == 0
    assert not Job.objects.filter(project=project, kind="aggregation").exists()
    # A change asks for one run, and once it ran the sweep is quiet again.
    from annotation.services.aggregation import aggregation_request

    job = aggregation_request(project.pk)
    assert job is not None
    run_aggregation(project)
    Job.objects.filter(pk=job.pk).update(status="done")
    assert aggregation_sweep() == 0


def test_without_a_broker_a_skipped_aggregation_runs_at_the_next_request_after_its_delay(
    transactional_db, make_user, client_for, settings
):
    """The embedded default (`make run`): tasks run in-process and there is no beat. A round
    that closes within the debounce of the last run is aggregated by the first request
    after the delay, not never. The delay is passed by moving the clocks, not by waiting."""
    from datetime import timedelta

    from django.utils import timezone

    from annotation.models import ItemAggregate, Job
    from annotation.services import aggregation

    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.MASHOV_AGGREGATION_DEBOUNCE_SECONDS = 30
    _project, _people, clients = project_with_members(
        make_user,
        client_for,
        slug=SLUG,
        name="זוגות",
        kind="phrase_pair",
        settings={"labels_per_item": 1, "probe_rate": 0.0},
    )
    import_rows(
        clients["sup"],
        SLUG,
        [{"id": "w1", "left": "בית גדול", "right": "בית קטן"}, {"id": "w2", "left": "ספר", "right": "מחברת"}],
    )
    label_only(clients["a1"], {"w1": "OPPOSITION", "w2": "UNRELATED"})
    # The first round to close (the engine serves in its own order) ran a job at once; the
    # second fell within the debounce.
    aggregated = {key for key in ("w1", "w2") if ItemAggregate.objects.filter(item=item(key)).exists()}
    assert len(aggregated) == 1
    (second,) = {"w1", "w2"} - aggregated
    label = {"w1": "OPPOSITION", "w2": "UNRELATED"}[second]
    second = item(second)
    assert clients["a1"].get("/api/projects/").status_code == 200  # before the delay: nothing runs
    assert not ItemAggregate.objects.filter(item=second).exists()
    # The delay passes: the last job is older than the debounce, the skipped request is due.
    Job.objects.filter(kind="aggregation").update(created_at=timezone.now() - timedelta(minutes=5))
    aggregation._due_in_process.update(dict.fromkeys(aggregation._due_in_process, 0.0))
    assert clients["a1"].get("/api/projects/").status_code == 200
    assert ItemAggregate.objects.filter(item=second, method="majority", label=label).exists()
