"""Curation goes through the decision ledger (docs/decisions.md "Curation"), on the real
stack and through HTTP where a person acts: a near-duplicate removal, the back-translation
filter and an author's withdrawal each leave a decision in the item's history with who and
why; an adjudicated item is not removed; a restore brings back the decision that stood
before the removal; and the features together — adjudicate, remove, restore, aggregate,
export — never change a gold silently. Texts are our own."""

import pytest

from tests.api.test_decision_ledger import export_records, history, import_rows, run_aggregation
from tests.api.test_quality import label_everything, project_with_members

pytestmark = pytest.mark.django_db

SLUG = "he-ledger"  # the helpers of test_decision_ledger read this project

# Pairs of copies: the later item of each is the near-duplicate. Each pair has words of
# its own, so that only the copies are near each other.
TEXTS = {
    "a": ("החתול ישן על הספה בבוקר", "החתול נח"),
    "c": ("הרכבת יצאה מתחנת חיפה באיחור", "הרכבת איחרה"),
    "e": ("הגשם ירד כל הלילה בירושלים", "היה גשום"),
}


def rows(keys) -> list[dict]:
    """Each key's pair; a key with a trailing "2" is the copy of its first letter's pair.
    Every item its own group: copies of different questions."""
    return [
        {"id": key, "premise": TEXTS[key[0]][0], "hypothesis": TEXTS[key[0]][1], "group": f"g-{key}"} for key in keys
    ]


def item(external_id: str):
    from annotation.models import Item

    return Item.objects.get(project__slug=SLUG, external_id=external_id)


def run_duplicates(client) -> dict:
    from annotation.models import Job
    from annotation.tasks import run_job

    response = client.post(f"/api/projects/{SLUG}/duplicates/", {}, format="json")
    assert response.status_code == 202, response.content
    run_job(response.json()["job"])
    job = Job.objects.get(pk=response.json()["job"])
    assert job.status == "done", job.error
    return job.result


def pair_of(client, later: str) -> int:
    pairs = client.get(f"/api/projects/{SLUG}/duplicates/").json()["results"]
    return next(pair["id"] for pair in pairs if pair["b"]["external_id"] == later)


def outcome(external_id: str) -> tuple[str, str]:
    found = item(external_id)
    return found.status, found.gold_label


@pytest.fixture
def curated(make_user, client_for):
    """2 of 3 decide; a and its copy a2 labelled (a agreed, a2 torn then adjudicated),
    c and c2 agreed by the round's rule, e and e2 imported afterwards and left open."""
    project, people, clients = project_with_members(
        make_user, client_for, slug=SLUG, name="אוצרות", kind="nli_relabel",
        settings={"consensus_k": 2, "consensus_n": 3},
    )  # fmt: skip
    import_rows(clients["sup"], SLUG, rows(["a", "a2", "c", "c2"]))
    agreed = {"a1": "neutral", "a2": "neutral", "a3": "neutral"}
    torn = {"a1": "entailment", "a2": "neutral", "a3": "contradiction"}
    label_everything(clients, SLUG, {"a": agreed, "a2": torn, "c": agreed, "c2": agreed})
    from annotation.models import Item
    from annotation.services.consensus import consensus_compute_for_item

    for pk in Item.objects.filter(project=project, status="complete").values_list("pk", flat=True):
        consensus_compute_for_item(pk)
    assert outcome("a2") == ("removed", "")  # failed, no author: into the adjudication queue
    adjudicated = clients["sup"].post(
        f"/api/items/{item('a2').pk}/adjudicate/", {"label": "entailment", "comment": "הכרעה"}, format="json"
    )
    assert adjudicated.status_code == 201, adjudicated.content
    assert outcome("a2") == ("accepted", "entailment") and outcome("c2") == ("accepted", "neutral")
    import_rows(clients["sup"], SLUG, rows(["e", "e2"]))
    assert run_duplicates(clients["sup"])["pairs"] == 3
    return project, people, clients


def test_a_near_duplicate_removal_is_a_decision_and_a_restore_brings_back_the_one_before(curated):
    from annotation.models import AuditEntry

    project, people, clients = curated
    sup = clients["sup"]
    removed = sup.post(f"/api/projects/{SLUG}/duplicates/{pair_of(sup, 'c2')}/", {"decision": "remove"}, format="json")
    assert removed.status_code == 200, removed.content
    # Removed, with its gold kept; the history says who removed it and why.
    assert outcome("c2") == ("removed", "neutral")
    last = history(sup, "c2")[-1]
    assert (last["method"], last["by"], last["status"], last["value"]) == (
        "near_duplicate",
        "sup",
        "removed",
        "neutral",
    )
    assert "near-duplicate of c" in last["comment"]
    assert AuditEntry.objects.filter(project=project, action="duplicate_remove", actor=people["sup"]).exists()
    # Reviewers see the pseudonym, not the name.
    assert history(clients["rev"], "c2")[-1]["by"] not in ("sup", "", None)
    # No aggregation run brings it back or changes its gold.
    run_aggregation(project)
    assert outcome("c2") == ("removed", "neutral")
    # Keep on the pair cancels the removal: the round rule's decision stands again.
    kept = sup.post(f"/api/projects/{SLUG}/duplicates/{pair_of(sup, 'c2')}/", {"decision": "keep"}, format="json")
    assert kept.status_code == 200, kept.content
    assert outcome("c2") == ("accepted", "neutral")
    assert [row["method"] for row in history(sup, "c2")] == ["k_of_n", "near_duplicate", "restore"]
    assert AuditEntry.objects.filter(project=project, action="duplicate_restore").exists()
    run_aggregation(project)
    record = export_records(sup)["c2"]
    assert (record["status"], record["gold_label"], record["decided_by"]) == ("accepted", "neutral", "k_of_n")


def test_an_adjudicated_item_is_not_removed_as_a_near_duplicate(curated):
    project, _people, clients = curated
    sup = clients["sup"]
    refused = sup.post(f"/api/projects/{SLUG}/duplicates/{pair_of(sup, 'a2')}/", {"decision": "remove"}, format="json")
    assert refused.status_code == 409 and refused.json()["errors"][0]["field"] == "decision"
    assert outcome("a2") == ("accepted", "entailment")
    # Remove-all passes over it and counts only what it removed (c2 and the open e2).
    assert sup.post(f"/api/projects/{SLUG}/duplicates/remove-all/").json() == {"pairs": 3, "removed": 2}
    assert outcome("a2") == ("accepted", "entailment")
    assert [row["method"] for row in history(sup, "a2")] == ["k_of_n", "adjudication"]
    run_aggregation(project)
    record = export_records(sup)["a2"]
    assert (record["status"], record["gold_label"], record["decided_by"]) == ("accepted", "entailment", "adjudication")


def test_adjudicate_remove_restore_aggregate_export_never_change_a_gold_silently(curated):
    from annotation.models import AuditEntry, Decision

    project, _people, clients = curated
    sup = clients["sup"]
    before = {key: outcome(key) for key in ("a", "a2", "c", "c2", "e", "e2")}
    assert sup.post(f"/api/projects/{SLUG}/duplicates/remove-all/").status_code == 200
    assert outcome("c2") == ("removed", "neutral") and outcome("e2") == ("removed", "")
    run_aggregation(project)
    ids = [item("c2").pk, item("e2").pk, item("a2").pk]
    restored = sup.post(f"/api/projects/{SLUG}/duplicates/restore/", {"items": ids[:2]}, format="json")
    assert restored.status_code == 200 and restored.json() == {"restored": 2}
    # The removal of an undecided item gives back the round status it had (open).
    assert {key: outcome(key) for key in before} == before
    assert AuditEntry.objects.filter(project=project, action="duplicate_restore").exists()
    # Every change is in the ledger: a gold differs from the export only through a decision.
    run_aggregation(project)
    records = export_records(sup)
    for key, (status, gold) in before.items():
        assert (records[key]["status"], records[key]["gold_label"] or "") == (status, gold), key
    assert [row["method"] for row in history(sup, "e2")] == ["near_duplicate", "restore"]
    # After the restore the open item is decided by its round as if never removed.
    label_everything(clients, SLUG, {key: dict.fromkeys(("a1", "a2", "a3"), "contradiction") for key in ("e", "e2")})
    assert outcome("e2")[0] in ("complete", "accepted")
    # An item restored twice is not: the restore endpoint names it (its removal is cancelled).
    again = sup.post(f"/api/projects/{SLUG}/duplicates/restore/", {"items": [ids[0]]}, format="json")
    assert again.status_code == 400 and again.json()["errors"][0]["field"] == "items[0]"
    assert Decision.objects.filter(item_id=ids[0], method="restore").count() == 1


# --- the back-translation filter ----------------------------------------------------------

from tests.kinds.translation.test_back_translation_filter import filtered  # noqa: E402,F401  (a fixture)


def bt_history(client, external_id: str) -> list[dict]:
    from annotation.models import Item

    response = client.get(f"/api/items/{Item.objects.get(project__slug='bt', external_id=external_id).pk}/decisions/")
    assert response.status_code == 200, response.content
    return response.json()


def test_the_filter_removes_through_the_ledger_and_a_restore_cancels_it(filtered, django_capture_on_commit_callbacks):
    from annotation.models import AuditEntry, Item

    sup = filtered["sup"]
    [removal] = bt_history(sup, "x3")
    assert (removal["method"], removal["status"], removal["job"], removal["by"]) == (
        "back_translation_filter",
        "removed",
        filtered["job"]["id"],
        None,
    )
    assert "below 0.75" in removal["comment"]
    x3 = Item.objects.get(project__slug="bt", external_id="x3")
    assert sup.post("/api/projects/bt/back-translation/restore/", {"items": [x3.pk]}, format="json").status_code == 200
    assert [(row["method"], row["status"], row["by"]) for row in bt_history(sup, "x3")] == [
        ("back_translation_filter", "removed", None),
        ("restore", "open", "sup"),
    ]
    assert AuditEntry.objects.filter(action="back_translation_restore", project__slug="bt").exists()
    # A rerun keeps the restore and does not remove x3 again; x4 stays removed, once.
    with django_capture_on_commit_callbacks(execute=True):
        assert sup.post("/api/projects/bt/back-translation/").status_code == 202
    assert [row["method"] for row in bt_history(sup, "x3")] == ["back_translation_filter", "restore"]
    assert [row["method"] for row in bt_history(sup, "x4")] == ["back_translation_filter"]
    # With no released system the filter removes nothing: its rerun cancels its own removals.
    project = x3.project
    project.settings = {**project.settings, "released_system": ""}
    project.save(update_fields=["settings"])
    with django_capture_on_commit_callbacks(execute=True):
        assert sup.post("/api/projects/bt/back-translation/").status_code == 202
    assert Item.objects.get(project__slug="bt", external_id="x4").status == "open"
    assert [row["method"] for row in bt_history(sup, "x4")] == ["back_translation_filter", "restore"]


def test_the_filter_does_not_remove_an_adjudicated_item(make_user, client_for, monkeypatch, settings):
    """The translation kinds have no adjudication page; an adjudication recorded in the
    ledger (as the adjudication service records it) is enough for the rule."""
    from annotation.kinds.translation import back_translation
    from annotation.models import Item, Project
    from annotation.services.decisions import ADJUDICATION, RANK_ADJUDICATION, decision_record
    from tests.kinds.translation.test_api import import_rows, stub_encoder
    from tests.kinds.translation.test_back_translation_filter import with_backs

    root = client_for(make_user("root", staff=True))
    made = root.post(
        "/api/projects/",
        {"slug": "bt2", "name": "BT2", "kind": "translation_rating", "language": "he",
         "settings": {"released_system": "amazon"}},
        format="json",
    )  # fmt: skip
    assert made.status_code == 201, made.content
    import_rows(root, [with_backs(1, amazon="premise"), with_backs(2, amazon="premise")], slug="bt2")
    kept, removed = Item.objects.filter(project__slug="bt2").order_by("position")
    decision_record(item=kept, method=ADJUDICATION, rank=RANK_ADJUDICATION, value="x", status="accepted")
    result = back_translation.back_translation_compute(Project.objects.get(slug="bt2"), encoder=stub_encoder)
    assert result["removed"] == 1
    kept.refresh_from_db(), removed.refresh_from_db()
    assert (kept.status, kept.gold_label, removed.status) == ("accepted", "x", "removed")
    assert "removed" not in kept.computed["back_translation"]


# --- an author's withdrawal and revision ----------------------------------------------------


def test_a_withdrawal_and_a_revision_are_in_the_items_history(make_user):
    from annotation.kinds.nli.revisions import item_revise
    from annotation.models import Item, Membership, Project
    from annotation.services.decisions import RANK_ROUND_RULE, decision_history, decision_record
    from annotation.services.projects import project_create

    root, author = make_user("root", staff=True), make_user("author")
    project = project_create(actor=root, slug="rev", name="Rev", kind="nli_relabel", language="he")
    Membership.objects.create(project=project, user=author, role="annotator", status="active")
    made = [
        Item.objects.create(project=project, external_id=key, payload={"premise": "הנחה", "hypothesis": key},
                            reference_label="neutral", author=author)
        for key in ("w", "r")
    ]  # fmt: skip
    for item in made:
        decision_record(item=item, method="k_of_n", rank=RANK_ROUND_RULE, value=None, status="needs_revision")
    item_revise(user=author, item_id=made[0].pk, changes={"withdraw": True})
    item_revise(user=author, item_id=made[1].pk, changes={"hypothesis": "השערה חדשה"})
    withdrawn, revised = (Item.objects.get(pk=item.pk) for item in made)
    assert withdrawn.status == "removed"
    assert [(d.method, d.status, d.decided_by_id) for d in decision_history(withdrawn)] == [
        ("k_of_n", "needs_revision", None),
        ("withdrawn", "removed", author.pk),
    ]
    assert (revised.status, revised.round) == ("open", 2)
    assert [(d.method, d.round, d.status) for d in decision_history(revised)] == [
        ("k_of_n", 1, "needs_revision"),
        ("revision", 2, "open"),
    ]


# --- bulk stays bulk ----------------------------------------------------------------------


def removing_all(make_user, slug: str, pairs: int) -> int:
    """Queries of `duplicates_remove_all` and of restoring every item it removed, for a
    project with `pairs` undecided pairs."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from annotation.models import DuplicatePair, Item, Membership
    from annotation.release.duplicates import duplicates_remove_all, duplicates_restore
    from annotation.services.projects import project_create

    root = make_user(f"root-{slug}", staff=True)
    project = project_create(actor=root, slug=slug, name=slug, kind="nli_relabel", language="he")
    Membership.objects.get_or_create(project=project, user=root, defaults={"role": "supervisor", "status": "active"})
    items = Item.objects.bulk_create(
        Item(project=project, external_id=f"i{n}", payload={"premise": "הנחה", "hypothesis": f"{n}"}, position=n)
        for n in range(2 * pairs)
    )
    now = timezone.now()
    DuplicatePair.objects.bulk_create(
        DuplicatePair(project=project, item_a=items[n], item_b=items[pairs + n], premise_similarity=1.0,
                      hypothesis_similarity=1.0, representation="bow", threshold=0.8, found_at=now)
        for n in range(pairs)
    )  # fmt: skip
    with CaptureQueriesContext(connection) as removing:
        assert duplicates_remove_all(user=root, slug=slug) == {"pairs": pairs, "removed": pairs}
    with CaptureQueriesContext(connection) as restoring:
        duplicates_restore(user=root, slug=slug, item_ids=[item.pk for item in items[pairs:]])
    assert Item.objects.filter(project=project, status="open").count() == 2 * pairs
    return len(removing.captured_queries) + len(restoring.captured_queries)


def test_removing_and_restoring_many_near_duplicates_takes_the_same_queries_as_a_few(make_user):
    assert removing_all(make_user, "few", 3) == removing_all(make_user, "many", 300)
